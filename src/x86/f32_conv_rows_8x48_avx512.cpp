// Stem convolutions (few input channels, 3x3 to 11x11, stride 1 or 2) on AVX-512F from
// padded input rows, no im2col: 8 x 48 register tiles (f32_conv_rows_x86.h).
#include "x86/f32_conv_rows_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32ConvRows_8x48_Avx512 = conv_rows::kernel<F32x16, 8, 3>("f32_conv_rows_8x48_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
