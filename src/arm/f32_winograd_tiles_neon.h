// The 2-D Winograd tile transforms of NEON, for any line transform pair L (L::in:
// alpha inputs to alpha transformed values; L::out: alpha products to kOut outputs):
// rows first, then columns, every register holding one element of four independent
// tiles (four tiles of a channel, or four channels of a tile on pack4 maps).
// Self-contained (only <arm_neon.h>) so bench scripts can compile it for llvm-mca.
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm::wino {

// Transforms one tile: load(r, d) fills d[0..alpha) with row r; element xi = alpha * i
// + j goes to v + xi * xi_stride.
template <class L, class Load>
__attribute__((always_inline)) inline void input_tile(Load&& load, float* v, size_t xi_stride) {
  constexpr int A = L::kAlpha;
  float32x4_t t[A][A];
#pragma GCC unroll 8
  for (int r = 0; r < A; ++r) {
    float32x4_t d[A];
    load(r, d);
    L::in(d, t[r]);
  }
#pragma GCC unroll 8
  for (int j = 0; j < A; ++j) {
    float32x4_t col[A], o[A];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = t[i][j];
    L::in(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) vst1q_f32(v + (i * A + j) * xi_stride, o[i]);
  }
}

// Output transform of one tile: product xi at m + xi * xi_stride; y[a][b] = output row
// a, column b.
template <class L>
__attribute__((always_inline)) inline void output_tile(const float* m, size_t xi_stride,
                                                       float32x4_t y[L::kOut][L::kOut]) {
  constexpr int A = L::kAlpha, N = L::kOut;
  float32x4_t s[A][N];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    float32x4_t line[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) line[j] = vld1q_f32(m + (i * A + j) * xi_stride);
    L::out(line, s[i]);
  }
#pragma GCC unroll 8
  for (int b = 0; b < N; ++b) {
    float32x4_t col[A], o[N];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = s[i][b];
    L::out(col, o);
#pragma GCC unroll 8
    for (int a = 0; a < N; ++a) y[a][b] = o[a];
  }
}

}  // namespace kestrel::kernels::arm::wino
