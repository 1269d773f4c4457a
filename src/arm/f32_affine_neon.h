// The affine microkernel, y = x * scale + shift: 16 floats per step, one FMA each.
#pragma once
#include <arm_neon.h>

#include <cstddef>

#include "arm/neon_math.h"

namespace kestrel::kernels::arm {

inline void affine_row_q(const float* src, float* dst, size_t n, float32x4_t a, float32x4_t b) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const float32x4_t x0 = vld1q_f32(src + i), x1 = vld1q_f32(src + i + 4);
    const float32x4_t x2 = vld1q_f32(src + i + 8), x3 = vld1q_f32(src + i + 12);
    vst1q_f32(dst + i, vfmaq_f32(b, x0, a));
    vst1q_f32(dst + i + 4, vfmaq_f32(b, x1, a));
    vst1q_f32(dst + i + 8, vfmaq_f32(b, x2, a));
    vst1q_f32(dst + i + 12, vfmaq_f32(b, x3, a));
  }
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vfmaq_f32(b, vld1q_f32(src + i), a));
  if (i < n) store_partial(dst + i, vfmaq_f32(b, load_partial(src + i, n - i), a), n - i);
}

}  // namespace kestrel::kernels::arm
