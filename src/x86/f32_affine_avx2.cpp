// y = x * scale + shift over an array: BatchNorm (folded at load) and Scale
// (x86/f32_affine_x86.h instantiated for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_affine_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const AffineKernel kF32Affine_Avx2 = {"f32_affine_avx2", Isa::kAvx2, 1e-4, misc_avx2::affine_row_x86<misc_avx2::VecAvx2>};

}  // namespace kestrel::kernels::x86
