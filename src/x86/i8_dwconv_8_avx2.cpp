// int8 depthwise K x K convolution on AVX2 (i8_dwconv_planar_x86.h): 16 output pixels of
// a row (2 vectors) per step, for x86 CPUs without AVX-512. Without it, these layers ran
// the fp32 kernels on a quantized copy of the input and dequantized their sums in a
// second pass: two more passes over the maps, 2-4x the fp32 layer's time.
#include "x86/i8_avx2.h"
#include "x86/i8_dwconv_planar_x86.h"

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_8_Avx2 = i8dw::kernel<F32x8, 3>("i8_dwconv3x3_8_avx2", Isa::kAvx2);
const I8ConvKernel kI8DwConv5x5_8_Avx2 = i8dw::kernel<F32x8, 5>("i8_dwconv5x5_8_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
