// The interior loops of the NEON 3x3 depthwise convolution on pack4 maps
// (f32_dwconv3x3_pack4_neon.cpp): 4 output pixels per step, 3 output rows at stride 1
// (5 input rows), 2 at stride 2 (5 input rows), nothing padded. Inline assembly,
// because the kernel is judged by the instructions it executes, and GCC 12, given the
// same step in intrinsics, spends 145-165 instructions instead of these 138 at stride 1
// and 116-130 instead of 101 at stride 2 (register moves around the 4-register ld1/st1
// tuples, spills when 12 accumulators, 9 taps and 6 inputs fill the register file, the
// store tuple assembled on the stack). Self-contained (only <arm_neon.h>) so bench
// scripts can compile it alone; llvm-mca (LLVM 14) puts both loops at 89-90% of the FMA
// peak on its Cortex-A72 model, 25-30% on the in-order A53.
//
// A step, per input row: one ld1 of 4 registers and one of 2 (stride 1: columns
// 0..5) or two of 4 and one ldr (stride 2: columns 0..8), post-incremented so that the
// row pointer lands on the next step's first column; per output row: one ld1 of four
// copies of the bias into its 4 accumulators, 36 fmla, the activation, one st1 of 4
// registers. Loop control is subs + b.ne. The 9 taps and the activation's constants are
// operands in registers that the compiler picks; the accumulators and inputs are fixed
// (v0..v17, declared clobbered).
//
// Every accumulator is bias, then taps ky = 0..2, kx = 0..2 in that order, one fmla
// each: the order of the planar kernel (f32_dwconv3x3_neon.h) and of the intrinsics
// steps of the .cpp, so results do not depend on which code computes a pixel. Within a
// row the fmlas go kx-major over the 4 accumulators, so 4 independent ones separate
// two dependent ones.
#pragma once
#include <arm_neon.h>

