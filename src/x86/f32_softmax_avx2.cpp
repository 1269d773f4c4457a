// Softmax and LogSoftmax along any axis: contiguous lines, or blocks of neighbouring
// strided lines vectorised across them (x86/f32_softmax_x86.h for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_softmax_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using SoftmaxImpl_Avx2 = misc_avx2::SoftmaxX86<misc_avx2::VecAvx2>;

const SoftmaxKernel kF32Softmax_Avx2 = {"f32_softmax_avx2", Isa::kAvx2, SoftmaxImpl_Avx2::supports, 1e-4,
                                          SoftmaxImpl_Avx2::run};

}  // namespace kestrel::kernels::x86
