// int8 convolution on plain AVX2 (vpmaddubsw; x86 CPUs without VNNI, as Haswell to Zen 3):
// 4 output channels x 16 pixels a tile (i8_conv_avx2.h).
#include "x86/i8_conv_avx2.h"

KESTREL_X86_NS_BEGIN
namespace {

// vpmaddubsw(|x|, w with x's sign): pairs within int16 (i8_conv_avx2.h), widened by
// vpmaddwd. The weights as they are; no input sums.
struct DotMaddubs {
  static constexpr int kMR = 4;  // 8 accumulators, two inputs and their magnitudes, a broadcast, temporaries
  static constexpr int kOffset = 0;
  struct In {
    __m256i x, mag;
  };
  static KESTREL_X86_INLINE In input(__m256i x) { return {x, _mm256_abs_epi8(x)}; }
  static KESTREL_X86_INLINE __m256i madd(__m256i acc, __m256i w, const In& in) {
    const __m256i pairs = _mm256_maddubs_epi16(in.mag, _mm256_sign_epi8(w, in.x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static KESTREL_X86_INLINE __m256i add_sum(__m256i s, __m256i) { return s; }
  static KESTREL_X86_INLINE __m256i start(__m256i) { return _mm256_setzero_si256(); }
};

using K = i8gemm::Kernel<DotMaddubs>;

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8Conv1x1_4x16_Avx2 = K::pointwise("i8_conv1x1_4x16_avx2", kI8NeedsNothing);
const I8ConvKernel kI8ConvIm2col_4x16_Avx2 = K::im2col("i8_conv_im2col_4x16_avx2", kI8NeedsNothing);

}  // namespace kestrel::kernels::x86
