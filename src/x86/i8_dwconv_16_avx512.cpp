// int8 depthwise K x K convolution on AVX-512F (i8_dwconv_planar_x86.h): 32 output pixels
// of a row (2 vectors) per step, for CPUs without VNNI or VBMI, and the maps the VBMI
// and VNNI kernels leave.
#include "x86/i8_avx512.h"
#include "x86/i8_dwconv_planar_x86.h"

KESTREL_X86_NS_BEGIN

template <>
struct I8DwOps<F32x16> {
  using Requant = Requant16;
  static Requant requant(const ActivationSpec& act, float scale) { return requant16_of(act, scale); }

  static KESTREL_X86_INLINE __m512 load_row(const float* in, int n, __m512 s) {
    return quantize_i8x16(_mm512_maskz_loadu_ps(F32x16::lanes(n), in), s);
  }
  static KESTREL_X86_INLINE __m512 load_row(const int8_t* in, int n, __m512) {
    return _mm512_maskz_cvtepi32_ps(F32x16::lanes(n), load_i8x16(in));
  }
  static KESTREL_X86_INLINE void split_store(float* pe, float* po, __m512 a, __m512 b, int n) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    _mm512_mask_storeu_ps(pe, F32x16::lanes((n + 1) / 2), _mm512_permutex2var_ps(a, even, b));
    _mm512_mask_storeu_ps(po, F32x16::lanes(n / 2), _mm512_permutex2var_ps(a, odd, b));
  }
  template <class Out, class Epi>
  static KESTREL_X86_INLINE void store_sums(Out* dst, __m512 sum, __m512 d, __m512 b, int n, const Requant& rq,
                                            const Epi& epi) {
    store_sums_x16(dst, sum, d, b, n, rq, epi);
  }
};

KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_16_Avx512 = i8dw::kernel<F32x16, 3>("i8_dwconv3x3_16_avx512", Isa::kAvx512);
const I8ConvKernel kI8DwConv5x5_16_Avx512 = i8dw::kernel<F32x16, 5>("i8_dwconv5x5_16_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
