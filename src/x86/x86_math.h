// Vector traits and vector math for the x86 pooling, GEMV, elementwise and softmax
// kernels. Every algorithm is written once as a template over a traits type V
// (VecAvx512: 16 floats of __m512, VecAvx2: 8 floats of __m256) and instantiated in
// an _avx512.cpp and an _avx2.cpp file.
//
// ODR: the including translation unit must define KESTREL_X86_MISC_NS (misc_avx512
// or misc_avx2) first. Everything here lives in kestrel::kernels::x86::<that name>,
// so the copies compiled with different ISA flags never share a symbol and the
// linker cannot hand the AVX-512 copy of an inline function to the AVX2 path.
#pragma once
#include <immintrin.h>

#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns that _mm512_undefined_ps() (the pass-through operand of the unmasked
// AVX-512 intrinsics) "may be used uninitialized": a false positive in its headers.
// Only the kernel translation units that include this header see the pragma.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstddef>
#include <cstdint>

#ifndef KESTREL_X86_MISC_NS
#error "define KESTREL_X86_MISC_NS (misc_avx512 or misc_avx2) before including x86/x86_math.h"
#endif

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

#ifdef __AVX512F__
// 16 floats; masks are __mmask16 (AVX-512F only: bitwise float ops go through the
// integer domain, which AVX-512F has).
struct VecAvx512 {
  using reg = __m512;
  using mask = __mmask16;
  static constexpr size_t kWidth = 16;

  static reg zero() { return _mm512_setzero_ps(); }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  // 16 IEEE halves, widened exactly.
  static reg load(const uint16_t* p) {
    return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static mask tail_mask(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  // The first n (< 16) floats of p, zeros above; masked lanes are never touched.
  static reg load_partial(const float* p, size_t n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
  static void store_partial(float* p, reg v, size_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }

  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  // a * b + c, and c - a * b.
  static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg fnmadd(reg a, reg b, reg c) { return _mm512_fnmadd_ps(a, b, c); }
  // a > b ? a : b and a < b ? a : b (the second operand when either is NaN).
  static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  static reg min(reg a, reg b) { return _mm512_min_ps(a, b); }

  static mask gt(reg a, reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static mask lt(reg a, reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static mask is_nan(reg a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static mask mask_or(mask a, mask b) { return static_cast<mask>(a | b); }
  // m ? t : f, lane by lane.
  static reg select(mask m, reg t, reg f) { return _mm512_mask_blend_ps(m, f, t); }

  static reg abs(reg a) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
  }
  // |mag| with the sign of sgn.
  static reg copysign(reg mag, reg sgn) {
    const __m512i m = _mm512_set1_epi32(0x7fffffff);
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(m, _mm512_castps_si512(mag), _mm512_castps_si512(sgn), 0xca));
  }
  static reg neg(reg a) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(int(0x80000000u))));
  }
  // Round to nearest even.
  static reg round(reg a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n1 and 2^n2 with n1 = n >> 1, n2 = n - n1 for an integral-valued n in
  // [-151, 129], so that both factors are normal floats.
  static void pow2_split(reg n, reg& s1, reg& s2) {
    const __m512i ni = _mm512_cvtps_epi32(n);
    const __m512i n1 = _mm512_srai_epi32(ni, 1);
    const __m512i n2 = _mm512_sub_epi32(ni, n1);
    const __m512i bias = _mm512_set1_epi32(127);
    s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
    s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
  }
  // The first n (< 16) floats of p, `fill` above.
  static reg load_partial_or(const float* p, size_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tail_mask(n), p);
  }
  // even = p[0, 2, .., 30], odd = p[1, 3, .., 31].
  static void deinterleave(const float* p, reg& even, reg& odd) {
    const reg a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    even = _mm512_permutex2var_ps(a, ie, b);
    odd = _mm512_permutex2var_ps(a, io, b);
  }
  static float reduce_add(reg a) { return _mm512_reduce_add_ps(a); }
  static float reduce_max(reg a) { return _mm512_reduce_max_ps(a); }
};
#endif  // __AVX512F__

// 8 floats; masks are all-ones/all-zeros lanes of __m256.
struct VecAvx2 {
  using reg = __m256;
  using mask = __m256;
  static constexpr size_t kWidth = 8;

