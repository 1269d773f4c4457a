// int8 convolution on AVX-VNNI (256-bit vpdpbusd, VEX-encoded: x86 CPUs with it and no
// AVX-512, as Alder Lake): 6 output channels x 16 pixels a tile (i8_conv_avx2.h).
#include "x86/i8_conv_avx2.h"

KESTREL_X86_NS_BEGIN
namespace {

// u8 weights (w + 128) broadcast, s8 input quads; sums start from -128 x the input sum.
struct DotVnni {
  static constexpr int kMR = 6;  // 12 accumulators, two input vectors, one broadcast
  static constexpr int kOffset = 128;
  using In = __m256i;
  static KESTREL_X86_INLINE In input(__m256i x) { return x; }
  static KESTREL_X86_INLINE __m256i madd(__m256i acc, __m256i w, In x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
  static KESTREL_X86_INLINE __m256i add_sum(__m256i s, __m256i quads) {
    return _mm256_dpbusd_avx_epi32(s, _mm256_set1_epi8(1), quads);
  }
  static KESTREL_X86_INLINE __m256i start(__m256i sums) {
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 7));
  }
};

using K = i8gemm::Kernel<DotVnni>;

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8Conv1x1_6x16_AvxVnni = K::pointwise("i8_conv1x1_6x16_avxvnni", kI8NeedsDot8);
const I8ConvKernel kI8ConvIm2col_6x16_AvxVnni = K::im2col("i8_conv_im2col_6x16_avxvnni", kI8NeedsDot8);

}  // namespace kestrel::kernels::x86
