// The 2-D Winograd tile transforms of NEON, for any line transform pair L (L::in:
// alpha inputs to alpha transformed values; L::out: alpha products to kOut outputs),
// every register holding one element of four independent tiles (four channels of a
// tile on pack4 maps). Self-contained (only <arm_neon.h>) so bench scripts can compile
// it for llvm-mca.
//
// Why this order: an 8x8 tile is 64 vectors, twice the register file, so one pass
// goes through a stack buffer either way. The input transform runs the columns first
// (loads at immediate offsets from eight row pointers) and the rows second, so that it
// writes the transformed elements in xi order, each store one post-incremented st1;
// the output transform reads the products in xi order the same way and runs the
// columns second, handing each output pixel to the caller as it is done.
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm::wino {

// One vector store or load and a post-increment by `step` bytes in one instruction
// (st1/ld1 with a register post-index, which GCC does not emit on its own: it pairs
// each str with an add).
__attribute__((always_inline)) inline void store_step(float*& p, float32x4_t x, size_t step) {
  asm volatile("st1 {%1.4s}, [%0], %2" : "+r"(p) : "w"(x), "r"(step) : "memory");
}
__attribute__((always_inline)) inline float32x4_t load_step(const float*& p, size_t step) {
  float32x4_t x;
  asm volatile("ld1 {%0.4s}, [%1], %2" : "=w"(x), "+r"(p) : "r"(step) : "memory");
  return x;
}

// Transforms one tile of pixel vectors: rows[r] points at the tile's pixel (r, 0)
// (pixel (r, c) at rows[r] + 4 c) or, for a row outside the map, at alpha zero
// vectors; columns outside [c0, c1) read as zero. Element xi = alpha * i + j goes to
// v + xi * xi_stride.
template <class L>
__attribute__((always_inline)) inline void input_tile(const float* const* rows, int c0, int c1, float* v,
                                                      size_t xi_stride) {
  constexpr int A = L::kAlpha;
  float32x4_t t[A][A];  // B^T d: the columns transformed
#pragma GCC unroll 8
  for (int j = 0; j < A; ++j) {
    float32x4_t d[A], o[A];
    if (j >= c0 && j < c1) {
#pragma GCC unroll 8
      for (int r = 0; r < A; ++r) d[r] = vld1q_f32(rows[r] + 4 * j);
      L::in(d, o);
    } else {
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) o[i] = vdupq_n_f32(0.f);
    }
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) t[i][j] = o[i];
  }
  const size_t step = xi_stride * sizeof(float);
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    float32x4_t o[A];
    L::in(t[i], o);
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) store_step(v, o[j], step);
  }
}

// Output transform of one tile: product xi at m + xi * xi_stride; store(a, b, y) takes
// output row a, column b.
template <class L, class Store>
__attribute__((always_inline)) inline void output_tile(const float* m, size_t xi_stride, Store&& store) {
  constexpr int A = L::kAlpha, N = L::kOut;
  float32x4_t s[A][N];  // M A: the rows transformed
  const size_t step = xi_stride * sizeof(float);
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    float32x4_t line[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) line[j] = load_step(m, step);
    L::out(line, s[i]);
  }
#pragma GCC unroll 8
  for (int b = 0; b < N; ++b) {
    float32x4_t col[A], o[N];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = s[i][b];
    L::out(col, o);
#pragma GCC unroll 8
    for (int a = 0; a < N; ++a) store(a, b, o[a]);
  }
}

}  // namespace kestrel::kernels::arm::wino
