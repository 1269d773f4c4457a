// The int8 layers' passes over maps held as floats (kernels/i8_conv_kernels.h:
// I8MapKernel) on AVX-512F: quantize_i8 sixteen values at a time, and the
// dequantization with the convolution epilogue's activations (f32_gemm_x86.h).
#include "kernels/i8_conv_kernels.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_avx512.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

using V = F32x16;
constexpr int W = V::kWidth;

void quantize(const float* src, float* dst, size_t n, float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + W <= n; i += W) _mm512_storeu_ps(dst + i, quantize_i8x16(_mm512_loadu_ps(src + i), s));
  if (i < n) {
    const __mmask16 m = V::lanes(static_cast<int>(n - i));
    _mm512_mask_storeu_ps(dst + i, m, quantize_i8x16(_mm512_maskz_loadu_ps(m, src + i), s));
  }
}

void dequantize(const float* src, float* dst, size_t n, float a, float b, const ActivationSpec& act) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  gemm::with_epilogue<V>(act, [&](const auto& epi) {
    size_t i = 0;
    for (; i + W <= n; i += W) {
      _mm512_storeu_ps(dst + i, epi(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(src + i), va), vb)));
    }
    if (i < n) {
      const __mmask16 m = V::lanes(static_cast<int>(n - i));
      _mm512_mask_storeu_ps(dst + i, m, epi(_mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, src + i), va), vb)));
    }
    epi.finish(dst, n);
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8MapKernel kI8Map_Avx512 = {"i8_map_avx512", Isa::kAvx512, quantize, dequantize};

}  // namespace kestrel::kernels::x86
