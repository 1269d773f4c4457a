// The int8 kernels' epilogue (i8_neon.h's kernels): what they add to the fp32 kernels'
// (f32_gemm_epilogue_neon.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "arm/i8_neon.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm::i8 {

// The int8 epilogues' finish(): an activation the epilogue does not vectorize runs as
// the NEON activation kernel (I8MapKernel::dequantize's contract, as on x86), where the
// fp32 kernels' epilogue keeps the reference loop their planar twins agree with.
// An int8 output's requantization (kernels/i8_reference.h): the factors of
// fma(float(sum), m, c) come per output channel; the bounds [lo, hi] once per layer.
struct Requant {
  float scale;
  int8x16_t lo, hi;
  // lo's 16 bytes, then hi's (the asm tiles' operand).
  const int8_t* bounds() const { return reinterpret_cast<const int8_t*>(&lo); }
};
static_assert(offsetof(Requant, hi) == offsetof(Requant, lo) + sizeof(int8x16_t), "bounds() reads lo, then hi");
inline Requant requant_of(const ActivationSpec& act, float scale) {
  int lo = 0, hi = 0;
  i8_output_bounds(act, scale, &lo, &hi);
  return {scale, vdupq_n_s8(static_cast<int8_t>(lo)), vdupq_n_s8(static_cast<int8_t>(hi))};
}

// True where the activation runs in the scaled domain of an int8 output, before the
// rounding (LeakyReLU; ReLU and Clip are the bounds, None nothing): i8::requantize's kAct.
template <class Epi>
constexpr bool kScaledAct = std::is_same_v<Epi, gemm::Epilogue<gemm::Act::kLeaky>>;

// Narrowed bytes clamped to the bounds.
KESTREL_I8_NEON_INLINE int8x16_t clamp(int8x16_t q, const Requant& rq) {
  return vminq_s8(vmaxq_s8(q, rq.lo), rq.hi);
}

template <class Epi>
inline __attribute__((always_inline)) void finish(const Epi& epi, float* p, size_t n) {
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<gemm::Act::kOther>>) kF32Activation_Neon.run(*epi.spec, p, p, n);
}

}  // namespace kestrel::kernels::arm::i8
