// int8 depthwise K x K convolution on AVX-512F (i8_dwconv_planar_x86.h): 32 output pixels
// of a row (2 vectors) per step, for CPUs without VNNI or VBMI, and the maps the VBMI
// and VNNI kernels leave.
#include "x86/i8_avx512.h"
#include "x86/i8_dwconv_planar_x86.h"

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_16_Avx512 = i8dw::kernel<F32x16, 3>("i8_dwconv3x3_16_avx512", Isa::kAvx512);
const I8ConvKernel kI8DwConv5x5_16_Avx512 = i8dw::kernel<F32x16, 5>("i8_dwconv5x5_16_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
