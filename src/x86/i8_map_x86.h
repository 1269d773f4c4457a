// The int8 layers' passes over maps held as floats (kernels/i8_conv_kernels.h:
// I8MapKernel), once for each vector width: quantize_i8 (Q, the ISA's, as integer-valued
// floats), the dequantization with the convolution epilogue's activations
// (f32_gemm_x86.h), and the int8 residual add (i8_add_reference) with the ISA's I8Ops.
#pragma once
#include <algorithm>

#include "kernels/i8_conv_kernels.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_x86.h"
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

// An operand's n (<= W) values as floats: an fp32 map's as they are, an int8 map's
// float(q) * dequant.
template <class V>
KESTREL_X86_INLINE typename V::reg add_operand(const float* p, int n, typename V::reg) {
  return n >= V::kWidth ? V::loadu(p) : V::load_partial(p, n);
}
template <class V>
KESTREL_X86_INLINE typename V::reg add_operand(const int8_t* p, int n, typename V::reg dequant) {
  return V::mul(I8Ops<V>::load_row(p, n, dequant), dequant);
}

template <class V, class Epi>
KESTREL_X86_INLINE void add_store(float* out, typename V::reg y, int n, const typename I8Ops<V>::Requant&,
                                  typename V::reg, const Epi& epi) {
  if (n >= V::kWidth) {
    V::storeu(out, epi(y));
  } else {
    V::store_partial(out, epi(y), n);
  }
}
template <class V, class Epi>
KESTREL_X86_INLINE void add_store(int8_t* out, typename V::reg y, int n, const typename I8Ops<V>::Requant& rq,
                                  typename V::reg s, const Epi& epi) {
  I8Ops<V>::store_sums(out, y, s, V::zero(), n, rq, epi);
}

// One typed mix's loop. Its operands arrive by value: stores through int8_t* may alias
// anything reached through a reference, and GCC reloaded every captured one each step.
template <class V, class A, class B, class O, class Epi>
void add_row(const A* a, const B* b, O* out, size_t n, typename V::reg da, typename V::reg db, typename V::reg s,
             const typename I8Ops<V>::Requant rq, const Epi epi) {
  constexpr int W = V::kWidth;
  for (size_t i = 0; i < n; i += W) {
    const int m = static_cast<int>(std::min<size_t>(W, n - i));
    add_store<V>(out + i, V::add(add_operand<V>(a + i, m, da), add_operand<V>(b + i, m, db)), m, rq, s, epi);
  }
}

template <class V>
void add(const I8AddRow& r, size_t n, const ActivationSpec& act) {
  const auto rq = I8Ops<V>::requant(act, r.out_scale);
  const auto da = V::set1(r.a_dequant), db = V::set1(r.b_dequant), s = V::set1(r.out_scale);
  with_i8_add_types(r, [&](const auto* a, const auto* b, auto* out) {
    gemm::with_epilogue<V>(act, [&](const auto& epi) { add_row<V>(a, b, out, n, da, db, s, rq, epi); });
  });
}

}  // namespace i8map
KESTREL_X86_NS_END
