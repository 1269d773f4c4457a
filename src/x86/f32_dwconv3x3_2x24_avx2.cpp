// 3x3 depthwise convolution, stride 1 and 2, AVX2 + FMA: 2 output rows x up to 3 x 8
// pixels per step (6 accumulators and 9 broadcast taps in the 16 ymm registers), the
// algorithm of f32_dwconv3x3_x86.h. vmaskmov loads and stores for the ends of rows.
#include "x86/f32_dwconv3x3_x86.h"
#include "x86/f32_dwconv_avx2.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32DwConv3x3_Avx2 = dwconv3x3::planar_kernel<VecAvx2>("f32_dwconv3x3_2x24_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