  static reg zero() { return _mm256_setzero_ps(); }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  // 8 IEEE halves, widened exactly (F16C).
  static reg load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static __m256i tail_mask(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // VMASKMOV: masked-off lanes are neither read nor written (no fault past the end).
  static reg load_partial(const float* p, size_t n) { return _mm256_maskload_ps(p, tail_mask(n)); }
  static void store_partial(float* p, reg v, size_t n) { _mm256_maskstore_ps(p, tail_mask(n), v); }

  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg fnmadd(reg a, reg b, reg c) { return _mm256_fnmadd_ps(a, b, c); }
  static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  static reg min(reg a, reg b) { return _mm256_min_ps(a, b); }

  static mask gt(reg a, reg b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static mask lt(reg a, reg b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static mask is_nan(reg a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static mask mask_or(mask a, mask b) { return _mm256_or_ps(a, b); }
  static reg select(mask m, reg t, reg f) { return _mm256_blendv_ps(f, t, m); }

  static reg abs(reg a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
  static reg copysign(reg mag, reg sgn) {
    const reg s = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sgn));
  }
  static reg neg(reg a) { return _mm256_xor_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)))); }
  static reg round(reg a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void pow2_split(reg n, reg& s1, reg& s2) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  }
  static reg load_partial_or(const float* p, size_t n, float fill) {
    const __m256i m = tail_mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  // even = p[0, 2, .., 14], odd = p[1, 3, .., 15].
  static void deinterleave(const float* p, reg& even, reg& odd) {
    const reg a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    // [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6] by 64-bit lanes 0, 2, 1, 3.
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
  }
  static float reduce_add(reg a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(reg a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

// exp(x), max relative error about 2 ulp wherever the result is a normal float (the
// algorithm of arm/neon_math.h): x = n ln2 + r, |r| <= ln2/2, with a Cody-Waite split
// of ln2; exp(r) - 1 by the degree-6 polynomial of Cephes' expf; 2^n applied as two
// normal factors so that large x overflows to +inf and very negative x underflows
// through the denormals to 0. NaN propagates (max/min below put x second).
template <class V>
inline typename V::reg exp_v(typename V::reg x) {
  using R = typename V::reg;
  // max(lo, x) keeps a NaN x (the second operand is returned when either is NaN).
  x = V::min(V::set1(89.f), V::max(V::set1(-104.f), x));
  const R n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  R r = V::fnmadd(n, V::set1(0.693359375f), x);
  r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
  R p = V::set1(1.9875691500e-4f);
  p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
  p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
  p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
  p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
  p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
  const R em1 = V::fmadd(V::mul(r, r), p, r);
  R s1, s2;
  V::pow2_split(n, s1, s2);
  return V::mul(V::fmadd(em1, s1, s1), s2);
}

// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), odd-extended.
template <class V>
inline typename V::reg erf_v(typename V::reg x) {
  using R = typename V::reg;
  const R ax = V::abs(x);
  const R one = V::set1(1.f);
  const R t = V::div(one, V::fmadd(ax, V::set1(0.3275911f), one));
  R p = V::set1(1.061405429f);
  p = V::fmadd(p, t, V::set1(-1.453152027f));
  p = V::fmadd(p, t, V::set1(1.421413741f));
  p = V::fmadd(p, t, V::set1(-0.284496736f));
  p = V::fmadd(p, t, V::set1(0.254829592f));
  p = V::mul(p, t);
  const R e = exp_v<V>(V::neg(V::mul(ax, ax)));
  return V::copysign(V::fnmadd(p, e, one), x);
}

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
