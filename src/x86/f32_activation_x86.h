// Every activation on one vector, for the standalone activation kernel and for the
// fused epilogues of the other x86 kernels (templates over the traits of
// x86/x86_math.h). ReLU, LeakyReLU, Clip, HardSigmoid and HardSwish follow
// activation.h's formulas operation for operation (NaN included: x86 max/min return
// their second operand on NaN, which is where std::max/std::min keep it too); the
// exp- and erf-based ones use exp_v/erf_v and agree to about 1e-6.
#pragma once
#include <cstddef>

#include "kernels/elementwise_kernels.h"
#include "layers/activation.h"
#include "x86/x86_math.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

// The activation parameters, broadcast once per call instead of per vector.
template <class V>
struct ActivationV {
  typename V::reg alpha, beta;
  // HardSwish: alpha and beta hold its scale and divisor (see activation.h).
  explicit ActivationV(const ActivationSpec& a)
      : alpha(V::set1(hard_swish_scale(a))), beta(V::set1(hard_swish_divisor(a))) {}
};

template <fb::ActivationType T, class V>
inline typename V::reg activate_v(typename V::reg x, const ActivationV<V>& p) {
  using A = fb::ActivationType;
  using R = typename V::reg;
  const R zero = V::zero(), one = V::set1(1.f);
  if constexpr (T == A::ReLU) {
    // x < 0 ? 0 : x as in the reference: max(0, x) returns its second operand, x, when
    // either is NaN, so NaN propagates.
    return V::max(zero, x);
  } else if constexpr (T == A::LeakyReLU) {
    return V::select(V::gt(x, zero), x, V::mul(x, p.alpha));
  } else if constexpr (T == A::Clip) {
    // std::min(std::max(x, alpha), beta) = (beta < m) ? beta : m, m = (x < alpha) ? alpha : x.
    return V::min(p.beta, V::max(p.alpha, x));
  } else if constexpr (T == A::Sigmoid) {
    return V::div(one, V::add(one, exp_v<V>(V::neg(x))));
  } else if constexpr (T == A::TanH) {
    // tanh|x| = 1 - 2 / (exp(2|x|) + 1): no cancellation for large |x|, and exp
    // overflowing to inf gives exactly 1; the sign is copied back from x.
    const R ax = V::abs(x);
    const R e = exp_v<V>(V::add(ax, ax));
    const R t = V::sub(one, V::div(V::set1(2.f), V::add(e, one)));
    return V::copysign(t, x);
  } else if constexpr (T == A::HardSigmoid) {
    return V::min(one, V::max(zero, V::fmadd(p.alpha, x, p.beta)));
  } else if constexpr (T == A::HardSwish) {
    const R c = V::min(V::set1(6.f), V::max(zero, V::add(x, V::set1(3.f))));
    return V::div(V::mul(V::mul(x, p.alpha), c), p.beta);
  } else if constexpr (T == A::SiLU) {
    return V::div(x, V::add(one, exp_v<V>(V::neg(x))));
  } else if constexpr (T == A::ELU) {
    const R em1 = V::sub(exp_v<V>(V::min(zero, x)), one);
    return V::select(V::gt(x, zero), x, V::mul(p.alpha, em1));
  } else if constexpr (T == A::GELU) {
    const R e = erf_v<V>(V::mul(x, V::set1(0.70710678118654752f)));
    return V::mul(V::mul(V::set1(0.5f), x), V::add(one, e));
  } else {
    return x;
  }
}

// True for the activations that cost no more than a store's worth of arithmetic:
// kernels fuse these into their inner loop and run the others as a second pass over
// the (cache-hot) output.
constexpr bool is_cheap_activation(fb::ActivationType t) {
  using A = fb::ActivationType;
  return t == A::None || t == A::ReLU || t == A::LeakyReLU || t == A::Clip;
}

// Calls fn(Tag<type>{}) with the cheap activation `type`, or with None for the others.
template <class Fn>
inline void dispatch_cheap_activation(fb::ActivationType type, Fn&& fn) {
  using A = fb::ActivationType;
  using activation_detail::Tag;
  switch (type) {
    case A::ReLU: fn(Tag<A::ReLU>{}); break;
    case A::LeakyReLU: fn(Tag<A::LeakyReLU>{}); break;
    case A::Clip: fn(Tag<A::Clip>{}); break;
    default: fn(Tag<A::None>{}); break;
  }
}

// dst[i] = f(src[i]) for i < n; src may equal dst. Reads and writes nothing past n.
// Two vectors per step keep the exp polynomial's FMA chain busy.
template <fb::ActivationType T, class V>
inline void activate_row_v(const float* src, float* dst, size_t n, const ActivationV<V>& p) {
  constexpr size_t W = V::kWidth;
  size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto a = activate_v<T, V>(V::load(src + i), p);
    const auto b = activate_v<T, V>(V::load(src + i + W), p);
    V::store(dst + i, a);
    V::store(dst + i + W, b);
  }
  for (; i + W <= n; i += W) V::store(dst + i, activate_v<T, V>(V::load(src + i), p));
  if (i < n) V::store_partial(dst + i, activate_v<T, V>(V::load_partial(src + i, n - i), p), n - i);
}

// The same for a run-time activation type (one switch per call).
template <class V>
void activate_array_x86(const ActivationSpec& a, const float* src, float* dst, size_t n) {
  const ActivationV<V> p(a);
  activation_detail::dispatch(a.type, [&](auto tag) {
    constexpr fb::ActivationType T = decltype(tag)::value;
    if (T == fb::ActivationType::None && src == dst) return;
    activate_row_v<T, V>(src, dst, n, p);
  });
}

inline bool activation_supports(const ActivationSpec&) { return true; }

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
