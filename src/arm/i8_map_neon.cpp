// The int8 layers' passes over maps held as floats (kernels/i8_conv_kernels.h:
// I8MapKernel) on NEON: quantize_i8 eight values a step (i8_neon.h), the dequantization
// with the convolution epilogue's activations (f32_gemm_epilogue_neon.h), and the int8
// residual add (i8_add_reference), eight values a step.
#include <algorithm>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/i8_epilogue_neon.h"
#include "arm/i8_neon.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"

namespace kestrel::kernels::arm {
namespace {

void quantize(const float* src, float* dst, size_t n, float scale) {
  const float32x4_t s = vdupq_n_f32(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    vst1q_f32(dst + i, i8::quantize4(vld1q_f32(src + i), s));
    vst1q_f32(dst + i + 4, i8::quantize4(vld1q_f32(src + i + 4), s));
  }
  for (; i < n; ++i) dst[i] = static_cast<float>(i8::quantize1(src[i], scale));
}

void dequantize(const float* src, float* dst, size_t n, float a, float b, const ActivationSpec& act) {
  const float32x4_t va = vdupq_n_f32(a), vb = vdupq_n_f32(b);
  gemm::with_epilogue(act, [&](const auto& epi) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      vst1q_f32(dst + i, epi(vaddq_f32(vmulq_f32(vld1q_f32(src + i), va), vb)));
      vst1q_f32(dst + i + 4, epi(vaddq_f32(vmulq_f32(vld1q_f32(src + i + 4), va), vb)));
    }
    for (; i < n; ++i) dst[i] = epi(vdupq_n_f32(src[i] * a + b))[0];
    i8::finish(epi, dst, n);
  });
}

// Eight values of an operand as two vectors of floats: an fp32 map's as they are, an
// int8 map's float(q) * dequant.
KESTREL_I8_NEON_INLINE float32x4x2_t operand8(const float* p, float32x4_t) {
  return {{vld1q_f32(p), vld1q_f32(p + 4)}};
}
KESTREL_I8_NEON_INLINE float32x4x2_t operand8(const int8_t* p, float32x4_t dequant) {
  const float32x4x2_t q = i8::widen8(vld1_s8(p));
  return {{vmulq_f32(q.val[0], dequant), vmulq_f32(q.val[1], dequant)}};
}
inline float operand1(float x, float) { return x; }
inline float operand1(int8_t q, float dequant) { return static_cast<float>(q) * dequant; }

template <class Epi>
KESTREL_I8_NEON_INLINE void store8(float* out, float32x4x2_t y, const i8::Requant&, float32x4_t, const Epi& epi) {
  vst1q_f32(out, epi(y.val[0]));
  vst1q_f32(out + 4, epi(y.val[1]));
}
template <class Epi>
KESTREL_I8_NEON_INLINE void store8(int8_t* out, float32x4x2_t y, const i8::Requant& rq, float32x4_t s,
                                   const Epi& epi) {
  const float32x4_t zero = vdupq_n_f32(0.f);
  const int32x4_t q[2] = {i8::requantize<i8::kScaledAct<Epi>>(y.val[0], s, zero, epi),
                          i8::requantize<i8::kScaledAct<Epi>>(y.val[1], s, zero, epi)};
  vst1_s8(out, vget_low_s8(i8::clamp(i8::narrow<2>(q), rq)));
}

void add(const I8AddRow& r, size_t n, const ActivationSpec& act) {
  const i8::Requant rq = i8::requant_of(act, r.out_scale);
  int lo = 0, hi = 0;
  if (r.out_scale > 0.f) i8_output_bounds(act, r.out_scale, &lo, &hi);
  const float32x4_t da = vdupq_n_f32(r.a_dequant), db = vdupq_n_f32(r.b_dequant), s = vdupq_n_f32(r.out_scale);
  with_i8_add_types(r, [&](const auto* a, const auto* b, auto* out) {
    gemm::with_epilogue(act, [&](const auto& epi) {
      size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        const float32x4x2_t x = operand8(a + i, da), z = operand8(b + i, db);
        store8(out + i, {{vaddq_f32(x.val[0], z.val[0]), vaddq_f32(x.val[1], z.val[1])}}, rq, s, epi);
      }
      for (; i < n; ++i) {
        const float y = operand1(a[i], r.a_dequant) + operand1(b[i], r.b_dequant);
        if constexpr (std::is_same_v<std::remove_pointer_t<decltype(out)>, int8_t>) {
          out[i] = requantize_i8(y, r.out_scale, 0.f, act, lo, hi);
        } else {
          out[i] = epi(vdupq_n_f32(y))[0];
        }
      }
    });
  });
}

// Bytes added in pairs into int16 lanes (SADDLP), those in pairs into the int32
// accumulator (SADALP): exact while n * 128 < 2^31.
int32_t sum(const int8_t* q, size_t n) {
  int32x4_t acc = vdupq_n_s32(0);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) acc = vpadalq_s16(acc, vpaddlq_s8(vld1q_s8(q + i)));
  int32_t s = vaddvq_s32(acc);
  for (; i < n; ++i) s += q[i];
  return s;
}

int8_t max(const int8_t* q, size_t n) {
  int8_t m = q[0];
  size_t i = 0;
  if (n >= 16) {
    int8x16_t acc = vld1q_s8(q);
    for (i = 16; i + 16 <= n; i += 16) acc = vmaxq_s8(acc, vld1q_s8(q + i));
    m = std::max(m, vmaxvq_s8(acc));
  }
  for (; i < n; ++i) m = std::max(m, q[i]);
  return m;
}

}  // namespace

const I8MapKernel kI8Map_Neon = {"i8_map_neon", Isa::kNeon, quantize, dequantize, add, sum, max};

}  // namespace kestrel::kernels::arm
