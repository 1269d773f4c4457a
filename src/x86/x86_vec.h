// Vector traits shared by the x86 kernels: one struct per register width, so that an
// algorithm is written once as `template <class V>` and instantiated in an _avx2.cpp
// (V = F32x8) and an _avx512.cpp (V = F32x16) translation unit.
//
//   F32x8   __m256, 8 floats  (AVX2 + FMA; defined wherever __AVX2__ and __FMA__ are)
//   F32x16  __m512, 16 floats (AVX-512F; defined wherever __AVX512F__ is)
//
// ODR: everything here, and everything a kernel header declares between
// KESTREL_X86_NS_BEGIN and KESTREL_X86_NS_END, lives in an inline namespace named
// after the flags of the including translation unit (avx512_tu / avx2_tu), so the
// AVX-512 copy of an inline function can never stand in for the AVX2 one at link time.
// Code refers to the names without that namespace (x86::F32x8 etc.).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__AVX512BF16__)
#define KESTREL_X86_TU_NS avx512bf16_tu
#elif defined(__AVX512F__)
#define KESTREL_X86_TU_NS avx512_tu
#elif defined(__AVXVNNI__)
#define KESTREL_X86_TU_NS avxvnni_tu
#elif defined(__AVX2__) && defined(__FMA__)
#define KESTREL_X86_TU_NS avx2_tu
#else
#error "x86_vec.h needs -mavx2 -mfma or -mavx512f (a *_avx2.cpp or *_avx512.cpp file)"
#endif

#define KESTREL_X86_NS_BEGIN \
  namespace kestrel::kernels::x86 {  \
  inline namespace KESTREL_X86_TU_NS {
#define KESTREL_X86_NS_END \
  }                        \
  }

#define KESTREL_X86_INLINE __attribute__((always_inline)) inline
// For a static_for body too large for GCC to inline by itself: it would call it, with a
// vzeroupper each ([&](auto i) KESTREL_LAMBDA_INLINE { ... }).
#define KESTREL_LAMBDA_INLINE __attribute__((always_inline))

KESTREL_X86_NS_BEGIN

// 8 floats in a ymm register.
struct F32x8 {
  using reg = __m256;
  static constexpr int kWidth = 8;
  static KESTREL_X86_INLINE reg zero() { return _mm256_setzero_ps(); }
  static KESTREL_X86_INLINE reg set1(float x) { return _mm256_set1_ps(x); }
  static KESTREL_X86_INLINE reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static KESTREL_X86_INLINE reg load(const float* p) { return _mm256_load_ps(p); }
  static KESTREL_X86_INLINE reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  // 8 IEEE halves widened (F16C; exact).
  static KESTREL_X86_INLINE reg loadu(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static KESTREL_X86_INLINE void store(float* p, reg v) { _mm256_store_ps(p, v); }
  static KESTREL_X86_INLINE void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  // a * b + c
  static KESTREL_X86_INLINE reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static KESTREL_X86_INLINE reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static KESTREL_X86_INLINE reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static KESTREL_X86_INLINE reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  static KESTREL_X86_INLINE reg min(reg a, reg b) { return _mm256_min_ps(a, b); }
  // x > 0 ? x : y (LeakyReLU)
  static KESTREL_X86_INLINE reg select_pos(reg x, reg y) {
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
  }
  // The first n (0..8) lanes; the others are not touched / read as zero.
  static KESTREL_X86_INLINE __m256i lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static KESTREL_X86_INLINE reg load_partial(const float* p, int n) { return _mm256_maskload_ps(p, lanes(n)); }
  static KESTREL_X86_INLINE void store_partial(float* p, reg v, int n) { _mm256_maskstore_ps(p, lanes(n), v); }
};

#if defined(__AVX512F__)
// 16 floats in a zmm register.
struct F32x16 {
  using reg = __m512;
  static constexpr int kWidth = 16;
  static KESTREL_X86_INLINE reg zero() { return _mm512_setzero_ps(); }
  static KESTREL_X86_INLINE reg set1(float x) { return _mm512_set1_ps(x); }
  static KESTREL_X86_INLINE reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static KESTREL_X86_INLINE reg load(const float* p) { return _mm512_load_ps(p); }
  static KESTREL_X86_INLINE reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  // 16 IEEE halves widened (exact).
  static KESTREL_X86_INLINE reg loadu(const uint16_t* p) {
    return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static KESTREL_X86_INLINE void store(float* p, reg v) { _mm512_store_ps(p, v); }
  static KESTREL_X86_INLINE void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static KESTREL_X86_INLINE reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static KESTREL_X86_INLINE reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static KESTREL_X86_INLINE reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  // The zero-masked forms with every lane set: the plain _mm512_max_ps/_mm512_min_ps
  // of GCC 12 start from _mm512_undefined_ps() and draw -Wmaybe-uninitialized.
  static KESTREL_X86_INLINE reg max(reg a, reg b) { return _mm512_maskz_max_ps(0xFFFF, a, b); }
  static KESTREL_X86_INLINE reg min(reg a, reg b) { return _mm512_maskz_min_ps(0xFFFF, a, b); }
  static KESTREL_X86_INLINE reg select_pos(reg x, reg y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), y, x);
  }
  static KESTREL_X86_INLINE __mmask16 lanes(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static KESTREL_X86_INLINE reg load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(lanes(n), p); }
  static KESTREL_X86_INLINE void store_partial(float* p, reg v, int n) { _mm512_mask_storeu_ps(p, lanes(n), v); }
};
#endif

