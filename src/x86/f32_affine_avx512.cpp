// y = x * scale + shift over an array: BatchNorm (folded at load) and Scale
// (x86/f32_affine_x86.h instantiated for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_affine_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const AffineKernel kF32Affine_Avx512 = {"f32_affine_avx512", Isa::kAvx512, 1e-4, misc_avx512::affine_row_x86<misc_avx512::VecAvx512>};

}  // namespace kestrel::kernels::x86
