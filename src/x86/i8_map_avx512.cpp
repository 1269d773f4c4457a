// The int8 map passes (i8_map_x86.h) on AVX-512F.
#include "x86/i8_avx512.h"
#include "x86/i8_map_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const I8MapKernel kI8Map_Avx512 = {"i8_map_avx512", Isa::kAvx512, i8map::quantize<F32x16, quantize_i8x16>,
                                   i8map::dequantize<F32x16>, i8map::add<F32x16>, i8_sum_avx2,
                                   i8_max_avx2};

}  // namespace kestrel::kernels::x86
