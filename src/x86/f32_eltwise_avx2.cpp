// Eltwise Sum (with coefficients), Prod and Max over any number of inputs in one pass
// (x86/f32_eltwise_x86.h instantiated for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_eltwise_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const EltwiseKernel kF32Eltwise_Avx2 = {"f32_eltwise_avx2", Isa::kAvx2, misc_avx2::eltwise_supports, 1e-4, misc_avx2::eltwise_x86<misc_avx2::VecAvx2>};

}  // namespace kestrel::kernels::x86
