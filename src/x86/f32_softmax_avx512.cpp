// Softmax and LogSoftmax along any axis: contiguous lines, or blocks of neighbouring
// strided lines vectorised across them (x86/f32_softmax_x86.h for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_softmax_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using SoftmaxImpl_Avx512 = misc_avx512::SoftmaxX86<misc_avx512::VecAvx512>;

const SoftmaxKernel kF32Softmax_Avx512 = {"f32_softmax_avx512", Isa::kAvx512, SoftmaxImpl_Avx512::supports, 1e-4,
                                          SoftmaxImpl_Avx512::run};

}  // namespace kestrel::kernels::x86
