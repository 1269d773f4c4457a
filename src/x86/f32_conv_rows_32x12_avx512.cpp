// Stem convolutions writing a blocked map (16-channel blocks) on AVX-512F from padded
// input rows: 32 output channels (2 vectors) x 12 pixels per channel tile
// (f32_conv_rows_x86.h).
#include "x86/f32_conv_rows_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32ConvRows_32x12_Avx512 =
    conv_rows::blocked_kernel<F32x16, 2, 12>("f32_conv_rows_32x12_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
