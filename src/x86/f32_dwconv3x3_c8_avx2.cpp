// 3x3 depthwise convolution, stride 1 and 2, AVX2 + FMA, with the 8 channels of a group
// along the vectors (f32_dwconv_cvec_x86.h): planar or 8-channel blocked operands.
#include "x86/f32_dwconv_cvec_x86.h"
#include "x86/f32_dwconv_avx2.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32DwConv3x3Cvec_Avx2 = dwconv::cvec_kernel<VecAvx2, 3>("f32_dwconv3x3_c8_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
