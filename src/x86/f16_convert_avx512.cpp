// fp32 <-> fp16 arrays, 16 lanes (AVX-512F's vcvtps2ph / vcvtph2ps; x86/f16_convert_x86.h).
#include "x86/f16_convert_x86.h"
#include "x86/x86_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns that _mm512_undefined_ps() / _mm256_undefined_si256() (the pass-through
// operands of the unmasked conversions) "may be used uninitialized": a false positive
// in its headers (as x86/x86_math.h says).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace kestrel::kernels::x86 {
namespace {

struct Lanes16 {
  static constexpr size_t kWidth = 16;
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  static __m512 load_half(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store_half(uint16_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static __m512 round_trip(__m512 v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
};

}  // namespace

const HalfKernel kF16Convert_Avx512 = {"f16_convert_avx512", Isa::kAvx512, f16c::to_half<Lanes16>,
                                       f16c::to_float<Lanes16>, f16c::round<Lanes16>, nullptr, nullptr};

}  // namespace kestrel::kernels::x86
