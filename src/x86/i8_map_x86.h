// The int8 layers' passes over maps held as floats (kernels/i8_conv_kernels.h:
// I8MapKernel), once for each vector width: quantize_i8 (Q, the ISA's, as integer-valued
// floats) and the dequantization with the convolution epilogue's activations
// (f32_gemm_x86.h).
#pragma once
#include "kernels/i8_conv_kernels.h"
#include "x86/f32_gemm_x86.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN
namespace i8map {

template <class V, typename V::reg (*Q)(typename V::reg, typename V::reg)>
void quantize(const float* src, float* dst, size_t n, float scale) {
  constexpr int W = V::kWidth;
  const auto s = V::set1(scale);
  size_t i = 0;
  for (; i + W <= n; i += W) V::storeu(dst + i, Q(V::loadu(src + i), s));
  if (i < n) V::store_partial(dst + i, Q(V::load_partial(src + i, static_cast<int>(n - i)), s), static_cast<int>(n - i));
}

template <class V>
void dequantize(const float* src, float* dst, size_t n, float a, float b, const ActivationSpec& act) {
  constexpr int W = V::kWidth;
  const auto va = V::set1(a), vb = V::set1(b);
  gemm::with_epilogue<V>(act, [&](const auto& epi) {
    size_t i = 0;
    for (; i + W <= n; i += W) V::storeu(dst + i, epi(V::add(V::mul(V::loadu(src + i), va), vb)));
    if (i < n) {
      const int m = static_cast<int>(n - i);
      V::store_partial(dst + i, epi(V::add(V::mul(V::load_partial(src + i, m), va), vb)), m);
    }
    epi.finish(dst, n);
  });
}

}  // namespace i8map
KESTREL_X86_NS_END
