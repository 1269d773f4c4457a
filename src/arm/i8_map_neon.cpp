// The int8 layers' passes over maps held as floats (kernels/i8_conv_kernels.h:
// I8MapKernel) on NEON: quantize_i8 eight values a step (i8_neon.h), and the
// dequantization with the convolution epilogue's activations (f32_gemm_epilogue_neon.h).
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

}  // namespace

const I8MapKernel kI8Map_Neon = {"i8_map_neon", Isa::kNeon, quantize, dequantize};

}  // namespace kestrel::kernels::arm
