// Mat <-> .npy helpers shared by the suites that compare Kestrel with reference
// outputs written by Python (tests/torch, tests/caffe).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kestrel/mat.h"
#include "npy.h"

namespace kt {

inline NpyArray load_npy(const std::string& path) {
  NpyArray a;
  const std::string err = read_npy(path, &a);
  REQUIRE_MESSAGE(err.empty(), err);
  return a;
}

// A Mat's dims outermost first, as NumPy writes them without the batch.
inline std::vector<int> dims_of(const kestrel::Mat& m) {
  switch (m.dims) {
    case 1: return {m.w};
    case 2: return {m.h, m.w};
    case 3: return {m.channels(), m.h, m.w};
    default: return {m.channels(), m.d, m.h, m.w};
  }
}

inline std::string dims_string(const std::vector<int>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

inline kestrel::Mat to_mat(const NpyArray& a) {
  const std::vector<int>& s = a.shape;
  kestrel::Shape shape;
  switch (s.size()) {
    case 1: shape = kestrel::Shape::make1(s[0]); break;
    case 2: shape = kestrel::Shape::make2(s[1], s[0]); break;
    case 3: shape = kestrel::Shape::make3(s[2], s[1], s[0]); break;
    default: shape = kestrel::Shape::make4(s[3], s[2], s[1], s[0]); break;
  }
  kestrel::Mat m;
  REQUIRE(m.create(shape));
  const size_t plane = size_t(m.w) * m.h * m.d;
  for (int q = 0; q < m.c; ++q) std::copy_n(a.data.data() + plane * q, plane, m.channel(q));
  return m;
}

// The real values in logical order (channel padding skipped, packing undone).
inline std::vector<float> values_of(const kestrel::Mat& in) {
  const kestrel::Mat m = in.elempack == 1 ? in : kestrel::convert_packing(in, 1);
  std::vector<float> v;
  const size_t plane = size_t(m.w) * m.h * m.d;
  for (int q = 0; q < m.c; ++q) v.insert(v.end(), m.channel(q), m.channel(q) + plane);
  return v;
}

}  // namespace kt
