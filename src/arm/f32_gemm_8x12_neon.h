// The register-blocked SGEMM microkernel shared by the general (im2col) and the
// Winograd convolutions: C[8][12] = A[8][k] * B[k][12], 24 float32x4 accumulators,
// 2 + 3 operand registers, 24 FMAs (fmla by lane) per k step. Self-contained (only
// <arm_neon.h>) so bench scripts can compile it alone and mark the loop for llvm-mca.
//
// Operand layouts:
//   A  a[kk * 8 + r]     : step kk, row r (output channel r of an 8-channel panel),
//                          packed once at Net load, rows past the real ones zero
//   B  b[kk * ldb + j]   : step kk, column j (a pixel or a Winograd tile); ldb = 12 for
//                          packed tiles, the channel stride when B is the input itself
// Each C element is the fma chain over kk = 0..k-1 in order, starting from zero, so its
// bits depend neither on the column's position in the tile nor on the thread count.
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm::gemm {

constexpr int kMr = 8;   // rows (output channels) per panel
constexpr int kNr = 12;  // columns per tile

// One row of C: 12 columns in 3 registers. Named members, not arrays, so that GCC's
// scalar replacement keeps every accumulator in a register.
struct Row {
  float32x4_t c0, c1, c2;
};

template <int kLane>
__attribute__((always_inline)) inline void row_fma(Row& r, float32x4_t a, float32x4_t b0, float32x4_t b1,
                                                   float32x4_t b2) {
  r.c0 = vfmaq_laneq_f32(r.c0, b0, a, kLane);
  r.c1 = vfmaq_laneq_f32(r.c1, b1, a, kLane);
  r.c2 = vfmaq_laneq_f32(r.c2, b2, a, kLane);
}

// Runs the k-step reduction and hands row r's accumulators to store(r, c0, c1, c2)
// (r is a literal after inlining, so a store functor can index by it freely).
template <class Store>
__attribute__((always_inline)) inline void f32_gemm_8x12_neon(size_t k, const float* __restrict a,
                                                              const float* __restrict b, size_t ldb,
                                                              Store&& store) {
  const float32x4_t z = vdupq_n_f32(0.f);
  Row r0{z, z, z}, r1{z, z, z}, r2{z, z, z}, r3{z, z, z};
  Row r4{z, z, z}, r5{z, z, z}, r6{z, z, z}, r7{z, z, z};
  for (size_t kk = 0; kk < k; ++kk) {
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
    a += kMr;
    b += ldb;
    row_fma<0>(r0, a0, b0, b1, b2);
    row_fma<1>(r1, a0, b0, b1, b2);
    row_fma<2>(r2, a0, b0, b1, b2);
    row_fma<3>(r3, a0, b0, b1, b2);
    row_fma<0>(r4, a1, b0, b1, b2);
    row_fma<1>(r5, a1, b0, b1, b2);
    row_fma<2>(r6, a1, b0, b1, b2);
    row_fma<3>(r7, a1, b0, b1, b2);
  }
  store(0, r0);
  store(1, r1);
  store(2, r2);
  store(3, r3);
  store(4, r4);
  store(5, r5);
  store(6, r6);
  store(7, r7);
}

// Plain store of the whole 8 x 12 block at c (row stride ldc): Winograd's products
// and the benchmark harness.
struct RawStore {
  float* c;
  size_t ldc;
  __attribute__((always_inline)) void operator()(int r, const Row& v) const {
    float* p = c + static_cast<size_t>(r) * ldc;
    vst1q_f32(p, v.c0);
    vst1q_f32(p + 4, v.c1);
    vst1q_f32(p + 8, v.c2);
  }
};

}  // namespace kestrel::kernels::arm::gemm
