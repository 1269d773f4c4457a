// fp32 <-> fp16 arrays, 8 lanes (F16C with AVX2; x86/f16_convert_x86.h).
#include "x86/f16_convert_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {

struct Lanes8 {
  static constexpr size_t kWidth = 8;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static __m256 load_half(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store_half(uint16_t* p, __m256 v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static __m256 round_trip(__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
};

}  // namespace

const HalfKernel kF16Convert_Avx2 = {"f16_convert_avx2", Isa::kAvx2, f16c::to_half<Lanes8>, f16c::to_float<Lanes8>,
                                     f16c::round<Lanes8>, nullptr, nullptr};

}  // namespace kestrel::kernels::x86
