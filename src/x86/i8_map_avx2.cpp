// The int8 map passes (i8_map_x86.h) on AVX2.
#include <algorithm>

#include "x86/i8_avx2.h"
#include "x86/i8_map_x86.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

// quantize_i8x8 as integer-valued floats (exact: |q| <= 127).
__m256 quantize_floats(__m256 x, __m256 scale) { return _mm256_cvtepi32_ps(quantize_i8x8(x, scale)); }

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

// vpsadbw sums unsigned bytes, so each q is read as q + 128 (the sign bit flipped) and
// 128 n taken off at the end; four 64-bit lanes, each at most 255 * n / 4.
int32_t i8_sum_avx2(const int8_t* q, size_t n) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), zero = _mm256_setzero_si256();
  __m256i acc = zero;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i)), flip);
    acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
  }
  const __m128i half = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  const int64_t biased = _mm_cvtsi128_si64(half) + _mm_extract_epi64(half, 1);
  int32_t s = static_cast<int32_t>(biased - 128 * static_cast<int64_t>(i));
  for (; i < n; ++i) s += q[i];
  return s;
}

int8_t i8_max_avx2(const int8_t* q, size_t n) {
  int8_t m = q[0];
  size_t i = 0;
  if (n >= 32) {
    __m256i acc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    for (i = 32; i + 32 <= n; i += 32) {
      acc = _mm256_max_epi8(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i)));
    }
    alignas(32) int8_t lanes[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
    for (int8_t v : lanes) m = std::max(m, v);
  }
  for (; i < n; ++i) m = std::max(m, q[i]);
  return m;
}

const I8MapKernel kI8Map_Avx2 = {"i8_map_avx2", Isa::kAvx2, i8map::quantize<F32x8, quantize_floats>,
                                 i8map::dequantize<F32x8>, i8map::add<F32x8>, i8_sum_avx2,
                                 i8_max_avx2};

}  // namespace kestrel::kernels::x86
