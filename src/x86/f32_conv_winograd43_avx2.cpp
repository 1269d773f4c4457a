// Dense 3x3 stride-1 convolution by Winograd F(4x4, 3x3) on AVX2+FMA: 8 tiles per
// vector, the 36 products per 4-channel panel on the 4 x 24 microkernel.
// Instantiates src/x86/f32_conv_winograd43_x86.h with F32x8.
#include "x86/f32_conv_winograd43_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32ConvWinograd43_Avx2 = wino43::kernel<F32x8, 4, 3>("f32_conv_winograd43_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
