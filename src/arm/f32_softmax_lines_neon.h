// Softmax microkernels for the two line shapes that the general ones of
// f32_softmax_neon.h serve badly:
// - softmax_short_line_q<V, Log>: one contiguous line of 4V - 3 to 4V values (4 <= n
//   <= 4V), held in V registers from the first load to the last store: the last
//   vector starts at n - 4 and overlaps the one before it, so there is no partial
//   load or store (SSD's [priors][21 classes] confidences: 1917 lines of 21);
// - softmax_strided_line_q<Log>: one line whose values are `stride` apart with
//   nothing beside them (the channels of a [C][1][1] map, 16 floats apart), gathered
//   four at a time into one vector with lane loads.
// Both read every input of a vector before writing its outputs: in may be out.
#pragma once
#include <arm_neon.h>

#include <cmath>
#include <cstddef>

#include "arm/f32_softmax_neon.h"
#include "arm/neon_math.h"

namespace kestrel::kernels::arm {

// All-ones in the lanes at or above k (k <= 4), zeros below.
inline uint32x4_t lanes_from(size_t k) {
  const uint32_t idx[4] = {0, 1, 2, 3};
  return vcgeq_u32(vld1q_u32(idx), vdupq_n_u32(static_cast<uint32_t>(k)));
}

template <int V, bool Log>
inline void softmax_short_line_q(const float* src, float* dst, size_t n) {
  static_assert(V >= 1, "at least one vector");
  const auto at = [n](int v) { return v + 1 < V ? static_cast<size_t>(v) * 4 : n - 4; };
  float32x4_t x[V];
  for (int v = 0; v < V; ++v) x[v] = vld1q_f32(src + at(v));
  // Max, ignoring NaN as the reference's fmax does; overlapping lanes change nothing.
  float32x4_t mx = x[0];
  for (int v = 1; v < V; ++v) mx = vmaxnmq_f32(mx, x[v]);
  const float m = vmaxnmvq_f32(mx);
  const float32x4_t mv = vdupq_n_f32(m);

  float32x4_t e[V];
  for (int v = 0; v < V; ++v) e[v] = exp_nonpositive_ps(vsubq_f32(x[v], mv));
  // The last vector's first 4V - n lanes repeat values of the one before it.
  float32x4_t s = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e[V - 1]), lanes_from(4 * V - n)));
  for (int v = 0; v + 1 < V; ++v) s = vaddq_f32(s, e[v]);
  const float sum = vaddvq_f32(s);

  if (Log) {
    const float32x4_t shift = vdupq_n_f32(m + std::log(sum));
    for (int v = 0; v < V; ++v) vst1q_f32(dst + at(v), vsubq_f32(x[v], shift));
  } else {
    // The overlapping lanes store the same bits twice: the exp is lane-wise.
    const float32x4_t inv = vdupq_n_f32(1.f / sum);
    for (int v = 0; v < V; ++v) vst1q_f32(dst + at(v), vmulq_f32(e[v], inv));
  }
}

inline float32x4_t gather4(const float* p, size_t stride) {
  float32x4_t v = vld1q_dup_f32(p);
  v = vld1q_lane_f32(p + stride, v, 1);
  v = vld1q_lane_f32(p + 2 * stride, v, 2);
  return vld1q_lane_f32(p + 3 * stride, v, 3);
}

inline void scatter4(float* p, size_t stride, float32x4_t v) {
  vst1q_lane_f32(p, v, 0);
  vst1q_lane_f32(p + stride, v, 1);
  vst1q_lane_f32(p + 2 * stride, v, 2);
  vst1q_lane_f32(p + 3 * stride, v, 3);
}

template <bool Log>
inline void softmax_strided_line_q(const float* src, size_t is, float* dst, size_t os, size_t n) {
  const size_t n4 = n & ~size_t(3), r = n - n4;
  float32x4_t mx = vdupq_n_f32(-INFINITY);
  for (size_t i = 0; i < n4; i += 4) mx = vmaxnmq_f32(mx, gather4(src + i * is, is));
  float m = vmaxnmvq_f32(mx);
  for (size_t i = n4; i < n; ++i) m = std::fmax(m, src[i * is]);
  const float32x4_t mv = vdupq_n_f32(m);

  float32x4_t s = vdupq_n_f32(0.f);
  for (size_t i = 0; i < n4; i += 4) {
    const float32x4_t e = exp_nonpositive_ps(vsubq_f32(gather4(src + i * is, is), mv));
    if (!Log) scatter4(dst + i * os, os, e);
    s = vaddq_f32(s, e);
  }
  if (r > 0) {
    float t[4] = {0.f, 0.f, 0.f, 0.f};
    for (size_t k = 0; k < r; ++k) t[k] = src[(n4 + k) * is];
    // Lanes past the line hold exp(0 - max): keep them out of the sum.
    const float32x4_t e = vreinterpretq_f32_u32(
        vandq_u32(vreinterpretq_u32_f32(exp_nonpositive_ps(vsubq_f32(vld1q_f32(t), mv))), lanes_below(r)));
    if (!Log) {
      vst1q_f32(t, e);
      for (size_t k = 0; k < r; ++k) dst[(n4 + k) * os] = t[k];
    }
    s = vaddq_f32(s, e);
  }
  const float sum = vaddvq_f32(s);

  if (Log) {
    const float shift = m + std::log(sum);
    const float32x4_t sv = vdupq_n_f32(shift);
    for (size_t i = 0; i < n4; i += 4) scatter4(dst + i * os, os, vsubq_f32(gather4(src + i * is, is), sv));
    for (size_t i = n4; i < n; ++i) dst[i * os] = src[i * is] - shift;
  } else {
    const float inv = 1.f / sum;
    const float32x4_t iv = vdupq_n_f32(inv);
    for (size_t i = 0; i < n4; i += 4) scatter4(dst + i * os, os, vmulq_f32(gather4(dst + i * os, os), iv));
    for (size_t i = n4; i < n; ++i) dst[i * os] *= inv;
  }
}

}  // namespace kestrel::kernels::arm
