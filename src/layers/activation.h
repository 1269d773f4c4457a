// Elementwise activations: the standalone Activation layer and the epilogue fused
// into Convolution and InnerProduct share these definitions, so a fused and an
// unfused network compute the same bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

#include "kestrel/status.h"
#include "kestrel_generated.h"

namespace kestrel {

struct ActivationSpec {
  fb::ActivationType type = fb::ActivationType::None;
  float alpha = 0.f;
  float beta = 0.f;
};

// An absent table means no activation.
inline ActivationSpec activation_spec(const fb::Activation* a) {
  ActivationSpec s;
  if (a) {
    s.type = a->type();
    s.alpha = a->alpha();
    s.beta = a->beta();
  }
  return s;
}

// The verifier does not range-check enums, so a damaged file can carry any byte here.
inline Status check_activation(const ActivationSpec& a) {
  const int t = static_cast<int>(a.type);
  if (t < static_cast<int>(fb::ActivationType::MIN) || t > static_cast<int>(fb::ActivationType::MAX)) {
    return Status(ErrorCode::kCorruptModel, "unknown activation type " + std::to_string(t));
  }
  return Status::Ok();
}

namespace activation_detail {

template <fb::ActivationType T>
using Tag = std::integral_constant<fb::ActivationType, T>;

template <fb::ActivationType T>
inline float apply(float x, float alpha, float beta) {
  using A = fb::ActivationType;
  if constexpr (T == A::ReLU) {
    // NaN propagates (as in PyTorch): x < 0 is false for NaN.
    return x < 0.f ? 0.f : x;
  } else if constexpr (T == A::LeakyReLU) {
    return x > 0.f ? x : x * alpha;
  } else if constexpr (T == A::Clip) {
    return std::min(std::max(x, alpha), beta);
  } else if constexpr (T == A::Sigmoid) {
    return 1.f / (1.f + std::exp(-x));
  } else if constexpr (T == A::TanH) {
    return std::tanh(x);
  } else if constexpr (T == A::HardSigmoid) {
    return std::min(std::max(alpha * x + beta, 0.f), 1.f);
  } else if constexpr (T == A::HardSwish) {
    // alpha 0: PyTorch's x * clamp(x + 3, 0, 6) / 6; else TensorFlow's graphs' form
    // (x * alpha) * clamp(x + 3, 0, 6), alpha their (often fp16) 1/6.
    const float scale = alpha == 0.f ? 1.f : alpha, divisor = alpha == 0.f ? 6.f : 1.f;
    return x * scale * std::min(std::max(x + 3.f, 0.f), 6.f) / divisor;
  } else if constexpr (T == A::SiLU) {
    return x / (1.f + std::exp(-x));
  } else if constexpr (T == A::ELU) {
    return x > 0.f ? x : alpha * std::expm1(x);
  } else if constexpr (T == A::GELU) {
    return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
  } else {
    return x;
  }
}

// Calls fn(Tag<type>{}) so that each caller gets one loop per type with the
// formula inlined, instead of a switch per element.
template <class Fn>
inline void dispatch(fb::ActivationType type, Fn&& fn) {
  using A = fb::ActivationType;
  switch (type) {
    case A::ReLU: fn(Tag<A::ReLU>{}); break;
    case A::LeakyReLU: fn(Tag<A::LeakyReLU>{}); break;
    case A::Clip: fn(Tag<A::Clip>{}); break;
    case A::Sigmoid: fn(Tag<A::Sigmoid>{}); break;
    case A::TanH: fn(Tag<A::TanH>{}); break;
    case A::HardSigmoid: fn(Tag<A::HardSigmoid>{}); break;
    case A::HardSwish: fn(Tag<A::HardSwish>{}); break;
    case A::SiLU: fn(Tag<A::SiLU>{}); break;
    case A::ELU: fn(Tag<A::ELU>{}); break;
    case A::GELU: fn(Tag<A::GELU>{}); break;
    default: fn(Tag<A::None>{}); break;
  }
}

}  // namespace activation_detail

// The parameters the vector kernels broadcast: HardSwish's scale and divisor (its
// alpha 0 means 1 and 6), every other type's alpha and beta as they are.
inline float hard_swish_scale(const ActivationSpec& a) {
  return a.type != fb::ActivationType::HardSwish ? a.alpha : a.alpha == 0.f ? 1.f : a.alpha;
}
inline float hard_swish_divisor(const ActivationSpec& a) {
  return a.type != fb::ActivationType::HardSwish ? a.beta : a.alpha == 0.f ? 6.f : 1.f;
}

inline float activate(float x, const ActivationSpec& a) {
  float y = x;
  activation_detail::dispatch(a.type, [&](auto tag) {
    y = activation_detail::apply<decltype(tag)::value>(x, a.alpha, a.beta);
  });
  return y;
}

// dst[i] = f(src[i]); src may equal dst.
inline void activate_array(const float* src, float* dst, size_t n, const ActivationSpec& a) {
  activation_detail::dispatch(a.type, [&](auto tag) {
    constexpr fb::ActivationType T = decltype(tag)::value;
    if (T == fb::ActivationType::None && src == dst) return;
    const float alpha = a.alpha, beta = a.beta;
    for (size_t i = 0; i < n; ++i) dst[i] = activation_detail::apply<T>(src[i], alpha, beta);
  });
}

inline void activate_inplace(float* p, size_t n, const ActivationSpec& a) { activate_array(p, p, n, a); }

}  // namespace kestrel
