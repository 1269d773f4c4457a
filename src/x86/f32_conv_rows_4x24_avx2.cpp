// Stem convolutions (few input channels, 3x3 to 11x11, stride 1 or 2) on AVX2 + FMA
// from padded input rows, no im2col: 4 x 24 register tiles (f32_conv_rows_x86.h).
#include "x86/f32_conv_rows_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32ConvRows_4x24_Avx2 = conv_rows::kernel<F32x8, 4, 3>("f32_conv_rows_4x24_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
