// Shared by the kernel-family tests (tests/test_kernels_*.cpp): every kernel in a
// registry that this CPU (and KESTREL_ISA) allows is run on seeded random geometries
// and compared with the family's reference. Operands are real Mats (64-byte-aligned
// channels), outputs are pre-filled with a sentinel so writes outside the real
// values are caught.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "kestrel/mat.h"

namespace kt {

// Thread counts every kernel runs with (the "1 and several"; 4 exceeds this
// machine's 2 cores on purpose: the partition must not change the result).
inline const std::vector<int>& kernel_thread_counts() {
  static const std::vector<int> t = {1, 4};
  return t;
}

constexpr float kSentinel = -12345.f;

inline void fill_random(kestrel::Mat& m, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  const size_t plane = size_t(m.w) * m.h * m.d * m.elempack;
  for (int q = 0; q < m.c; ++q) {
    float* p = m.channel(q);
    for (size_t i = 0; i < plane; ++i) p[i] = dist(rng);
  }
}

inline std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Every float of the allocation (channel padding included) set to kSentinel.
inline void fill_sentinel(kestrel::Mat& m) {
  const size_t n = m.dims >= 3 ? m.cstep * m.c : size_t(m.w) * m.h * m.elempack;
  std::fill(m.data, m.data + n, kSentinel);
}

// Channel padding still holding kSentinel (nothing written past a channel's values).
inline bool padding_untouched(const kestrel::Mat& m) {
  if (m.dims < 3) return true;
  const size_t plane = size_t(m.w) * m.h * m.d * m.elempack;
  for (int q = 0; q < m.c; ++q) {
    const float* p = m.channel(q);
    for (size_t i = plane; i < m.cstep; ++i) {
      if (p[i] != kSentinel) return false;
    }
  }
  return true;
}

// max |got - ref| / max(1, max |ref|) over the real values; NaN anywhere gives +inf.
inline double relative_error(const kestrel::Mat& got, const kestrel::Mat& ref) {
  const size_t plane = size_t(ref.w) * ref.h * ref.d * ref.elempack;
  double max_ref = 0, max_diff = 0;
  for (int q = 0; q < ref.c; ++q) {
    const float* g = got.channel(q);
    const float* r = ref.channel(q);
    for (size_t i = 0; i < plane; ++i) {
      if (std::isnan(g[i]) != std::isnan(r[i])) return INFINITY;
      max_ref = std::max(max_ref, std::fabs(double(r[i])));
      max_diff = std::max(max_diff, std::fabs(double(g[i]) - double(r[i])));
    }
  }
  return max_diff / std::max(1.0, max_ref);
}

// Scratch for one kernel run: shared + per-thread regions, as the Extractor lays out.
struct KernelScratch {
  std::vector<float> storage;
  kestrel::kernels::KernelContext make(size_t shared_bytes, size_t per_thread_bytes, int threads) {
    const size_t a = kestrel::kAlignment;
    const size_t shared = (shared_bytes + a - 1) / a * a, stride = (per_thread_bytes + a - 1) / a * a;
    storage.assign((shared + stride * threads + 2 * a) / sizeof(float), 0.f);
    char* base = reinterpret_cast<char*>(storage.data());
    base += (a - reinterpret_cast<uintptr_t>(base) % a) % a;
    kestrel::kernels::KernelContext ctx;
    ctx.num_threads = threads;
    ctx.workspace = base;
    ctx.thread_scratch = base + shared;
    ctx.thread_scratch_stride = stride;
    return ctx;
  }
};

// Which kernels of a registry run here: those the active ISA allows.
template <class K>
std::vector<const K*> runnable_kernels(const std::vector<const K*>& all) {
  std::vector<const K*> r;
  for (const K* k : all) {
    if (kestrel::kernels::isa_allows(kestrel::kernels::active_isa(), k->isa)) r.push_back(k);
  }
  return r;
}

}  // namespace kt
