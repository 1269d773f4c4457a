// The fused epilogue of the NEON SGEMM-based convolutions: bias + activation applied
// to the accumulators on their way to the output. ReLU, Clip and LeakyReLU are
// vectorized; every other activation is stored plain and then passed to
// activate_array over the values just written (still within the same tile, while
// they are in L1).
#pragma once
#include <arm_neon.h>

#include <cstddef>

#include "layers/activation.h"

namespace kestrel::kernels::arm::gemm {

enum class Act { kNone, kReLU, kClip, kLeaky, kOther };

template <Act kAct>
struct Epilogue {
  float32x4_t alpha, beta;
  const ActivationSpec* spec;

  explicit Epilogue(const ActivationSpec& a) : alpha(vdupq_n_f32(a.alpha)), beta(vdupq_n_f32(a.beta)), spec(&a) {}

  __attribute__((always_inline)) float32x4_t operator()(float32x4_t x) const {
    if constexpr (kAct == Act::kReLU) {
      return vmaxq_f32(x, vdupq_n_f32(0.f));
    } else if constexpr (kAct == Act::kClip) {
      return vminq_f32(vmaxq_f32(x, alpha), beta);
    } else if constexpr (kAct == Act::kLeaky) {
      return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(0.f)), x, vmulq_f32(x, alpha));
    } else {
      return x;
    }
  }

  // Called on every run of n values once they are stored.
  __attribute__((always_inline)) void finish(float* p, size_t n) const {
    if constexpr (kAct == Act::kOther) activate_inplace(p, n, *spec);
  }
};

// Calls fn(Epilogue<A>(act)) for the A that computes `act`: the caller's whole loop
// nest is instantiated once per kind, so no store branches on the activation.
template <class Fn>
inline void with_epilogue(const ActivationSpec& act, Fn&& fn) {
  using T = fb::ActivationType;
  switch (act.type) {
    case T::None: fn(Epilogue<Act::kNone>(act)); break;
    case T::ReLU: fn(Epilogue<Act::kReLU>(act)); break;
    case T::Clip: fn(Epilogue<Act::kClip>(act)); break;
    case T::LeakyReLU: fn(Epilogue<Act::kLeaky>(act)); break;
    default: fn(Epilogue<Act::kOther>(act)); break;
  }
}

}  // namespace kestrel::kernels::arm::gemm
