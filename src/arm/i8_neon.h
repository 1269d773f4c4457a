// NEON helpers of the int8 kernels (Precision::kInt8, kernels/i8_reference.h): the
// scheme's quantization, sat(rne(x * scale)) with NaN to 0, on vectors.
//
// FCVTNS rounds half to even, saturates to int32 and turns NaN into 0, and the
// narrowing moves saturate: clamping the integer afterwards equals clamping the float
// before rounding (the bounds are integers), so the result is quantize_i8's.
#pragma once
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#define KESTREL_I8_NEON_INLINE inline __attribute__((always_inline))
// On the lambdas given to unroll(): GCC may otherwise keep a step's lambdas out of line
// where the template is not in an anonymous namespace (i8_dwconv_8x2_neon.h: the step
// cost 40% more instructions so).
#define KESTREL_I8_LAMBDA __attribute__((always_inline))

namespace kestrel::kernels::arm::i8 {

// f(std::integral_constant<int, I>) for I = 0 .. N - 1, unrolled.
template <class F, int... I>
KESTREL_I8_NEON_INLINE void unroll_seq(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
KESTREL_I8_NEON_INLINE void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

// rne(x * scale), saturated to int32 (not yet to the int8 range).
KESTREL_I8_NEON_INLINE int32x4_t round_scaled(float32x4_t x, float32x4_t scale) {
  return vcvtnq_s32_f32(vmulq_f32(x, scale));
}

// Sixteen floats from p quantized to int8.
KESTREL_I8_NEON_INLINE int8x16_t quantize16(const float* p, float32x4_t scale) {
  const int32x4_t a = round_scaled(vld1q_f32(p), scale), b = round_scaled(vld1q_f32(p + 4), scale);
  const int32x4_t c = round_scaled(vld1q_f32(p + 8), scale), d = round_scaled(vld1q_f32(p + 12), scale);
  const int16x8_t lo = vqmovn_high_s32(vqmovn_s32(a), b), hi = vqmovn_high_s32(vqmovn_s32(c), d);
  return vmaxq_s8(vqmovn_high_s16(vqmovn_s16(lo), hi), vdupq_n_s8(-127));
}

// One float quantized (the scalar FCVTNS): the rows' tails, without a call.
KESTREL_I8_NEON_INLINE int32_t quantize1(float x, float scale) {
  const int32_t q = vcvtns_s32_f32(x * scale);
  return q < -127 ? -127 : (q > 127 ? 127 : q);
}

// Four floats quantized, held as integer-valued floats in [-127, 127] (the exact fp32
// routes' operands, i8_conv_kernels.h).
KESTREL_I8_NEON_INLINE float32x4_t quantize4(float32x4_t x, float32x4_t scale) {
  return vcvtq_f32_s32(vmaxq_s32(vminq_s32(round_scaled(x, scale), vdupq_n_s32(127)), vdupq_n_s32(-127)));
}

// NV (<= 4) vectors of int32 narrowed with saturation to [-128, 127] (the caller then
// clamps to the scheme's bounds): lane i of vector j at byte 4j + i, the bytes past 4 NV
// zero.
template <int NV>
KESTREL_I8_NEON_INLINE int8x16_t narrow(const int32x4_t* q) {
  static_assert(NV >= 1 && NV <= 4, "one to four vectors");
  const int16x4_t z = vdup_n_s16(0);
  if constexpr (NV == 1) {
    return vcombine_s8(vqmovn_s16(vcombine_s16(vqmovn_s32(q[0]), z)), vdup_n_s8(0));
  } else if constexpr (NV == 2) {
    return vcombine_s8(vqmovn_s16(vqmovn_high_s32(vqmovn_s32(q[0]), q[1])), vdup_n_s8(0));
  } else {
    const int16x8_t lo = vqmovn_high_s32(vqmovn_s32(q[0]), q[1]);
    int16x8_t hi;
    if constexpr (NV == 3) {
      hi = vcombine_s16(vqmovn_s32(q[2]), z);
    } else {
      hi = vqmovn_high_s32(vqmovn_s32(q[2]), q[3]);
    }
    return vqmovn_high_s16(vqmovn_s16(lo), hi);
  }
}

// The first n (<= 16) bytes of v at dst, in whole-register or lane stores (no call).
KESTREL_I8_NEON_INLINE void store_bytes(int8_t* dst, int8x16_t v, int n) {
  if (n == 16) {
    vst1q_s8(dst, v);
    return;
  }
  if (n >= 8) {
    vst1_s8(dst, vget_low_s8(v));
    v = vextq_s8(v, v, 8);
    dst += 8;
    n -= 8;
  }
  if (n >= 4) {
    vst1q_lane_s32(reinterpret_cast<int32_t*>(dst), vreinterpretq_s32_s8(v), 0);
    v = vextq_s8(v, v, 4);
    dst += 4;
    n -= 4;
  }
  if (n >= 2) {
    vst1q_lane_s16(reinterpret_cast<int16_t*>(dst), vreinterpretq_s16_s8(v), 0);
    v = vextq_s8(v, v, 2);
    dst += 2;
    n -= 2;
  }
  if (n) vst1q_lane_s8(dst, v, 0);
}

// An int8 output's rne(act(fma(x, m, c))) (kernels/i8_reference.h), x the sums as
// integer-valued floats, m and c the channel's factors; act only where kAct (LeakyReLU:
// i8_epilogue_neon.h's kScaledAct).
template <bool kAct, class Act>
KESTREL_I8_NEON_INLINE int32x4_t requantize(float32x4_t x, float32x4_t m, float32x4_t c, const Act& act) {
  float32x4_t v = vfmaq_f32(c, x, m);
  if constexpr (kAct) v = act(v);
  return vcvtnq_s32_f32(v);
}

// Eight bytes widened to two vectors of integer-valued floats.
KESTREL_I8_NEON_INLINE float32x4x2_t widen8(int8x8_t b) {
  const int16x8_t h = vmovl_s8(b);
  return {{vcvtq_f32_s32(vmovl_s16(vget_low_s16(h))), vcvtq_f32_s32(vmovl_high_s16(h))}};
}

}  // namespace kestrel::kernels::arm::i8
