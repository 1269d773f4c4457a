// Winograd F(6x6, 3x3) line transforms (Lavin & Gray 2016; the points 0, 1, -1, 2, -2,
// 1/2, -1/2 and infinity, as ncnn's winograd63), NEON: each register holds the same
// element of four independent lines (four channels of a pack4 tile). Self-contained
// (<arm_neon.h> and the tile driver) so bench scripts can compile it alone for llvm-mca.
//
//   V = B^T d B (8x8 input tile d),  Y = A^T M A (6x6 output from the 8x8 products M)
//   B^T = [1  0   -21/4  0     21/4   0    -1 0]   A^T = [1 1  1  1   1 32  32 0]
//         [0  1    1    -17/4 -17/4   1     1 0]         [0 1 -1  2  -2 16 -16 0]
//         [0 -1    1     17/4 -17/4  -1     1 0]         [0 1  1  4   4  8   8 0]
//         [0  1/2  1/4  -5/2  -5/4    2     1 0]         [0 1 -1  8  -8  4  -4 0]
//         [0 -1/2  1/4   5/2  -5/4   -2     1 0]         [0 1  1 16  16  2   2 0]
//         [0  2    4    -5/2  -5      1/2   1 0]         [0 1 -1 32 -32  1  -1 1]
//         [0 -2    4     5/2  -5     -1/2   1 0]
//         [0 -1    0     21/4  0    -21/4   0 1]
// The weight side G g G^T (G's rows for +-1/2 scaled by 1/32, hence A^T's 32, 16, ...
// columns) is src/kernels/winograd_weights.cpp. Element xi = 8 * i + j of a
// transformed tile is row i, column j.
#pragma once
#include <arm_neon.h>

#include "arm/f32_winograd_tiles_neon.h"

namespace kestrel::kernels::arm::wino63 {

constexpr int kAlpha = 8;  // input tile extent
constexpr int kOut = 6;    // output tile extent

// The transforms' constants, by register lane (fmla v, v, v.s[i]), so that two
// registers hold all of them. The empty asm hides their values from GCC, which would
// otherwise turn each lane back into a broadcast constant and, short of registers on an
// 8x8 tile, re-materialize those with fmov in every line (72 per tile); GCC may still
// merge the identical asm statements of a tile into one.
__attribute__((always_inline)) inline float32x4_t opaque(float32x4_t k) {
  asm("" : "+w"(k));
  return k;
}
__attribute__((always_inline)) inline float32x4_t in_k0() { return opaque(float32x4_t{5.25f, 4.25f, 0.25f, 1.25f}); }
__attribute__((always_inline)) inline float32x4_t in_k1() { return opaque(float32x4_t{0.5f, 2.5f, 2.f, 4.f}); }
__attribute__((always_inline)) inline float32x4_t out_k() { return opaque(float32x4_t{32.f, 16.f, 8.f, 4.f}); }

// B^T applied to one line of 8 values: 12 multiply-adds and 14 adds, the products
// by 5.25, 4.25, ... shared between the rows they pair (r1/r2, r3/r4, r5/r6).
__attribute__((always_inline)) inline void input_line(const float32x4_t d[8], float32x4_t r[8]) {
  const float32x4_t k0 = in_k0(), k1 = in_k1();
  r[0] = vfmaq_laneq_f32(vsubq_f32(d[0], d[6]), vsubq_f32(d[4], d[2]), k0, 0);
  r[7] = vfmaq_laneq_f32(vsubq_f32(d[7], d[1]), vsubq_f32(d[3], d[5]), k0, 0);
  const float32x4_t t1 = vfmsq_laneq_f32(vaddq_f32(d[2], d[6]), d[4], k0, 1);
  const float32x4_t t2 = vfmsq_laneq_f32(vaddq_f32(d[1], d[5]), d[3], k0, 1);
  r[1] = vaddq_f32(t1, t2);
  r[2] = vsubq_f32(t1, t2);
  const float32x4_t t3 = vfmsq_laneq_f32(vfmaq_laneq_f32(d[6], d[2], k0, 2), d[4], k0, 3);
  const float32x4_t t4 = vfmaq_laneq_f32(vfmsq_laneq_f32(vmulq_laneq_f32(d[1], k1, 0), d[3], k1, 1), d[5], k1, 2);
  r[3] = vaddq_f32(t3, t4);
  r[4] = vsubq_f32(t3, t4);
  const float32x4_t t5 = vfmaq_laneq_f32(d[6], vfmsq_laneq_f32(d[2], d[4], k0, 3), k1, 3);
  const float32x4_t t6 = vfmaq_laneq_f32(vfmsq_laneq_f32(vmulq_laneq_f32(d[1], k1, 2), d[3], k1, 1), d[5], k1, 0);
  r[5] = vaddq_f32(t5, t6);
  r[6] = vsubq_f32(t5, t6);
}

// A^T applied to one line of 8 products.
__attribute__((always_inline)) inline void output_line(const float32x4_t m[8], float32x4_t y[6]) {
  const float32x4_t k = out_k();
  const float32x4_t a = vaddq_f32(m[1], m[2]), b = vsubq_f32(m[1], m[2]);
  const float32x4_t c = vaddq_f32(m[3], m[4]), d = vsubq_f32(m[3], m[4]);
  const float32x4_t e = vaddq_f32(m[5], m[6]), f = vsubq_f32(m[5], m[6]);
  y[0] = vfmaq_laneq_f32(vaddq_f32(vaddq_f32(m[0], a), c), e, k, 0);
  y[1] = vfmaq_laneq_f32(vaddq_f32(b, vaddq_f32(d, d)), f, k, 1);  // 2d is exact
  y[2] = vfmaq_laneq_f32(vfmaq_laneq_f32(a, c, k, 3), e, k, 2);
  y[3] = vfmaq_laneq_f32(vfmaq_laneq_f32(b, d, k, 2), f, k, 3);
  y[4] = vaddq_f32(vfmaq_laneq_f32(a, c, k, 1), vaddq_f32(e, e));
  y[5] = vaddq_f32(vaddq_f32(vfmaq_laneq_f32(b, d, k, 0), m[7]), f);
}

// The pair as wino::input_tile / output_tile take it.
struct Lines {
  static constexpr int kAlpha = wino63::kAlpha, kOut = wino63::kOut;
  __attribute__((always_inline)) static void in(const float32x4_t d[kAlpha], float32x4_t r[kAlpha]) {
    input_line(d, r);
  }
  __attribute__((always_inline)) static void out(const float32x4_t m[kAlpha], float32x4_t y[kOut]) {
    output_line(m, y);
  }
};

}  // namespace kestrel::kernels::arm::wino63