// Calls f(std::integral_constant<int, i>) for i = 0..N-1, unrolled at compile time:
// register tiles index their accumulator arrays with these constants, so the arrays
// are scalarised into registers.
template <int N, class F>
KESTREL_X86_INLINE void static_for(F&& f);

namespace vec_detail {
template <int I, int N, class F>
KESTREL_X86_INLINE void static_for_from(F& f) {
  if constexpr (I < N) {
    f(std::integral_constant<int, I>{});
    static_for_from<I + 1, N>(f);
  }
}
}  // namespace vec_detail

template <int N, class F>
KESTREL_X86_INLINE void static_for(F&& f) {
  vec_detail::static_for_from<0, N>(f);
}

// r[j][i] = r[i][j] for the W x W floats of r[0..W): 2x2 and 4x4 blocks within the
// 128-bit lanes, then the lanes. Where a kernel turns channel vectors into pixel rows
// or back (the channel-vector depthwise kernels, the channel-tile GEMM's stores).
KESTREL_X86_INLINE void transpose_square(__m256* r) {
  __m256 a[8], b[8];
  static_for<4>([&](auto h) {
    constexpr int k = 2 * decltype(h)::value;
    a[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    a[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  });
  static_for<2>([&](auto mm) {  // b[m + q], lane L: column 4L + q of rows m .. m + 3
    constexpr int m = 4 * decltype(mm)::value;
    const __m256d a0 = _mm256_castps_pd(a[m]), a1 = _mm256_castps_pd(a[m + 1]);
    const __m256d a2 = _mm256_castps_pd(a[m + 2]), a3 = _mm256_castps_pd(a[m + 3]);
    b[m] = _mm256_castpd_ps(_mm256_unpacklo_pd(a0, a2));
    b[m + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a0, a2));
    b[m + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(a1, a3));
    b[m + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(a1, a3));
  });
  static_for<4>([&](auto qq) {
    constexpr int q = decltype(qq)::value;
    r[q] = _mm256_permute2f128_ps(b[q], b[4 + q], 0x20);
    r[4 + q] = _mm256_permute2f128_ps(b[q], b[4 + q], 0x31);
  });
}

#if defined(__AVX512F__)
// The zero-masked forms with every lane kept: the same instructions, without GCC 12's
// "may be used uninitialized" for the unmasked intrinsics' undefined pass-through.
KESTREL_X86_INLINE void transpose_square(__m512* r) {
  __m512 a[16], b[16];
  static_for<8>([&](auto h) {
    constexpr int k = 2 * decltype(h)::value;
    a[k] = _mm512_maskz_unpacklo_ps(0xFFFF, r[k], r[k + 1]);
    a[k + 1] = _mm512_maskz_unpackhi_ps(0xFFFF, r[k], r[k + 1]);
  });
  static_for<4>([&](auto mm) {  // b[m + q], lane L: column 4L + q of rows m .. m + 3
    constexpr int m = 4 * decltype(mm)::value;
    const __m512d a0 = _mm512_castps_pd(a[m]), a1 = _mm512_castps_pd(a[m + 1]);
    const __m512d a2 = _mm512_castps_pd(a[m + 2]), a3 = _mm512_castps_pd(a[m + 3]);
    b[m] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, a0, a2));
    b[m + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, a0, a2));
    b[m + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, a1, a3));
    b[m + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, a1, a3));
  });
  auto lanes = [](__m512 x, __m512 y, auto imm) { return _mm512_maskz_shuffle_f32x4(0xFFFF, x, y, decltype(imm)::value); };
  using Even = std::integral_constant<int, 0x88>;
  using Odd = std::integral_constant<int, 0xdd>;
  static_for<4>([&](auto qq) {
    constexpr int q = decltype(qq)::value;
    const __m512 c0 = lanes(b[q], b[4 + q], Even{}), c1 = lanes(b[q], b[4 + q], Odd{});
    const __m512 c2 = lanes(b[8 + q], b[12 + q], Even{}), c3 = lanes(b[8 + q], b[12 + q], Odd{});
    r[q] = lanes(c0, c2, Even{});
    r[4 + q] = lanes(c1, c3, Even{});
    r[8 + q] = lanes(c0, c2, Odd{});
    r[12 + q] = lanes(c1, c3, Odd{});
  });
}
#endif

KESTREL_X86_NS_END
