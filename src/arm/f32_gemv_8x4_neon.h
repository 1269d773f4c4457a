// The GEMV microkernel of InnerProduct: 8 outputs at a time over weights packed as
// [k][8] (the 8 outputs' weights for one input value side by side). Each 4-float
// input load feeds 8 accumulators (4 input lanes x 2 halves of the 8 outputs), so
// the 8 FMAs of a step are independent and the weights stream in order.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace kestrel::kernels::arm {

// acc[2l + h] += w[k + l][4h .. 4h + 3] * x[k + l] over the n values of x; returns w
// advanced past them (8 floats per value).
inline const float* gemv_8x4_q(const float* w, const float* x, size_t n, float32x4_t acc[8]) {
  size_t i = n / 16 * 16;
  if (i > 0) {
    // 16 values a turn in assembly, in the FMA order of the 4-value step below, with
    // 4-register loads (ld1 {4 registers}): 9 loads per 32 FMAs where GCC's code took
    // 20 (ldp pairs), and GCC keeps 4-register tuples and accumulators apart only
    // through the stack.
    register float32x4_t a0 asm("v16") = acc[0], a1 asm("v17") = acc[1], a2 asm("v18") = acc[2];
    register float32x4_t a3 asm("v19") = acc[3], a4 asm("v20") = acc[4], a5 asm("v21") = acc[5];
    register float32x4_t a6 asm("v22") = acc[6], a7 asm("v23") = acc[7];
    size_t turns = n / 16;
    const float* xp = x;
#define KG_STEP(xv)                                                                             \
  "ld1 {v24.4s-v27.4s}, [%[w]], #64\n\t"                                                        \
  "ld1 {v28.4s-v31.4s}, [%[w]], #64\n\t"                                                        \
  "fmla v16.4s, v24.4s, " #xv ".s[0]\n\t" "fmla v17.4s, v25.4s, " #xv ".s[0]\n\t"              \
  "fmla v18.4s, v26.4s, " #xv ".s[1]\n\t" "fmla v19.4s, v27.4s, " #xv ".s[1]\n\t"              \
  "fmla v20.4s, v28.4s, " #xv ".s[2]\n\t" "fmla v21.4s, v29.4s, " #xv ".s[2]\n\t"              \
  "fmla v22.4s, v30.4s, " #xv ".s[3]\n\t" "fmla v23.4s, v31.4s, " #xv ".s[3]\n\t"
    asm(".Lkg_turn%=:\n\t"
        "ld1 {v0.4s-v3.4s}, [%[x]], #64\n\t"
        KG_STEP(v0) KG_STEP(v1) KG_STEP(v2) KG_STEP(v3)
        "subs %[n], %[n], #1\n\t"
        "b.ne .Lkg_turn%=\n\t"
        : "+w"(a0), "+w"(a1), "+w"(a2), "+w"(a3), "+w"(a4), "+w"(a5), "+w"(a6), "+w"(a7), [w] "+r"(w),
          [x] "+r"(xp), [n] "+r"(turns)
        :
        : "v0", "v1", "v2", "v3", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory");
#undef KG_STEP
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4, acc[5] = a5, acc[6] = a6, acc[7] = a7;
  }
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

// The half-weight twin's (weights [k][8] as IEEE halves): the same FMAs in the same
// order, each weight vector widened (FCVTL, exact) as it streams, so the sums equal
// the fp32 kernel's bit for bit and half the bytes come from DRAM.
inline const uint16_t* gemv_8x4_q(const uint16_t* w, const float* x, size_t n, float32x4_t acc[8]) {
  auto lo = [](uint16x8_t v) { return vcvt_f32_f16(vget_low_f16(vreinterpretq_f16_u16(v))); };
  auto hi = [](uint16x8_t v) { return vcvt_high_f32_f16(vreinterpretq_f16_u16(v)); };
  size_t i = 0;
  for (; i + 4 <= n; i += 4, w += 32) {
    const float32x4_t xv = vld1q_f32(x + i);
    const uint16x8x4_t v = vld1q_u16_x4(w);
    acc[0] = vfmaq_laneq_f32(acc[0], lo(v.val[0]), xv, 0);
    acc[1] = vfmaq_laneq_f32(acc[1], hi(v.val[0]), xv, 0);
    acc[2] = vfmaq_laneq_f32(acc[2], lo(v.val[1]), xv, 1);
    acc[3] = vfmaq_laneq_f32(acc[3], hi(v.val[1]), xv, 1);
    acc[4] = vfmaq_laneq_f32(acc[4], lo(v.val[2]), xv, 2);
    acc[5] = vfmaq_laneq_f32(acc[5], hi(v.val[2]), xv, 2);
    acc[6] = vfmaq_laneq_f32(acc[6], lo(v.val[3]), xv, 3);
    acc[7] = vfmaq_laneq_f32(acc[7], hi(v.val[3]), xv, 3);
  }
  for (; i < n; ++i, w += 8) {
    const uint16x8_t v = vld1q_u16(w);
    acc[0] = vfmaq_n_f32(acc[0], lo(v), x[i]);
    acc[1] = vfmaq_n_f32(acc[1], hi(v), x[i]);
  }
  return w;
}

}  // namespace kestrel::kernels::arm
