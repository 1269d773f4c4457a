// Every activation on 4 floats, for the standalone activation kernel and for the
// fused epilogues of the other NEON kernels. ReLU, LeakyReLU, Clip, HardSigmoid and
// HardSwish follow activation.h's formulas operation for operation (NaN included);
// the exp- and erf-based ones use neon_math.h and agree to about 1e-6.
#pragma once
#include <arm_neon.h>

#include <cstddef>

#include "arm/neon_math.h"
#include "layers/activation.h"

namespace kestrel::kernels::arm {

// The activation parameters, broadcast once per call instead of per vector.
struct ActivationQ {
  float32x4_t alpha, beta;
  // HardSwish: alpha and beta hold its scale and divisor (see activation.h).
  explicit ActivationQ(const ActivationSpec& a)
      : alpha(vdupq_n_f32(hard_swish_scale(a))), beta(vdupq_n_f32(hard_swish_divisor(a))) {}
};

template <fb::ActivationType T>
inline float32x4_t activate_q(float32x4_t x, const ActivationQ& p) {
  using A = fb::ActivationType;
  const float32x4_t zero = vdupq_n_f32(0.f), one = vdupq_n_f32(1.f);
  if constexpr (T == A::ReLU) {
    // FMAX returns NaN when either operand is NaN: NaN propagates as in the reference.
    return vmaxq_f32(x, zero);
  } else if constexpr (T == A::LeakyReLU) {
    return vbslq_f32(vcgtq_f32(x, zero), x, vmulq_f32(x, p.alpha));
  } else if constexpr (T == A::Clip) {
    return vminq_f32(vmaxq_f32(x, p.alpha), p.beta);
  } else if constexpr (T == A::Sigmoid) {
    return vdivq_f32(one, vaddq_f32(one, exp_ps(vnegq_f32(x))));
  } else if constexpr (T == A::TanH) {
    // tanh|x| = 1 - 2 / (exp(2|x|) + 1): no cancellation for large |x|, and exp
    // overflowing to inf gives exactly 1; the sign is copied back from x.
    const float32x4_t e = exp_ps(vaddq_f32(vabsq_f32(x), vabsq_f32(x)));
    const float32x4_t t = vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.f), vaddq_f32(e, one)));
    return vbslq_f32(vdupq_n_u32(0x80000000u), x, t);
  } else if constexpr (T == A::HardSigmoid) {
    return vminq_f32(vmaxq_f32(vfmaq_f32(p.beta, p.alpha, x), zero), one);
  } else if constexpr (T == A::HardSwish) {
    const float32x4_t c = vminq_f32(vmaxq_f32(vaddq_f32(x, vdupq_n_f32(3.f)), zero), vdupq_n_f32(6.f));
    return vdivq_f32(vmulq_f32(vmulq_f32(x, p.alpha), c), p.beta);
  } else if constexpr (T == A::SiLU) {
    return vdivq_f32(x, vaddq_f32(one, exp_ps(vnegq_f32(x))));
  } else if constexpr (T == A::ELU) {
    const float32x4_t em1 = vsubq_f32(exp_ps(vminq_f32(x, zero)), one);
    return vbslq_f32(vcgtq_f32(x, zero), x, vmulq_f32(p.alpha, em1));
  } else if constexpr (T == A::GELU) {
    const float32x4_t e = erf_ps(vmulq_f32(x, vdupq_n_f32(0.70710678118654752f)));
    return vmulq_f32(vmulq_f32(vdupq_n_f32(0.5f), x), vaddq_f32(one, e));
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
template <fb::ActivationType T>
inline void activate_row_q(const float* src, float* dst, size_t n, const ActivationQ& p) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t a = activate_q<T>(vld1q_f32(src + i), p);
    const float32x4_t b = activate_q<T>(vld1q_f32(src + i + 4), p);
    vst1q_f32(dst + i, a);
    vst1q_f32(dst + i + 4, b);
  }
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, activate_q<T>(vld1q_f32(src + i), p));
  if (i < n) store_partial(dst + i, activate_q<T>(load_partial(src + i, n - i), p), n - i);
}

// The same for a run-time activation type (one switch per call).
void activate_array_neon(const ActivationSpec& a, const float* src, float* dst, size_t n);

}  // namespace kestrel::kernels::arm
