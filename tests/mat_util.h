// Mat helpers without doctest, shared by the doctest suites (test_util.h) and the
// stand-alone reliability programs (tests/reliability).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

#include "kestrel/net.h"

namespace kestrel_test {

// Uniform random values in [-1, 1) from `seed` over the real values of m.
inline void fill_uniform(kestrel::Mat& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int q = 0; q < m.c; ++q) {
    float* p = m.channel(q);
    for (size_t i = 0; i < size_t(m.w) * m.h * m.d * m.elempack; ++i) p[i] = dist(rng);
  }
}

// A Mat of shape s filled by fill_uniform; aborts if it cannot be allocated (the
// stand-alone programs have no test framework to report through).
inline kestrel::Mat random_mat_or_abort(const kestrel::Shape& s, uint32_t seed) {
  kestrel::Mat m;
  if (!m.create(s)) std::abort();
  fill_uniform(m, seed);
  return m;
}

// Bitwise equality of the real values (channel padding ignored).
inline bool same_bits(const kestrel::Mat& a, const kestrel::Mat& b) {
  if (a.shape() != b.shape()) return false;
  const size_t plane = size_t(a.w) * a.h * a.d * a.elempack;
  for (int q = 0; q < a.c; ++q) {
    if (std::memcmp(a.channel(q), b.channel(q), plane * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace kestrel_test
