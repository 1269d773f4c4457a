// Eltwise Sum (with coefficients), Prod and Max over any number of inputs in one pass
// (x86/f32_eltwise_x86.h instantiated for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_eltwise_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const EltwiseKernel kF32Eltwise_Avx512 = {"f32_eltwise_avx512", Isa::kAvx512, misc_avx512::eltwise_supports, 1e-4, misc_avx512::eltwise_x86<misc_avx512::VecAvx512>};

}  // namespace kestrel::kernels::x86
