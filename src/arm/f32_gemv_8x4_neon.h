// The GEMV microkernel of InnerProduct: 8 outputs at a time over weights packed as
// [k][8] (the 8 outputs' weights for one input value side by side). Each 4-float
// input load feeds 8 accumulators (4 input lanes x 2 halves of the 8 outputs), so
// the 8 FMAs of a step are independent and the weights stream in order.
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm {

// acc[2l + h] += w[k + l][4h .. 4h + 3] * x[k + l] over the n values of x; returns w
// advanced past them (8 floats per value).
inline const float* gemv_8x4_q(const float* w, const float* x, size_t n, float32x4_t acc[8]) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4, w += 32) {
    const float32x4_t xv = vld1q_f32(x + i);
    acc[0] = vfmaq_laneq_f32(acc[0], vld1q_f32(w), xv, 0);
    acc[1] = vfmaq_laneq_f32(acc[1], vld1q_f32(w + 4), xv, 0);
    acc[2] = vfmaq_laneq_f32(acc[2], vld1q_f32(w + 8), xv, 1);
    acc[3] = vfmaq_laneq_f32(acc[3], vld1q_f32(w + 12), xv, 1);
    acc[4] = vfmaq_laneq_f32(acc[4], vld1q_f32(w + 16), xv, 2);
    acc[5] = vfmaq_laneq_f32(acc[5], vld1q_f32(w + 20), xv, 2);
    acc[6] = vfmaq_laneq_f32(acc[6], vld1q_f32(w + 24), xv, 3);
    acc[7] = vfmaq_laneq_f32(acc[7], vld1q_f32(w + 28), xv, 3);
  }
  for (; i < n; ++i, w += 8) {
    acc[0] = vfmaq_n_f32(acc[0], vld1q_f32(w), x[i]);
    acc[1] = vfmaq_n_f32(acc[1], vld1q_f32(w + 4), x[i]);
  }
  return w;
}

}  // namespace kestrel::kernels::arm
