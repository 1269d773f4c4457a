// 3x3 depthwise convolution, stride 1, same padding, on maps up to 32 wide, AVX2 + FMA:
// each channel plane read flattened, in place (f32_dwconv3x3_flat_x86.h).
#include "x86/f32_dwconv3x3_flat_x86.h"
#include "x86/f32_dwconv_avx2.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32DwConv3x3Flat_Avx2 = dwconv3x3::flat_kernel<VecAvx2>("f32_dwconv3x3_flat_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
