// 3x3 depthwise convolution, stride 1, same padding, on maps up to 32 wide, AVX-512F:
// each channel plane read flattened, in place (f32_dwconv3x3_flat_x86.h).
#include "x86/f32_dwconv3x3_flat_x86.h"
#include "x86/f32_dwconv_avx512.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32DwConv3x3Flat_Avx512 =
    dwconv3x3::flat_kernel<VecAvx512>("f32_dwconv3x3_flat_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