namespace kestrel::kernels::arm::dwconv3x3_pack4 {

// Activations fused into the store (any other is stored linear and applied after).
enum class Store { kLinear, kRelu, kClip, kLeaky };

// Output rows of an interior step.
template <int S>
constexpr int kAsmRows = S == 1 ? 3 : 2;

// ---- the assembly text, shared by the variants ----
// An fmla into accumulator v<acc> of input v<x> times tap operand %[k<t>].
#define KDWP4_FMA(acc, x, t) "fmla v" #acc ".4s, v" #x ".4s, %[k" #t "].4s\n\t"

// Accumulators a0..a3 (output pixels 0..3 of one output row) take taps ta, tb, tc
// (kx = 0, 1, 2 of one ky) of the current input row. Stride 1: its columns 0..5 are
// v12..v17, pixel n reads columns n..n+2.
#define KDWP4_ROW_S1(a0, a1, a2, a3, ta, tb, tc)                                                 \
  KDWP4_FMA(a0, 12, ta) KDWP4_FMA(a1, 13, ta) KDWP4_FMA(a2, 14, ta) KDWP4_FMA(a3, 15, ta)     \
  KDWP4_FMA(a0, 13, tb) KDWP4_FMA(a1, 14, tb) KDWP4_FMA(a2, 15, tb) KDWP4_FMA(a3, 16, tb)     \
  KDWP4_FMA(a0, 14, tc) KDWP4_FMA(a1, 15, tc) KDWP4_FMA(a2, 16, tc) KDWP4_FMA(a3, 17, tc)
// Stride 2: columns 0..8 are v8..v16, pixel n reads columns 2n..2n+2.
#define KDWP4_ROW_S2(a0, a1, a2, a3, ta, tb, tc)                                                 \
  KDWP4_FMA(a0, 8, ta) KDWP4_FMA(a1, 10, ta) KDWP4_FMA(a2, 12, ta) KDWP4_FMA(a3, 14, ta)      \
  KDWP4_FMA(a0, 9, tb) KDWP4_FMA(a1, 11, tb) KDWP4_FMA(a2, 13, tb) KDWP4_FMA(a3, 15, tb)      \
  KDWP4_FMA(a0, 10, tc) KDWP4_FMA(a1, 12, tc) KDWP4_FMA(a2, 14, tc) KDWP4_FMA(a3, 16, tc)

#define KDWP4_LOAD_S1(r) "ld1 {v12.4s-v15.4s}, [%[" #r "]], #64\n\t" "ld1 {v16.4s, v17.4s}, [%[" #r "]]\n\t"
#define KDWP4_LOAD_S2(r) \
  "ld1 {v8.4s-v11.4s}, [%[" #r "]], #64\n\t" "ld1 {v12.4s-v15.4s}, [%[" #r "]], #64\n\t" "ldr q16, [%[" #r "]]\n\t"
#define KDWP4_BIAS(a0, a3) "ld1 {v" #a0 ".4s-v" #a3 ".4s}, [%[bias]]\n\t"

// Stride 1: output rows o (accumulators v4o..v4o+3) take input rows o..o+2.
#define KDWP4_STEP_S1                                                                                       \
  KDWP4_BIAS(0, 3) KDWP4_BIAS(4, 7) KDWP4_BIAS(8, 11)                                                       \
  KDWP4_LOAD_S1(r0) KDWP4_ROW_S1(0, 1, 2, 3, 0, 1, 2)                                                       \
  KDWP4_LOAD_S1(r1) KDWP4_ROW_S1(0, 1, 2, 3, 3, 4, 5) KDWP4_ROW_S1(4, 5, 6, 7, 0, 1, 2)                     \
  KDWP4_LOAD_S1(r2) KDWP4_ROW_S1(0, 1, 2, 3, 6, 7, 8) KDWP4_ROW_S1(4, 5, 6, 7, 3, 4, 5)                     \
      KDWP4_ROW_S1(8, 9, 10, 11, 0, 1, 2)                                                                   \
  KDWP4_LOAD_S1(r3) KDWP4_ROW_S1(4, 5, 6, 7, 6, 7, 8) KDWP4_ROW_S1(8, 9, 10, 11, 3, 4, 5)                   \
  KDWP4_LOAD_S1(r4) KDWP4_ROW_S1(8, 9, 10, 11, 6, 7, 8)
// Stride 2: output rows o (accumulators v4o..v4o+3) take input rows 2o..2o+2.
#define KDWP4_STEP_S2                                                                                       \
  KDWP4_BIAS(0, 3) KDWP4_BIAS(4, 7)                                                                         \
  KDWP4_LOAD_S2(r0) KDWP4_ROW_S2(0, 1, 2, 3, 0, 1, 2)                                                       \
  KDWP4_LOAD_S2(r1) KDWP4_ROW_S2(0, 1, 2, 3, 3, 4, 5)                                                       \
  KDWP4_LOAD_S2(r2) KDWP4_ROW_S2(0, 1, 2, 3, 6, 7, 8) KDWP4_ROW_S2(4, 5, 6, 7, 0, 1, 2)                     \
  KDWP4_LOAD_S2(r3) KDWP4_ROW_S2(4, 5, 6, 7, 3, 4, 5)                                                       \
  KDWP4_LOAD_S2(r4) KDWP4_ROW_S2(4, 5, 6, 7, 6, 7, 8)

// Stores of accumulators a0..a3 to output row o, through t0..t3 (4 consecutive
// registers whose inputs are dead by then) and u (a scratch register).
#define KDWP4_ST(a0, a3, o) "st1 {v" #a0 ".4s-v" #a3 ".4s}, [%[" #o "]], #64\n\t"
#define KDWP4_MAX(t, a) "fmax v" #t ".4s, v" #a ".4s, %[lo].4s\n\t"
#define KDWP4_CLIP(t, a) "fmax v" #t ".4s, v" #a ".4s, %[lo].4s\n\t" "fmin v" #t ".4s, v" #t ".4s, %[hi].4s\n\t"
// x > 0 ? x : x * slope, as vbslq_f32(vcgtq_f32(x, 0), x, vmulq_f32(x, slope)).
#define KDWP4_LEAKY(t, a, u) \
  "fcmgt v" #t ".4s, v" #a ".4s, #0.0\n\t" "fmul v" #u ".4s, v" #a ".4s, %[lo].4s\n\t" "bsl v" #t ".16b, v" #a ".16b, v" #u ".16b\n\t"
#define KDWP4_ST_LINEAR(a0, a1, a2, a3, o, t0, t1, t2, t3, u) KDWP4_ST(a0, a3, o)
#define KDWP4_ST_RELU(a0, a1, a2, a3, o, t0, t1, t2, t3, u) \
  KDWP4_MAX(t0, a0) KDWP4_MAX(t1, a1) KDWP4_MAX(t2, a2) KDWP4_MAX(t3, a3) KDWP4_ST(t0, t3, o)
#define KDWP4_ST_CLIP(a0, a1, a2, a3, o, t0, t1, t2, t3, u) \
  KDWP4_CLIP(t0, a0) KDWP4_CLIP(t1, a1) KDWP4_CLIP(t2, a2) KDWP4_CLIP(t3, a3) KDWP4_ST(t0, t3, o)
#define KDWP4_ST_LEAKY(a0, a1, a2, a3, o, t0, t1, t2, t3, u) \
  KDWP4_LEAKY(t0, a0, u) KDWP4_LEAKY(t1, a1, u) KDWP4_LEAKY(t2, a2, u) KDWP4_LEAKY(t3, a3, u) KDWP4_ST(t0, t3, o)

#define KDWP4_STORES_S1(ST) \
  ST(0, 1, 2, 3, o0, 12, 13, 14, 15, 16) ST(4, 5, 6, 7, o1, 12, 13, 14, 15, 16) ST(8, 9, 10, 11, o2, 12, 13, 14, 15, 16)
#define KDWP4_STORES_S2(ST) ST(0, 1, 2, 3, o0, 8, 9, 10, 11, 12) ST(4, 5, 6, 7, o1, 8, 9, 10, 11, 12)

#define KDWP4_LOOP(STEP, STORES) "1:\n\t" STEP STORES "subs %w[n], %w[n], #1\n\t" "b.ne 1b\n\t"

#define KDWP4_TAPS                                                                                         \
  [bias] "r"(bias4), [k0] "w"(k[0]), [k1] "w"(k[1]), [k2] "w"(k[2]), [k3] "w"(k[3]), [k4] "w"(k[4]),       \
      [k5] "w"(k[5]), [k6] "w"(k[6]), [k7] "w"(k[7]), [k8] "w"(k[8]), [lo] "w"(lo), [hi] "w"(hi)
#define KDWP4_OPERANDS_S1                                                                                   \
  : [r0] "+r"(r0), [r1] "+r"(r1), [r2] "+r"(r2), [r3] "+r"(r3), [r4] "+r"(r4), [o0] "+r"(o0), [o1] "+r"(o1), \
    [o2] "+r"(o2), [n] "+r"(steps)                                                                          \
  : KDWP4_TAPS                                                                                              \
  : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",  \
    "v14", "v15", "v16", "v17"
#define KDWP4_OPERANDS_S2                                                                                   \
  : [r0] "+r"(r0), [r1] "+r"(r1), [r2] "+r"(r2), [r3] "+r"(r3), [r4] "+r"(r4), [o0] "+r"(o0), [o1] "+r"(o1), \
    [n] "+r"(steps)                                                                                         \
  : KDWP4_TAPS                                                                                              \
  : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",  \
    "v14", "v15", "v16"

// `steps` (>= 1) interior steps of kAsmRows<S> output rows: input rows rows[0..4] and
// output rows out[0..kAsmRows<S> - 1] at the first step's first column and pixel,
// advanced past the last step on return. k: the taps ky * 3 + kx as vectors over the
// block's 4 channels; bias4: four copies of the bias vector; lo / hi: kRelu 0 / -,
// kClip alpha / beta, kLeaky alpha / -.
template <int S, Store St>
inline void interior(const float* rows[5], float* out[], int steps, const float32x4_t k[9], const float* bias4,
                     float32x4_t lo, float32x4_t hi) {
  const float *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3], *r4 = rows[4];
  if constexpr (S == 1) {
    float *o0 = out[0], *o1 = out[1], *o2 = out[2];
    if constexpr (St == Store::kLinear) {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S1, KDWP4_STORES_S1(KDWP4_ST_LINEAR)) KDWP4_OPERANDS_S1);
    } else if constexpr (St == Store::kRelu) {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S1, KDWP4_STORES_S1(KDWP4_ST_RELU)) KDWP4_OPERANDS_S1);
    } else if constexpr (St == Store::kClip) {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S1, KDWP4_STORES_S1(KDWP4_ST_CLIP)) KDWP4_OPERANDS_S1);
    } else {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S1, KDWP4_STORES_S1(KDWP4_ST_LEAKY)) KDWP4_OPERANDS_S1);
    }
    out[0] = o0, out[1] = o1, out[2] = o2;
  } else {
    float *o0 = out[0], *o1 = out[1];
    if constexpr (St == Store::kLinear) {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S2, KDWP4_STORES_S2(KDWP4_ST_LINEAR)) KDWP4_OPERANDS_S2);
    } else if constexpr (St == Store::kRelu) {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S2, KDWP4_STORES_S2(KDWP4_ST_RELU)) KDWP4_OPERANDS_S2);
    } else if constexpr (St == Store::kClip) {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S2, KDWP4_STORES_S2(KDWP4_ST_CLIP)) KDWP4_OPERANDS_S2);
    } else {
      asm volatile(KDWP4_LOOP(KDWP4_STEP_S2, KDWP4_STORES_S2(KDWP4_ST_LEAKY)) KDWP4_OPERANDS_S2);
    }
    out[0] = o0, out[1] = o1;
  }
  rows[0] = r0, rows[1] = r1, rows[2] = r2, rows[3] = r3, rows[4] = r4;
}

}  // namespace kestrel::kernels::arm::dwconv3x3_pack4

#undef KDWP4_FMA
#undef KDWP4_ROW_S1
#undef KDWP4_ROW_S2
#undef KDWP4_LOAD_S1
#undef KDWP4_LOAD_S2
#undef KDWP4_BIAS
#undef KDWP4_STEP_S1
#undef KDWP4_STEP_S2
#undef KDWP4_ST
#undef KDWP4_MAX
#undef KDWP4_CLIP
#undef KDWP4_LEAKY
#undef KDWP4_ST_LINEAR
#undef KDWP4_ST_RELU
#undef KDWP4_ST_CLIP
#undef KDWP4_ST_LEAKY
#undef KDWP4_STORES_S1
#undef KDWP4_STORES_S2
#undef KDWP4_LOOP
#undef KDWP4_TAPS
#undef KDWP4_OPERANDS_S1
#undef KDWP4_OPERANDS_S2
