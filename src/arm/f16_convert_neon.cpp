// fp32 <-> fp16 arrays on NEON: FCVTN / FCVTL are ARMv8.0 (no FEAT_FP16 needed), 8
// values a step.
#include <arm_neon.h>

#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {
namespace {

void to_half(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vcombine_f16(vcvt_f16_f32(vld1q_f32(src + i)), vcvt_f16_f32(vld1q_f32(src + i + 4)));
    vst1q_u16(dst + i, vreinterpretq_u16_f16(h));
  }
  for (; i < n; ++i) {
    const float16x4_t h = vcvt_f16_f32(vdupq_n_f32(src[i]));
    dst[i] = vget_lane_u16(vreinterpret_u16_f16(h), 0);
  }
}

void to_float(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(src + i));
    vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
  }
  for (; i < n; ++i) dst[i] = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(src[i]))), 0);
}

void round(const float* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vcvt_f16_f32(vld1q_f32(src + i))));
  for (; i < n; ++i) dst[i] = vgetq_lane_f32(vcvt_f32_f16(vcvt_f16_f32(vdupq_n_f32(src[i]))), 0);
}

void to_half_pack8(const float* lo, const float* hi, uint16_t* dst, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i) {
    const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(lo + 4 * i)), vld1q_f32(hi + 4 * i));
    vst1q_u16(dst + 8 * i, vreinterpretq_u16_f16(h));
  }
}

void to_float_pack4(const uint16_t* src, float* lo, float* hi, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(src + 8 * i));
    vst1q_f32(lo + 4 * i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(hi + 4 * i, vcvt_high_f32_f16(h));
  }
}

}  // namespace

const HalfKernel kF16Convert_Neon = {"f16_convert_neon", Isa::kNeon, to_half, to_float, round, to_half_pack8,
                                     to_float_pack4};

}  // namespace kestrel::kernels::arm
