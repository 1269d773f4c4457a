// The int8 kernels' epilogue (i8_neon.h's kernels): what they add to the fp32 kernels'
// (f32_gemm_epilogue_neon.h).
#pragma once
#include <cstddef>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm::i8 {

// The int8 epilogues' finish(): an activation the epilogue does not vectorize runs as
// the NEON activation kernel (I8MapKernel::dequantize's contract, as on x86), where the
// fp32 kernels' epilogue keeps the reference loop their planar twins agree with.
template <class Epi>
inline __attribute__((always_inline)) void finish(const Epi& epi, float* p, size_t n) {
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<gemm::Act::kOther>>) kF32Activation_Neon.run(*epi.spec, p, p, n);
}

}  // namespace kestrel::kernels::arm::i8
