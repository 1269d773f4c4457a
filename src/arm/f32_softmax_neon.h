// The softmax microkernels, both three passes (max, exp and sum, scale) with
// exp_nonpositive_ps (neon_math.h's exp_ps for the x - max <= 0 of a softmax):
// - softmax_line_q: one line of contiguous values (the axis is the innermost),
//   vectorised along the line with 4 accumulators per reduction;
// - softmax_columns_q: NV * 4 neighbouring lines whose values are `stride` apart
//   (the axis is an outer one), vectorised across the lines so every load is
//   contiguous and each lane is one line's own sequential reduction.
// Inputs are read before the outputs at the same place are written: in may be out.
#pragma once
#include <arm_neon.h>

#include <cmath>
#include <cstddef>

#include "arm/neon_math.h"

namespace kestrel::kernels::arm {

// exp(x) for the x - max of a softmax (x <= 0 or NaN): exp_ps with one 2^n factor
// instead of two, x clamped at -87.3 (2^n stays normal) instead of -104. Where exp(x)
// is a normal float the bits are exp_ps's (the scaling by a power of 2 is exact);
// below e^-87.3 it gives about 1.2e-38 rather than denormals or 0, nothing against a
// sum of at least 1.
inline float32x4_t exp_nonpositive_ps(float32x4_t x) {
  const ExpParts e = exp_parts_ps(vmaxq_f32(x, vdupq_n_f32(-87.3f)));
  const float32x4_t s = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(e.n), vdupq_n_s32(127)), 23));
  return vfmaq_f32(s, e.em1, s);
}

// All-ones in the lanes below n (n <= 4), zeros above.
inline uint32x4_t lanes_below(size_t n) {
  const uint32_t idx[4] = {0, 1, 2, 3};
  return vcltq_u32(vld1q_u32(idx), vdupq_n_u32(static_cast<uint32_t>(n)));
}

inline void softmax_line_q(const float* src, float* dst, size_t n, bool log) {
  // Max, ignoring NaN as the reference's fmax does.
  float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = vmaxnmq_f32(m0, vld1q_f32(src + i));
    m1 = vmaxnmq_f32(m1, vld1q_f32(src + i + 4));
    m2 = vmaxnmq_f32(m2, vld1q_f32(src + i + 8));
    m3 = vmaxnmq_f32(m3, vld1q_f32(src + i + 12));
  }
  for (; i + 4 <= n; i += 4) m0 = vmaxnmq_f32(m0, vld1q_f32(src + i));
  float m = vmaxnmvq_f32(vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3)));
  for (; i < n; ++i) m = std::fmax(m, src[i]);
  const float32x4_t mv = vdupq_n_f32(m);

  // exp(x - max), stored unless LogSoftmax, and summed.
  float32x4_t s0 = vdupq_n_f32(0.f), s1 = s0, s2 = s0, s3 = s0;
  for (i = 0; i + 16 <= n; i += 16) {
    const float32x4_t e0 = exp_nonpositive_ps(vsubq_f32(vld1q_f32(src + i), mv));
    const float32x4_t e1 = exp_nonpositive_ps(vsubq_f32(vld1q_f32(src + i + 4), mv));
    const float32x4_t e2 = exp_nonpositive_ps(vsubq_f32(vld1q_f32(src + i + 8), mv));
    const float32x4_t e3 = exp_nonpositive_ps(vsubq_f32(vld1q_f32(src + i + 12), mv));
    if (!log) {
      vst1q_f32(dst + i, e0);
      vst1q_f32(dst + i + 4, e1);
      vst1q_f32(dst + i + 8, e2);
      vst1q_f32(dst + i + 12, e3);
    }
    s0 = vaddq_f32(s0, e0);
    s1 = vaddq_f32(s1, e1);
    s2 = vaddq_f32(s2, e2);
    s3 = vaddq_f32(s3, e3);
  }
  for (; i < n; i += 4) {
    const size_t r = n - i < 4 ? n - i : 4;
    const float32x4_t x = r == 4 ? vld1q_f32(src + i) : load_partial(src + i, r);
    // Lanes past the line hold exp(0 - max): keep them out of the sum.
    const float32x4_t e = vreinterpretq_f32_u32(
        vandq_u32(vreinterpretq_u32_f32(exp_nonpositive_ps(vsubq_f32(x, mv))), lanes_below(r)));
    if (!log) store_partial(dst + i, e, r);
    s0 = vaddq_f32(s0, e);
  }
  const float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));

  if (log) {
    const float32x4_t shift = vdupq_n_f32(m + std::log(sum));
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(dst + i, vsubq_f32(vld1q_f32(src + i), shift));
    if (i < n) store_partial(dst + i, vsubq_f32(load_partial(src + i, n - i), shift), n - i);
  } else {
    const float32x4_t inv = vdupq_n_f32(1.f / sum);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(dst + i, vmulq_f32(vld1q_f32(dst + i), inv));
    if (i < n) store_partial(dst + i, vmulq_f32(load_partial(dst + i, n - i), inv), n - i);
  }
}

