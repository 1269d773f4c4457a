// int8 depthwise K x K convolution on AVX2 (i8_dwconv_planar_x86.h): 16 output pixels of
// a row (2 vectors) per step, for x86 CPUs without AVX-512. Without it, these layers ran
// the fp32 kernels on a quantized copy of the input and dequantized their sums in a
// second pass: two more passes over the maps, 2-4x the fp32 layer's time.
#include "x86/i8_avx2.h"
#include "x86/i8_dwconv_planar_x86.h"

KESTREL_X86_NS_BEGIN

template <>
struct I8DwOps<F32x8> {
  using Requant = Requant8;
  static Requant requant(const ActivationSpec& act, float scale) { return requant8_of(act, scale); }

  // Exact integers in range: the conversion back does not round.
  static KESTREL_X86_INLINE __m256 load_row(const float* in, int n, __m256 s) {
    const __m256 x = n >= 8 ? _mm256_loadu_ps(in) : F32x8::load_partial(in, n);
    return _mm256_cvtepi32_ps(quantize_i8x8(x, s));
  }
  // Eight bytes whatever n: maps are followed by kOverreadBytes.
  static KESTREL_X86_INLINE __m256 load_row(const int8_t* in, int n, __m256) {
    const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in))));
    return n >= 8 ? x : _mm256_and_ps(x, _mm256_castsi256_ps(F32x8::lanes(n)));
  }
  static KESTREL_X86_INLINE void split_store(float* pe, float* po, __m256 a, __m256 b, int n) {
    // Per 128-bit lane: a's and then b's even (odd) pairs; the qword permute orders them.
    const __m256 e = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))), _MM_SHUFFLE(3, 1, 2, 0)));
    const __m256 o = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0)));
    if (n >= 16) {
      _mm256_storeu_ps(pe, e);
      _mm256_storeu_ps(po, o);
    } else {
      F32x8::store_partial(pe, e, (n + 1) / 2);
      F32x8::store_partial(po, o, n / 2);
    }
  }
  template <class Out, class Epi>
  static KESTREL_X86_INLINE void store_sums(Out* dst, __m256 sum, __m256 d, __m256 b, int n, const Requant& rq,
                                            const Epi& epi) {
    store_sums_x8(dst, sum, d, b, n, rq, epi);
  }
};

KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_8_Avx2 = i8dw::kernel<F32x8, 3>("i8_dwconv3x3_8_avx2", Isa::kAvx2);
const I8ConvKernel kI8DwConv5x5_8_Avx2 = i8dw::kernel<F32x8, 5>("i8_dwconv5x5_8_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
