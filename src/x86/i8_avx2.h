// What the 256-bit int8 kernels share (AVX2; the AVX-VNNI kernels include it too):
// quantize_i8 on eight floats, sixteen int32 lanes to bytes, and the int8 maps'
// requantization (kernels/i8_reference.h), the counterparts of i8_avx512.h.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_x86.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN

// quantize_i8: x * scale, NaN to 0, clamped to +-127, rounded to nearest even (vcvtps2dq
// in the default rounding mode, as nearbyint), as int32 lanes.
KESTREL_X86_INLINE __m256i quantize_i8x8(__m256 x, __m256 scale) {
  __m256 v = _mm256_mul_ps(x, scale);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  const __m256 lim = _mm256_set1_ps(static_cast<float>(kI8Max));
  return _mm256_cvtps_epi32(_mm256_min_ps(lim, _mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), lim), v)));
}

// The low byte of each int32 lane of a and then of b, as sixteen bytes: a truncation, so
// a NaN converted to 0x80000000 gives 0 as vpmovdb does (no saturating pack).
KESTREL_X86_INLINE __m128i low_bytes16(__m256i a, __m256i b) {
  // Per 128-bit lane: bytes 0, 4, 8, 12 into dword 0 (a) or dword 1 (b).
  const __m256i pick_a = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i pick_b = _mm256_setr_epi8(-1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1);
  // dwords: a0-3, b0-3, -, -, a4-7, b4-7, -, -
  const __m256i t = _mm256_or_si256(_mm256_shuffle_epi8(a, pick_a), _mm256_shuffle_epi8(b, pick_b));
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(t, _mm256_setr_epi32(0, 4, 1, 5, 2, 3, 6, 7)));
}

// Sixteen floats at p, the first n (the others read as zero), quantized to bytes.
KESTREL_X86_INLINE __m128i quantize_bytes16(const float* p, int n, __m256 scale) {
  if (n >= 16) {
    return low_bytes16(quantize_i8x8(_mm256_loadu_ps(p), scale), quantize_i8x8(_mm256_loadu_ps(p + 8), scale));
  }
  return low_bytes16(quantize_i8x8(F32x8::load_partial(p, n), scale),
                     quantize_i8x8(F32x8::load_partial(p + 8, n - 8), scale));
}

// The first n (<= 16) bytes of v at p.
KESTREL_X86_INLINE void store_bytes(int8_t* p, __m128i v, int n) {
  if (n >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
  } else if (n > 0) {
    alignas(16) int8_t b[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(b), v);
    std::memcpy(p, b, static_cast<size_t>(n));
  }
}

using Requant8 = RequantV<F32x8>;  // i8_x86.h
inline Requant8 requant8_of(const ActivationSpec& act, float scale) { return requant_of<F32x8>(act, scale); }

// requantize_i8 on eight int32 sums: the fma, LeakyReLU where Epi is it, NaN to 0 (or
// left to the conversion), the clamp, the rounding to nearest even.
template <class Epi>
KESTREL_X86_INLINE __m256i requantize_x8(__m256 sum, __m256 m, __m256 c, const Requant8& rq, const Epi& epi) {
  __m256 v = _mm256_fmadd_ps(sum, m, c);
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<F32x8, gemm::Act::kLeaky>>) v = epi(v);
  if (rq.nan_to_zero) v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  return _mm256_cvtps_epi32(_mm256_min_ps(rq.hi, _mm256_max_ps(rq.lo, v)));
}
template <class Epi>
KESTREL_X86_INLINE __m256i requantize_x8(__m256i sum, __m256 m, __m256 c, const Requant8& rq, const Epi& epi) {
  return requantize_x8(_mm256_cvtepi32_ps(sum), m, c, rq, epi);
}

// The low byte of each int32 lane of a, as the low eight bytes (low_bytes16's
// truncation).
KESTREL_X86_INLINE __m128i low_bytes8(__m256i a) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                                        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i t = _mm256_shuffle_epi8(a, pick);
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(t, _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1)));
}

// Eight sums of one channel (as floats) out, the first n (<= 8): fp32, float(sum) * d + b
// and the activation (conv_reference_i8's order); or bytes requantized by rq, with d and
// b then the channel's factors m and c (store_sums_x16's counterpart).
template <class Epi>
KESTREL_X86_INLINE void store_sums_x8(float* dst, __m256 sum, __m256 d, __m256 b, int n, const Requant8&,
                                      const Epi& epi) {
  const __m256 y = epi(_mm256_add_ps(_mm256_mul_ps(sum, d), b));
  if (n >= 8) {
    _mm256_storeu_ps(dst, y);
  } else if (n > 0) {
    F32x8::store_partial(dst, y, n);
  }
}
template <class Epi>
KESTREL_X86_INLINE void store_sums_x8(int8_t* dst, __m256 sum, __m256 m, __m256 c, int n, const Requant8& rq,
                                      const Epi& epi) {
  const __m128i q = low_bytes8(requantize_x8(sum, m, c, rq, epi));
  if (n >= 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), q);
  } else {
    store_bytes(dst, q, n);
  }
}

template <>
struct I8Ops<F32x8> {
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