// Lines j .. j + 4 NV - 1 (only the first `cols` of them are real) of `len` values
// each, value i of line j at src[i * istride + j].
template <int NV>
inline void softmax_columns_q(const float* src, size_t istride, float* dst, size_t ostride, int len, size_t cols,
                              bool log) {
  const auto load = [&](const float* p, int v) {
    const size_t first = static_cast<size_t>(v) * 4;
    if (first + 4 <= cols) return vld1q_f32(p + first);
    return first < cols ? load_partial(p + first, cols - first) : vdupq_n_f32(0.f);
  };
  const auto store = [&](float* p, int v, float32x4_t x) {
    const size_t first = static_cast<size_t>(v) * 4;
    if (first + 4 <= cols) vst1q_f32(p + first, x);
    else if (first < cols) store_partial(p + first, x, cols - first);
  };
  float32x4_t m[NV], s[NV];
  for (int v = 0; v < NV; ++v) m[v] = vdupq_n_f32(-INFINITY), s[v] = vdupq_n_f32(0.f);
  for (int i = 0; i < len; ++i) {
    const float* p = src + static_cast<size_t>(i) * istride;
    for (int v = 0; v < NV; ++v) m[v] = vmaxnmq_f32(m[v], load(p, v));
  }
  for (int i = 0; i < len; ++i) {
    const float* p = src + static_cast<size_t>(i) * istride;
    float* q = dst + static_cast<size_t>(i) * ostride;
    for (int v = 0; v < NV; ++v) {
      const float32x4_t e = exp_nonpositive_ps(vsubq_f32(load(p, v), m[v]));
      if (!log) store(q, v, e);
      s[v] = vaddq_f32(s[v], e);
    }
  }
  if (log) {
    float32x4_t shift[NV];
    for (int v = 0; v < NV; ++v) {
      // log of each lane's sum, by the scalar std::log (once per line).
      float sum[4], mm[4];
      vst1q_f32(sum, s[v]);
      vst1q_f32(mm, m[v]);
      for (int l = 0; l < 4; ++l) sum[l] = mm[l] + std::log(sum[l]);
      shift[v] = vld1q_f32(sum);
    }
    for (int i = 0; i < len; ++i) {
      const float* p = src + static_cast<size_t>(i) * istride;
      float* q = dst + static_cast<size_t>(i) * ostride;
      for (int v = 0; v < NV; ++v) store(q, v, vsubq_f32(load(p, v), shift[v]));
    }
  } else {
    float32x4_t inv[NV];
    for (int v = 0; v < NV; ++v) inv[v] = vdivq_f32(vdupq_n_f32(1.f), s[v]);
    for (int i = 0; i < len; ++i) {
      float* q = dst + static_cast<size_t>(i) * ostride;
      for (int v = 0; v < NV; ++v) store(q, v, vmulq_f32(load(q, v), inv[v]));
    }
  }
}

}  // namespace kestrel::kernels::arm
