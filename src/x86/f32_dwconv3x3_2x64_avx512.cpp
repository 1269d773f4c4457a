// 3x3 depthwise convolution, stride 1 and 2, AVX-512F: 2 output rows x up to 4 x 16
// pixels per step (8 accumulators, 9 broadcast taps, the bias), the algorithm of
// f32_dwconv3x3_x86.h. Masked loads and stores for the ends of rows.
#include "x86/f32_dwconv3x3_x86.h"
#include "x86/f32_dwconv_avx512.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32DwConv3x3_Avx512 = dwconv3x3::planar_kernel<VecAvx512>("f32_dwconv3x3_2x64_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
