// Binary ops add/sub/mul/div/max/min in the array and scalar forms
// (x86/f32_binary_x86.h instantiated for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_binary_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const BinaryKernel kF32Binary_Avx512 = {"f32_binary_avx512", Isa::kAvx512, misc_avx512::binary_supports, 1e-4, misc_avx512::binary_x86<misc_avx512::VecAvx512>};

}  // namespace kestrel::kernels::x86
