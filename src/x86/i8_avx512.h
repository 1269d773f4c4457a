// What the AVX-512 int8 kernels share: quantize_i8 on sixteen floats, vpdpbusd with a
// folded broadcast, and the int8 maps' loads, requantization and stores (AVX-512F only:
// vpmovsxbd and vpmovdb, no byte-masked moves, which need AVX-512BW).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"

#include "kernels/i8_reference.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_x86.h"
#include "x86/x86_kernels.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN

// quantize_i8 (kernels/i8_reference.h): x * scale, NaN to 0, clamped to +-127, rounded
// to nearest even, as an integer-valued float. Identical to the scalar steps: the clamp
// comes first, and vrndscaleps rounds to even as nearbyint does in the default rounding
// mode.
KESTREL_X86_INLINE __m512 quantize_i8x16(__m512 x, __m512 scale) {
  const __m512 v = _mm512_mul_ps(x, scale);
  const __mmask16 ok = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512 lim = _mm512_set1_ps(static_cast<float>(kI8Max));
  const __m512 c = F32x16::min(lim, F32x16::max(_mm512_sub_ps(_mm512_setzero_ps(), lim), v));
  return _mm512_maskz_roundscale_ps(ok, c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// acc += u (u8) . the dword at s (s8), broadcast to every lane: vpdpbusd with the
// broadcast folded into the instruction, for the VNNI kernels only (written out, so it
// needs no compiler flag: GCC 12 folds no broadcast from _mm512_dpbusd_epi32 and
// _mm512_set1_epi32, and copied every accumulator around each vpdpbusd, with spills:
// 2x slower on MobileNet's pointwise layers).
KESTREL_X86_INLINE __m512i dpbusd_broadcast(__m512i acc, __m512i u, const uint32_t* s) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*s));
  return acc;
}

// Sixteen bytes of an int8 map from p as int32 lanes. It reads 16 bytes whatever the
// lanes used: maps are followed by kOverreadBytes, and the caller masks the others.
KESTREL_X86_INLINE __m512i load_i8x16(const int8_t* p) {
  return _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Sixteen input values as int32 lanes: the lanes m of floats from p quantized (the others
// zero), or sixteen bytes of an int8 map as they are (all read: the callers mask them).
KESTREL_X86_INLINE __m512i load_q8x16(const float* p, __mmask16 m, __m512 scale) {
  // Exact integers in range: the conversion does not round.
  return _mm512_maskz_cvttps_epi32(0xFFFF, quantize_i8x16(_mm512_maskz_loadu_ps(m, p), scale));
}
KESTREL_X86_INLINE __m512i load_q8x16(const int8_t* p, __mmask16, __m512) { return load_i8x16(p); }

using Requant16 = RequantV<F32x16>;  // i8_x86.h
inline Requant16 requant16_of(const ActivationSpec& act, float scale) { return requant_of<F32x16>(act, scale); }

// requantize_i8 on sixteen sums held as integer-valued floats, up to its rounding: the
// fma, LeakyReLU where Epi is it (the scaled domain; ReLU and Clip are the bounds), NaN
// to 0 (or left to the conversion: Requant16), the clamp to [lo, hi]. store_i8x16 rounds to nearest even as it converts: the
// clamp may come before the rounding, the bounds being integers.
template <class Epi>
KESTREL_X86_INLINE __m512 requantize_x16(__m512 sum, __m512 m, __m512 c, const Requant16& rq, const Epi& epi) {
  __m512 v = _mm512_fmadd_ps(sum, m, c);
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<F32x16, gemm::Act::kLeaky>>) v = epi(v);
  if (rq.nan_to_zero) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
  return F32x16::min(rq.hi, F32x16::max(rq.lo, v));
}

// The first n (<= 16) of sixteen floats in [-127, 127] (requantize_x16's), rounded to
// nearest even, as bytes at p.
KESTREL_X86_INLINE void store_i8x16(int8_t* p, __m512 q, int n) {
  const __m512i v = _mm512_maskz_cvt_roundps_epi32(0xFFFF, q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (n >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_maskz_cvtepi32_epi8(0xFFFF, v));
  } else if (n > 0) {
    _mm512_mask_cvtepi32_storeu_epi8(p, F32x16::lanes(n), v);
  }
}

// Sixteen sums of one channel (as floats) out, the first n (<= 16): fp32, float(sum) *
// d + b and the activation (conv_reference_i8's order: a multiply, then an add); or
// bytes requantized by rq, d and b then the channel's factors m and c.
template <class Epi>
KESTREL_X86_INLINE void store_sums_x16(float* dst, __m512 sum, __m512 d, __m512 b, int n, const Requant16&,
                                       const Epi& epi) {
  const __m512 y = epi(_mm512_add_ps(_mm512_mul_ps(sum, d), b));
  if (n >= 16) {
    _mm512_storeu_ps(dst, y);
  } else if (n > 0) {
    _mm512_mask_storeu_ps(dst, F32x16::lanes(n), y);
  }
}
template <class Epi>
KESTREL_X86_INLINE void store_sums_x16(int8_t* dst, __m512 sum, __m512 m, __m512 c, int n, const Requant16& rq,
                                       const Epi& epi) {
  store_i8x16(dst, requantize_x16(sum, m, c, rq, epi), n);
}

template <>
struct I8Ops<F32x16> {
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
