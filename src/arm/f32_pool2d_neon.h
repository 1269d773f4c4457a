// The pooling microkernels. A window is separable, so an output row is made in two
// passes: the vertical pass reduces the window's input rows column by column into a
// row buffer that carries the horizontal padding as the reduction's identity (-inf
// for max, 0 for sums), and the horizontal pass reduces K neighbouring (stride 1) or
// every other (stride 2, vld2q deinterleaves) buffer values, 4 outputs per step. The
// padding never needs a scalar edge path.
#pragma once
#include <arm_neon.h>

#include <cmath>
#include <cstddef>

#include "arm/neon_math.h"

namespace kestrel::kernels::arm {

// Max propagates NaN as the reference does (a NaN input must not become a plausible
// value): FMAX returns NaN when either operand is NaN.
struct MaxPoolQ {
  static constexpr float kIdentity = -INFINITY;
  static float32x4_t apply(float32x4_t a, float32x4_t b) { return vmaxq_f32(a, b); }
};
struct SumPoolQ {
  static constexpr float kIdentity = 0.f;
  static float32x4_t apply(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }
};

// buf[i] = Op over `rows` rows (row_stride apart) of src[i], for i < n.
template <class Op>
inline void pool_vertical_q(const float* src, size_t row_stride, int rows, float* buf, int n) {
  const float32x4_t id = vdupq_n_f32(Op::kIdentity);
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    float32x4_t a0 = id, a1 = id, a2 = id, a3 = id;
    const float* p = src + i;
    for (int r = 0; r < rows; ++r, p += row_stride) {
      a0 = Op::apply(a0, vld1q_f32(p));
      a1 = Op::apply(a1, vld1q_f32(p + 4));
      a2 = Op::apply(a2, vld1q_f32(p + 8));
      a3 = Op::apply(a3, vld1q_f32(p + 12));
    }
    vst1q_f32(buf + i, a0);
    vst1q_f32(buf + i + 4, a1);
    vst1q_f32(buf + i + 8, a2);
    vst1q_f32(buf + i + 12, a3);
  }
  for (; i < n; i += 4) {
    const size_t left = static_cast<size_t>(n - i);
    float32x4_t a = id;
    const float* p = src + i;
    for (int r = 0; r < rows; ++r, p += row_stride) a = Op::apply(a, left >= 4 ? vld1q_f32(p) : load_partial(p, left));
    // The lanes past n are written (the buffer has room) and overwritten by the caller.
    vst1q_f32(buf + i, a);
  }
}

// Outputs j..j+3 of a row from buf + j * SW: Op over the KW window values each,
// left to right. KW == 0 takes the width from `kw` at run time.
template <class Op, int KW, int SW>
inline float32x4_t pool_horizontal4_q(const float* buf, int kw) {
  static_assert(SW == 1 || SW == 2, "stride 1 or 2");
  const int k = KW > 0 ? KW : kw;
  if constexpr (SW == 1) {
    float32x4_t acc = vld1q_f32(buf);
    for (int j = 1; j < k; ++j) acc = Op::apply(acc, vld1q_f32(buf + j));
    return acc;
  } else {
    // val[0] = buf[j, j+2, j+4, j+6] and val[1] = buf[j+1, ...]: taps j and j+1 of
    // four windows two apart.
    float32x4x2_t v = vld2q_f32(buf);
    float32x4_t acc = v.val[0];
    if (k > 1) acc = Op::apply(acc, v.val[1]);
    for (int j = 2; j < k; j += 2) {
      v = vld2q_f32(buf + j);
      acc = Op::apply(acc, v.val[0]);
      if (j + 1 < k) acc = Op::apply(acc, v.val[1]);
    }
    return acc;
  }
}

}  // namespace kestrel::kernels::arm
