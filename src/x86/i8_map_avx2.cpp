// The int8 map passes (i8_map_x86.h) on AVX2.
#include "x86/i8_avx2.h"
#include "x86/i8_map_x86.h"

KESTREL_X86_NS_BEGIN
namespace {

// quantize_i8x8 as integer-valued floats (exact: |q| <= 127).
__m256 quantize_floats(__m256 x, __m256 scale) { return _mm256_cvtepi32_ps(quantize_i8x8(x, scale)); }

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8MapKernel kI8Map_Avx2 = {"i8_map_avx2", Isa::kAvx2, i8map::quantize<F32x8, quantize_floats>,
                                 i8map::dequantize<F32x8>, i8map::add<F32x8>};

}  // namespace kestrel::kernels::x86
