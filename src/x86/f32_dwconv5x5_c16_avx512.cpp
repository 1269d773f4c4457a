// 5x5 depthwise convolution, stride 1 and 2, AVX-512F, with the 16 channels of a group
// along the vectors (f32_dwconv_cvec_x86.h): planar or 16-channel blocked operands.
#include "x86/f32_dwconv_cvec_x86.h"
#include "x86/f32_dwconv_avx512.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32DwConv5x5Cvec_Avx512 = dwconv::cvec_kernel<VecAvx512, 5>("f32_dwconv5x5_c16_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
