// Dense 3x3 stride-1 convolution by Winograd F(4x4, 3x3) on AVX-512F: 16 tiles per
// vector, the 36 products per 8-channel panel on the 8 x 48 microkernel.
// Instantiates src/x86/f32_conv_winograd43_x86.h with F32x16.
#include "x86/f32_conv_winograd43_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32ConvWinograd43_Avx512 = wino43::kernel<F32x16, 8, 3>("f32_conv_winograd43_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
