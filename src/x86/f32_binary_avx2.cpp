// Binary ops add/sub/mul/div/max/min in the array and scalar forms
// (x86/f32_binary_x86.h instantiated for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_binary_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const BinaryKernel kF32Binary_Avx2 = {"f32_binary_avx2", Isa::kAvx2, misc_avx2::binary_supports, 1e-4, misc_avx2::binary_x86<misc_avx2::VecAvx2>};

}  // namespace kestrel::kernels::x86
