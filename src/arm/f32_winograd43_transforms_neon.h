// Winograd F(4x4, 3x3) transforms (Lavin & Gray 2016), NEON, four tiles per vector:
// lane u of every register belongs to tile u of a group of four. Self-contained (only
// <arm_neon.h>) so bench scripts can compile it alone for llvm-mca.
//
//   V = B^T d B (6x6 input tile d),  Y = A^T M A (4x4 output from the 6x6 products M)
//   B^T = [4  0 -5  0 1 0]     A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]           [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]           [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]           [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]
//         [0  4  0 -5 0 1]
// Element xi = 6 * i + j of a transformed tile is row i, column j. The weight side
// (U = G g G^T) is computed once at Net load in f32_conv_winograd43_neon.cpp.
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm::wino43 {

constexpr int kAlpha = 6;  // input tile extent
constexpr int kOut = 4;    // output tile extent
constexpr int kXi = kAlpha * kAlpha;

// B^T applied to one line of 6 values.
__attribute__((always_inline)) inline void input_line(const float32x4_t d[6], float32x4_t r[6]) {
  const float32x4_t s12 = vaddq_f32(d[1], d[2]), s34 = vaddq_f32(d[3], d[4]);
  const float32x4_t d12 = vsubq_f32(d[1], d[2]), d43 = vsubq_f32(d[4], d[3]);
  const float32x4_t d31 = vsubq_f32(d[3], d[1]), d42 = vsubq_f32(d[4], d[2]);
  r[0] = vfmsq_n_f32(vfmaq_n_f32(d[4], d[0], 4.f), d[2], 5.f);
  r[1] = vfmsq_n_f32(s34, s12, 4.f);
  r[2] = vfmaq_n_f32(d43, d12, 4.f);
  r[3] = vfmaq_n_f32(d42, d31, 2.f);
  r[4] = vfmsq_n_f32(d42, d31, 2.f);
  r[5] = vfmsq_n_f32(vfmaq_n_f32(d[5], d[1], 4.f), d[3], 5.f);
}

// A^T applied to one line of 6 products.
__attribute__((always_inline)) inline void output_line(const float32x4_t m[6], float32x4_t y[4]) {
  const float32x4_t s12 = vaddq_f32(m[1], m[2]), d12 = vsubq_f32(m[1], m[2]);
  const float32x4_t s34 = vaddq_f32(m[3], m[4]), d34 = vsubq_f32(m[3], m[4]);
  y[0] = vaddq_f32(vaddq_f32(m[0], s12), s34);
  y[1] = vfmaq_n_f32(d12, d34, 2.f);
  y[2] = vfmaq_n_f32(s12, s34, 4.f);
  y[3] = vaddq_f32(vfmaq_n_f32(d12, d34, 8.f), m[5]);
}

// Transforms four input tiles: load(r, d) fills d[0..5] with row r of the tiles
// (d[c] lane u = tile u, column c); element xi goes to v + xi * xi_stride.
template <class Load>
__attribute__((always_inline)) inline void input_tile4(Load&& load, float* v, size_t xi_stride) {
  float32x4_t t[kAlpha][kAlpha];
#pragma GCC unroll 6
  for (int r = 0; r < kAlpha; ++r) {
    float32x4_t d[kAlpha];
    load(r, d);
    input_line(d, t[r]);
  }
#pragma GCC unroll 6
  for (int j = 0; j < kAlpha; ++j) {
    const float32x4_t col[kAlpha] = {t[0][j], t[1][j], t[2][j], t[3][j], t[4][j], t[5][j]};
    float32x4_t o[kAlpha];
    input_line(col, o);
#pragma GCC unroll 6
    for (int i = 0; i < kAlpha; ++i) vst1q_f32(v + (i * kAlpha + j) * xi_stride, o[i]);
  }
}

// Output transform of four tiles: product xi of the tiles at m + xi * xi_stride; y[a][b]
// lane u = output row a, column b of tile u.
__attribute__((always_inline)) inline void output_tile4(const float* m, size_t xi_stride, float32x4_t y[kOut][kOut]) {
  float32x4_t s[kAlpha][kOut];
#pragma GCC unroll 6
  for (int i = 0; i < kAlpha; ++i) {
    float32x4_t line[kAlpha];
#pragma GCC unroll 6
    for (int j = 0; j < kAlpha; ++j) line[j] = vld1q_f32(m + (i * kAlpha + j) * xi_stride);
    output_line(line, s[i]);
  }
#pragma GCC unroll 4
  for (int b = 0; b < kOut; ++b) {
    const float32x4_t col[kAlpha] = {s[0][b], s[1][b], s[2][b], s[3][b], s[4][b], s[5][b]};
    float32x4_t o[kOut];
    output_line(col, o);
#pragma GCC unroll 4
    for (int a = 0; a < kOut; ++a) y[a][b] = o[a];
  }
}

}  // namespace kestrel::kernels::arm::wino43
