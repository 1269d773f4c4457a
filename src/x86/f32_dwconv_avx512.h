// The AVX-512F vector traits of the depthwise kernels, which f32_dwconv3x3_x86.h,
// f32_dwconv_cvec_x86.h and f32_dwconv3x3_flat_x86.h are written over; included only
// by the avx512 kernels' translation units (one per kernel, f32_dwconv*_avx512.cpp),
// all compiled with the same ISA flags. The anonymous namespace gives every
// instantiation over these traits internal linkage in each of them (the ODR note of
// f32_dwconv_x86.h).
#pragma once
#include <immintrin.h>

// GCC 12 warns that _mm512_undefined_ps() (the pass-through operand of the unmasked
// max/min intrinsics) "may be used uninitialized": a false positive in its headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "x86/x86_vec.h"

namespace kestrel::kernels::x86 {
namespace {

struct VecAvx512 {
  using T = __m512;
  static constexpr int kW = 16;
  static constexpr int kMaxVecs = 4;
  // The channel-vector kernel's step for a k x k window (f32_dwconv_cvec_x86.h): U
  // pixels of R output rows. 3x3: 2 x 8 accumulators + 9 taps + the bias in registers.
  // 5x5: the same 2 x 8, the taps read by the fmas; in the time summed over 9 of
  // CenterNet's and MobileNet v3's shapes, 2 x 4 was 6% slower, 1 x 8 15%, 1 x 16 and the
  // 25 taps held in registers 5-25% (medians of 2-CPU Intel Xeon runs, 1 thread,
  // 2026-11-26).
  static constexpr int cvec_unroll(int /*k*/) { return 8; }
  static constexpr int cvec_rows(int /*k*/) { return 2; }

  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm512_storeu_ps(p, v); }
  // The first n (0 <= n < 16) lanes; the others are zero and not read.
  static T load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, T v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  // Lane masks of the flat kernel (f32_dwconv3x3_flat_x86.h); masked-off lanes are not read.
  using Mask = __mmask16;
  static Mask mask_of(unsigned bits) { return static_cast<__mmask16>(bits); }
  static T load_masked(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static T max(T a, T b) { return _mm512_max_ps(a, b); }
  static T min(T a, T b) { return _mm512_min_ps(a, b); }
  static T leaky(T x, T slope) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_mul_ps(x, slope), x);
  }
  // ev = a0 a2 .. a14 b0 .. b14, od = a1 a3 .. b15.
  static void deinterleave(T a, T b, T& ev, T& od) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    ev = _mm512_permutex2var_ps(a, ie, b);
    od = _mm512_permutex2var_ps(a, io, b);
  }
  // r[j][i] = r[i][j] (x86_vec.h).
  static __attribute__((always_inline)) void transpose(T r[16]) { transpose_square(r); }
};

}  // namespace
}  // namespace kestrel::kernels::x86
