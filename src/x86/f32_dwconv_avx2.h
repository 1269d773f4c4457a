// The AVX2 + FMA vector traits of the depthwise kernels, which f32_dwconv3x3_x86.h,
// f32_dwconv_cvec_x86.h and f32_dwconv3x3_flat_x86.h are written over; included only
// by the avx2 kernels' translation units (one per kernel, f32_dwconv*_avx2.cpp),
// all compiled with the same ISA flags. The anonymous namespace gives every
// instantiation over these traits internal linkage in each of them (the ODR note of
// f32_dwconv_x86.h).
#pragma once
#include <immintrin.h>

#include "x86/x86_vec.h"

namespace kestrel::kernels::x86 {
namespace {

struct VecAvx2 {
  using T = __m256;
  static constexpr int kW = 8;
  static constexpr int kMaxVecs = 3;
  // The channel-vector kernel's step for a k x k window (f32_dwconv_cvec_x86.h): U
  // pixels of R output rows. 3x3: 4 accumulators + 9 taps + the bias of 16 registers
  // (2 rows would not fit). 5x5: 8 accumulators, the taps read by the fmas; in the time
  // summed over 9 of CenterNet's and MobileNet v3's shapes, 1 x 4 was 10% slower, 2 x 4
  // 15%, 1 x 4 with the taps held in registers 44% (medians of 2-CPU Intel Xeon runs,
  // 1 thread, 2026-11-26).
  static constexpr int cvec_unroll(int k) { return k == 3 ? 4 : 8; }
  static constexpr int cvec_rows(int /*k*/) { return 1; }

  static __m256i mask(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm256_storeu_ps(p, v); }
  // The first n (0 <= n < 8) lanes; the others are zero and not read.
  static T load_n(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store_n(float* p, T v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  // Lane masks of the flat kernel (f32_dwconv3x3_flat_x86.h); masked-off lanes are not read.
  using Mask = __m256i;
  static Mask mask_of(unsigned bits) {
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), lane), lane);
  }
  static T load_masked(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static T max(T a, T b) { return _mm256_max_ps(a, b); }
  static T min(T a, T b) { return _mm256_min_ps(a, b); }
  static T leaky(T x, T slope) {
    return _mm256_blendv_ps(_mm256_mul_ps(x, slope), x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
  }
  // ev = a0 a2 a4 a6 b0 b2 b4 b6, od = a1 a3 a5 a7 b1 b3 b5 b7.
  static void deinterleave(T a, T b, T& ev, T& od) {
    const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
    const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    od = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // r[j][i] = r[i][j] (x86_vec.h).
  static __attribute__((always_inline)) void transpose(T r[8]) { transpose_square(r); }
};

}  // namespace
}  // namespace kestrel::kernels::x86
