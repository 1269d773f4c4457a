// What every x86 depthwise kernel shares, whatever its window (the 3x3 planar and
// flat kernels, f32_dwconv3x3_x86.h and f32_dwconv3x3_flat_x86.h; the K x K
// channel-vector kernel, f32_dwconv_cvec_x86.h): the fused epilogues, the compile-time
// unrolling and the geometry check. The functions declared under "common" are defined
// in f32_dwconv_common.cpp, built without ISA flags.
//
// ODR: everything here compiled with ISA flags is a template over the vector traits V
// (f32_dwconv_avx512.h, f32_dwconv_avx2.h), which live in an anonymous namespace of
// each ISA's translation units, so every instantiation has internal linkage: no
// AVX-512 copy of a function can be picked by the linker for the AVX2 path.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

#include "kernels/conv_kernels.h"

#define KESTREL_DW_INLINE __attribute__((always_inline))

namespace kestrel::kernels::x86::dwconv {

// ---- common (f32_dwconv_common.cpp, no ISA flags) ----

// The depthwise geometries a kernel of a k x k window computes: stride 1 or 2 (equal),
// dilation 1, every padding up to k - 1 on each side (TF's asymmetric SAME included);
// a negative trailing padding means input rows or columns no output reads.
bool supports_window(const ConvGeometry& g, int k);
size_t no_workspace(const ConvGeometry& g);
// The activations not fused into the store, over n values of one channel's output.
void activate_channel(float* p, size_t n, const ActivationSpec& act);

// ---- over V ----

enum class Epilogue { kLinear, kRelu, kClip, kLeaky };

template <class V>
struct Act {
  typename V::T lo, hi, slope;  // kRelu: lo = 0; kClip: [lo, hi]; kLeaky: slope
};

template <class V, Epilogue E>
inline KESTREL_DW_INLINE typename V::T activate(typename V::T x, const Act<V>& a) {
  if constexpr (E == Epilogue::kRelu) {
    // x as the second operand: x86 max/min return it when either is NaN (NaN propagates).
    return V::max(a.lo, x);
  } else if constexpr (E == Epilogue::kClip) {
    return V::min(a.hi, V::max(a.lo, x));
  } else if constexpr (E == Epilogue::kLeaky) {
    return V::leaky(x, a.slope);
  } else {
    return x;
  }
}

template <class F, int... I>
inline KESTREL_DW_INLINE void unroll_seq(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline KESTREL_DW_INLINE void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

// Calls fn(std::integral_constant<Epilogue, E>, act, activate_after) for the epilogue
// that computes g.act in registers (activate_after: the stored values still need
// activate_channel): each kernel's channel loop is instantiated once per kind.
template <class V, class Fn>
inline void with_epilogue(const ConvGeometry& g, Fn&& fn) {
  using fb::ActivationType;
  Act<V> act{V::zero(), V::zero(), V::zero()};
  switch (g.act.type) {
    case ActivationType::None:
      return fn(std::integral_constant<Epilogue, Epilogue::kLinear>{}, act, false);
    case ActivationType::ReLU:
      return fn(std::integral_constant<Epilogue, Epilogue::kRelu>{}, act, false);
    case ActivationType::Clip:
      act.lo = V::set1(g.act.alpha);
      act.hi = V::set1(g.act.beta);
      return fn(std::integral_constant<Epilogue, Epilogue::kClip>{}, act, false);
    case ActivationType::LeakyReLU:
      act.slope = V::set1(g.act.alpha);
      return fn(std::integral_constant<Epilogue, Epilogue::kLeaky>{}, act, false);
    default:
      return fn(std::integral_constant<Epilogue, Epilogue::kLinear>{}, act, true);
  }
}

}  // namespace kestrel::kernels::x86::dwconv

#undef KESTREL_DW_INLINE
