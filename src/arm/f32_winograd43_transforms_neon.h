// Winograd F(4x4, 3x3) line transforms (Lavin & Gray 2016), NEON: each register holds
// the same element of four independent lines (four channels of a pack4 tile). Self-contained (only
// <arm_neon.h> and the tile driver) so bench scripts can compile it for llvm-mca.
//
//   V = B^T d B (6x6 input tile d),  Y = A^T M A (4x4 output from the 6x6 products M)
//   B^T = [4  0 -5  0 1 0]     A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]           [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]           [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]           [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]
//         [0  4  0 -5 0 1]
// Element xi = 6 * i + j of a transformed tile is row i, column j. The weight side
// (U = G g G^T) is computed once at Net load (src/kernels/winograd_weights.cpp).
#pragma once
#include <arm_neon.h>

#include <cstddef>

#include "arm/f32_winograd_tiles_neon.h"

namespace kestrel::kernels::arm::wino43 {

constexpr int kAlpha = 6;  // input tile extent
constexpr int kOut = 4;    // output tile extent
constexpr int kXi = kAlpha * kAlpha;

// The constants by register lane (fmla v, v, v.s[i]): one register for all of them,
// hidden from GCC as in f32_winograd63_transforms_neon.h.
__attribute__((always_inline)) inline float32x4_t consts() {
  float32x4_t k = {4.f, 5.f, 2.f, 8.f};
  asm("" : "+w"(k));
  return k;
}

// B^T applied to one line of 6 values.
__attribute__((always_inline)) inline void input_line(const float32x4_t d[6], float32x4_t r[6]) {
  const float32x4_t k = consts();
  const float32x4_t s12 = vaddq_f32(d[1], d[2]), s34 = vaddq_f32(d[3], d[4]);
  const float32x4_t d12 = vsubq_f32(d[1], d[2]), d43 = vsubq_f32(d[4], d[3]);
  const float32x4_t d31 = vsubq_f32(d[3], d[1]), d42 = vsubq_f32(d[4], d[2]);
  r[0] = vfmsq_laneq_f32(vfmaq_laneq_f32(d[4], d[0], k, 0), d[2], k, 1);
  r[1] = vfmsq_laneq_f32(s34, s12, k, 0);
  r[2] = vfmaq_laneq_f32(d43, d12, k, 0);
  r[3] = vfmaq_laneq_f32(d42, d31, k, 2);
  r[4] = vfmsq_laneq_f32(d42, d31, k, 2);
  r[5] = vfmsq_laneq_f32(vfmaq_laneq_f32(d[5], d[1], k, 0), d[3], k, 1);
}

// A^T applied to one line of 6 products.
__attribute__((always_inline)) inline void output_line(const float32x4_t m[6], float32x4_t y[4]) {
  const float32x4_t k = consts();
  const float32x4_t s12 = vaddq_f32(m[1], m[2]), d12 = vsubq_f32(m[1], m[2]);
  const float32x4_t s34 = vaddq_f32(m[3], m[4]), d34 = vsubq_f32(m[3], m[4]);
  y[0] = vaddq_f32(vaddq_f32(m[0], s12), s34);
  y[1] = vfmaq_laneq_f32(d12, d34, k, 2);
  y[2] = vfmaq_laneq_f32(s12, s34, k, 0);
  y[3] = vaddq_f32(vfmaq_laneq_f32(d12, d34, k, 3), m[5]);
}

// The pair as wino::input_tile / output_tile take it.
struct Lines {
  static constexpr int kAlpha = wino43::kAlpha, kOut = wino43::kOut;
  __attribute__((always_inline)) static void in(const float32x4_t d[kAlpha], float32x4_t r[kAlpha]) {
    input_line(d, r);
  }
  __attribute__((always_inline)) static void out(const float32x4_t m[kAlpha], float32x4_t y[kOut]) {
    output_line(m, y);
  }
};

}  // namespace kestrel::kernels::arm::wino43
