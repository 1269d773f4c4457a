// y = x * scale + shift over an array: BatchNorm (folded at load) and Scale.
#include "arm/f32_affine_neon.h"

#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {
namespace {

void run(const float* src, float* dst, size_t n, float scale, float shift) {
  affine_row_q(src, dst, n, vdupq_n_f32(scale), vdupq_n_f32(shift));
}

}  // namespace

const AffineKernel kF32Affine_Neon = {"f32_affine_neon", Isa::kNeon, 1e-4, run};

}  // namespace kestrel::kernels::arm
