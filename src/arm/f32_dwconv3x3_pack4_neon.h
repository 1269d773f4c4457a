// The loop of the NEON 3x3 depthwise convolution on pack4 maps
// (f32_dwconv3x3_pack4_neon.cpp): a strip of N <= 4 output pixels walked DOWN the map,
// M output rows, each input row loaded once. Inline assembly, because the kernel is
// judged by the instructions it executes, and GCC 12 given such steps in intrinsics
// adds register moves around the ld1/st1 tuples and spills (24 accumulators and
// inputs, 9 taps).
// Self-contained (only <arm_neon.h>) so bench scripts can compile it alone.
//
// An input row feeds output rows as tap row ky of each: at stride 1 row r is ky = 0 of
// output r, 1 of r - 1, 2 of r - 2 (three sets of N accumulators live: A = v0..v3,
// B = v4..v7, C = v8..v11, rotating); at stride 2 an even row is ky = 2 of one output
// and ky = 0 of the next, an odd row ky = 1 (two sets, A and B). A set starts with one
// ld1 of N copies of the bias, and when its ky = 2 taps are in, the activation runs in
// place and one st1 writes the output row. So per input row: one or two ld1 of its
// (N - 1) * S + 3 columns (stride 1: v12..v17; stride 2: three, v8..v16), post-
// incremented by a register to the next row. Every accumulator is thus bias, then taps
// ky = 0..2, kx = 0..2, one fmla each: the order of the planar kernel
// (f32_dwconv3x3_neon.h), bit for bit.
//
// The rows of a strip: the first from `pf`, the middle ones from `p` in turn, the last
// from `pl`, so that a row above or below the map is the zero row, not a step of its
// own. Column -1 (ZL) or the column after the strip (ZR) is padding: a register zeroed
// once, not loaded. Taps ky * 3 + kx are v20..v28, loaded once per call. The loop body
// is two turns of the rotation (6 rows at stride 1, 4 pairs of rows at stride 2) with
// one subs + b.ne; a prologue, picked once per call by `ph` through a table of
// branches, starts the sets and enters the body where it ends in the same state
// whatever M is, and one epilogue finishes. One call walks `ns` strips left to right
// (the pointers stepped back up and 4 pixels right). N, ZL, ZR and the activation are
// assembler symbols (.set), the variants `.if` blocks (bench/arm/mca.py resolves them
// when it cuts the loop out of the compiler's assembly).
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm::dwconv3x3_pack4 {

// Activations fused into the store (any other is stored linear and applied after).
enum class Store { kLinear, kRelu, kClip, kLeaky };

// Loop count and entry of a strip of m >= 1 output rows: its full rows (stride 1:
// those that start, continue and end a set each; stride 2: pairs of rows that end a
// set and start the next) less the prologue's and epilogue's, in turns of the loop
// (6 rows, 4 pairs) that the prologue enters at its row ph; stride 1, m == 1 (no full
// row at all) is entry 6.
struct Count {
  int n, ph;
};
template <int S>
inline Count count_of(int m) {
  if constexpr (S == 1) {
    if (m == 1) return {0, 6};
    const int full = m - 2;
    return {(full + 5) / 6, (6 - full % 6) % 6};
  } else {
    const int full = m - 1;
    return {(full + 3) / 4, (4 - full % 4) % 4};
  }
}

// What the strips of a band share. After a strip the row pointers stand past the rows
// they read (pf and pl one row, p m rows at stride 1 and 2m - 1 at stride 2) and out
// m rows on: next_* take them to the next strip, 4 pixels right.
struct Band {
  const float* w;  // the channel block's packed weights: 9 tap vectors, 4 copies of the bias
  ptrdiff_t in_row, out_row;  // bytes from a row to the next
  ptrdiff_t next_first, next_rows, next_out;
  Count c;
};
template <int S>
inline Band band_of(int m, ptrdiff_t in_row, ptrdiff_t out_row) {
  const ptrdiff_t rows = S == 1 ? m : 2 * m - 1;
  return {nullptr, in_row, out_row, 64 * S - in_row, 64 * S - rows * in_row, 64 - m * out_row, count_of<S>(m)};
}

// The activation's constants: kRelu 0 / -, kClip alpha / beta, kLeaky alpha / -.
struct Act {
  float32x4_t lo, hi;
};

#define KDWP4_NL "\n\t"
#define KDWP4_IFN(k) ".if kdwp4_n > " #k KDWP4_NL
#define KDWP4_END ".endif" KDWP4_NL
#define KDWP4_V(r) "v" #r ".4s"
// Taps ky * 3 + kx are v20..v28.
#define KDWP4_FMA(acc, x, t) "fmla " KDWP4_V(acc) ", " KDWP4_V(x) ", v2" #t ".4s" KDWP4_NL

// Register lists of N = 1..4 (an ld1 / st1 of N registers from a0).
#define KDWP4_LIST(pre, a0, a1, a2, a3, post)                                                              \
  ".if kdwp4_n == 1" KDWP4_NL pre " {" KDWP4_V(a0) "}" post KDWP4_NL ".elseif kdwp4_n == 2" KDWP4_NL       \
  pre " {" KDWP4_V(a0) ", " KDWP4_V(a1) "}" post KDWP4_NL ".elseif kdwp4_n == 3" KDWP4_NL                  \
  pre " {" KDWP4_V(a0) ", " KDWP4_V(a1) ", " KDWP4_V(a2) "}" post KDWP4_NL ".else" KDWP4_NL               \
  pre " {" KDWP4_V(a0) "-" KDWP4_V(a3) "}" post KDWP4_NL KDWP4_END

// The sets' accumulators; a set's operations, by set name (X0: none).
#define KDWP4_SET_A 0, 1, 2, 3
#define KDWP4_SET_B 4, 5, 6, 7
#define KDWP4_SET_C 8, 9, 10, 11
#define KDWP4_CALL(m, ...) m(__VA_ARGS__)
#define KDWP4_CALL2(m, ...) m(__VA_ARGS__)

// Set s (a0..a3) takes tap t on columns c0..c3 (those of pixels 0..3 for one kx).
#define KDWP4_G9(a0, a1, a2, a3, c0, c1, c2, c3, t)                                                     \
  KDWP4_FMA(a0, c0, t) KDWP4_IFN(1) KDWP4_FMA(a1, c1, t) KDWP4_IFN(2) KDWP4_FMA(a2, c2, t) KDWP4_IFN(3) \
  KDWP4_FMA(a3, c3, t) KDWP4_END KDWP4_END KDWP4_END
#define KDWP4_GI(s, c, t) KDWP4_CALL(KDWP4_G9, s, c, t)
#define KDWP4_G_A(S, kx, t) KDWP4_GI(KDWP4_SET_A, KDWP4_COL##S##_##kx, t)
#define KDWP4_G_B(S, kx, t) KDWP4_GI(KDWP4_SET_B, KDWP4_COL##S##_##kx, t)
#define KDWP4_G_C(S, kx, t) KDWP4_GI(KDWP4_SET_C, KDWP4_COL##S##_##kx, t)
#define KDWP4_G_X0(S, kx, t) ""
// Columns of pixels 0..3 for kx = 0, 1, 2: n + kx at stride 1 (v12..v17), 2n + kx at
// stride 2 (v8..v16).
#define KDWP4_COL1_0 12, 13, 14, 15
#define KDWP4_COL1_1 13, 14, 15, 16
#define KDWP4_COL1_2 14, 15, 16, 17
#define KDWP4_COL2_0 8, 10, 12, 14
#define KDWP4_COL2_1 9, 11, 13, 15
#define KDWP4_COL2_2 10, 12, 14, 16

// A set's start: the bias copies.
#define KDWP4_BIAS4(a0, a1, a2, a3) KDWP4_LIST("ld1", a0, a1, a2, a3, ", [%[w]]")
#define KDWP4_BIAS_A KDWP4_CALL(KDWP4_BIAS4, KDWP4_SET_A)
#define KDWP4_BIAS_B KDWP4_CALL(KDWP4_BIAS4, KDWP4_SET_B)
#define KDWP4_BIAS_C KDWP4_CALL(KDWP4_BIAS4, KDWP4_SET_C)
#define KDWP4_BIAS_X0 ""

// A set's end: the activation in place (kLeaky through temporaries u, m:
// x > 0 ? x : x * slope, as vbslq_f32(vcgtq_f32(x, 0), x, vmulq_f32(x, slope))), one st1.
#define KDWP4_RELU1(a, u, m) "fmax " KDWP4_V(a) ", " KDWP4_V(a) ", %[lo].4s" KDWP4_NL
#define KDWP4_CLIP1(a, u, m) KDWP4_RELU1(a, u, m) "fmin " KDWP4_V(a) ", " KDWP4_V(a) ", %[hi].4s" KDWP4_NL
#define KDWP4_LEAKY1(a, u, m)                                                                             \
  "fmul " KDWP4_V(u) ", " KDWP4_V(a) ", %[lo].4s" KDWP4_NL "fcmgt " KDWP4_V(m) ", " KDWP4_V(a) ", #0.0" KDWP4_NL \
  "bif v" #a ".16b, v" #u ".16b, v" #m ".16b" KDWP4_NL
#define KDWP4_ACT4(F, a0, a1, a2, a3, u, m) \
  F(a0, u, m) KDWP4_IFN(1) F(a1, u, m) KDWP4_IFN(2) F(a2, u, m) KDWP4_IFN(3) F(a3, u, m) KDWP4_END KDWP4_END KDWP4_END
#define KDWP4_END6(a0, a1, a2, a3, u, m)                                                                       \
  ".if kdwp4_act == 1" KDWP4_NL KDWP4_ACT4(KDWP4_RELU1, a0, a1, a2, a3, u, m) ".elseif kdwp4_act == 2" KDWP4_NL \
  KDWP4_ACT4(KDWP4_CLIP1, a0, a1, a2, a3, u, m) ".elseif kdwp4_act == 3" KDWP4_NL                               \
  KDWP4_ACT4(KDWP4_LEAKY1, a0, a1, a2, a3, u, m) KDWP4_END KDWP4_LIST("st1", a0, a1, a2, a3, ", [%[o]], %[os]")
#define KDWP4_END_A(u, m) KDWP4_CALL(KDWP4_END6, KDWP4_SET_A, u, m)
#define KDWP4_END_B(u, m) KDWP4_CALL(KDWP4_END6, KDWP4_SET_B, u, m)
#define KDWP4_END_C(u, m) KDWP4_CALL(KDWP4_END6, KDWP4_SET_C, u, m)
#define KDWP4_END_X0(u, m) ""

// One ld1 of kdwp4_d - `less` registers from r0 (1..4), post-incremented by the row step.
#define KDWP4_LDK(p, less, r0, r1, r2, r3)                                                                   \
  ".if kdwp4_d - " #less " == 1" KDWP4_NL "ld1 {" KDWP4_V(r0) "}, [%[" #p "]], %[is]" KDWP4_NL                \
  ".elseif kdwp4_d - " #less " == 2" KDWP4_NL "ld1 {" KDWP4_V(r0) ", " KDWP4_V(r1) "}, [%[" #p "]], %[is]" KDWP4_NL \
  ".elseif kdwp4_d - " #less " == 3" KDWP4_NL                                                                \
  "ld1 {" KDWP4_V(r0) ", " KDWP4_V(r1) ", " KDWP4_V(r2) "}, [%[" #p "]], %[is]" KDWP4_NL ".else" KDWP4_NL       \
  "ld1 {" KDWP4_V(r0) "-" KDWP4_V(r3) "}, [%[" #p "]], %[is]" KDWP4_NL KDWP4_END
#define KDWP4_LD4(p, r0, r3) "ld1 {" KDWP4_V(r0) "-" KDWP4_V(r3) "}, [%[" #p "]], #64" KDWP4_NL
// The kdwp4_d loaded columns of a row into r0.. (ld1 of 4, 4, 1 at most).
#define KDWP4_LDS(p, r0, r1, r2, r3, r4, r5, r6, r7, r8)                                         \
  ".if kdwp4_d <= 4" KDWP4_NL KDWP4_LDK(p, 0, r0, r1, r2, r3) ".else" KDWP4_NL KDWP4_LD4(p, r0, r3) \
  ".if kdwp4_d <= 8" KDWP4_NL KDWP4_LDK(p, 4, r4, r5, r6, r7) ".else" KDWP4_NL KDWP4_LD4(p, r4, r7)  \
  "ld1 {" KDWP4_V(r8) "}, [%[" #p "]], %[is]" KDWP4_NL KDWP4_END KDWP4_END
#define KDWP4_LD_1(p) \
  ".if kdwp4_zl" KDWP4_NL KDWP4_LDS(p, 13, 14, 15, 16, 17, 18, 19, 20, 21) ".else" KDWP4_NL KDWP4_LDS(p, 12, 13, 14, 15, 16, 17, 18, 19, 20) KDWP4_END
#define KDWP4_LD_2(p) \
  ".if kdwp4_zl" KDWP4_NL KDWP4_LDS(p, 9, 10, 11, 12, 13, 14, 15, 16, 17) ".else" KDWP4_NL KDWP4_LDS(p, 8, 9, 10, 11, 12, 13, 14, 15, 16) KDWP4_END
// Leaky's temporaries, past the columns.
#define KDWP4_TMP_1 18, 19
#define KDWP4_TMP_2 17, 18

// One input row at stride S from pointer p: set X takes its ky = 0 taps (and starts),
// Y ky = 1, Z ky = 2 (and ends); X0 for none. kx-major, so that N to 3N fmlas separate
// two on the same accumulator.
#define KDWP4_ROW(S, p, X, Y, Z)                                                                       \
  KDWP4_LD_##S(p) KDWP4_BIAS_##X KDWP4_G_##X(S, 0, 0) KDWP4_G_##Y(S, 0, 3) KDWP4_G_##Z(S, 0, 6)    \
      KDWP4_G_##X(S, 1, 1) KDWP4_G_##Y(S, 1, 4) KDWP4_G_##Z(S, 1, 7) KDWP4_G_##X(S, 2, 2)           \
          KDWP4_G_##Y(S, 2, 5) KDWP4_G_##Z(S, 2, 8) KDWP4_CALL2(KDWP4_END_##Z, KDWP4_TMP_##S)

// The symbols of the variant, the taps (ld1 from w, which then points to the bias).
#define KDWP4_SETS(S)                                                                                            \
  "ld1 {v20.4s-v23.4s}, [%[w]], #64" KDWP4_NL "ld1 {v24.4s-v27.4s}, [%[w]], #64" KDWP4_NL                        \
  "ld1 {v28.4s}, [%[w]], #16" KDWP4_NL ".set kdwp4_n, %c[np]" KDWP4_NL ".set kdwp4_zl, %c[zl]" KDWP4_NL ".set kdwp4_zr, %c[zr]" KDWP4_NL            \
  ".set kdwp4_act, %c[act]" KDWP4_NL ".set kdwp4_d, (kdwp4_n - 1) * " #S " + 3 - kdwp4_zl - kdwp4_zr" KDWP4_NL
#define KDWP4_L(name) ".Lkdwp4_" #name "%="
// Strip start (the loop count) and end (on to the next strip while `ns` says so).
#define KDWP4_STRIP KDWP4_L(s) ":" KDWP4_NL "mov %w[n], %w[n0]" KDWP4_NL
#define KDWP4_NEXT                                                                                                \
  "subs %w[ns], %w[ns], #1" KDWP4_NL "b.eq " KDWP4_L(done) KDWP4_NL "add %[pf], %[pf], %[df]" KDWP4_NL              \
  "add %[pl], %[pl], %[df]" KDWP4_NL "add %[p], %[p], %[dp]" KDWP4_NL "add %[o], %[o], %[dout]" KDWP4_NL            \
  "b " KDWP4_L(s) "\n" KDWP4_L(done) ":" KDWP4_NL

// The entry by ph: t, set once, is entry ph of a table of `b`s to prologues 0..; each
// strip branches through it.
#define KDWP4_ENTRY "adr %[t], " KDWP4_L(tab) KDWP4_NL "add %[t], %[t], %w[ph], uxtw #2" KDWP4_NL
#define KDWP4_DISPATCH                                                                                       \
  "br %[t]" KDWP4_NL KDWP4_L(tab) ":" KDWP4_NL "b " KDWP4_L(p0) KDWP4_NL "b " KDWP4_L(p1) KDWP4_NL           \
  "b " KDWP4_L(p2) KDWP4_NL "b " KDWP4_L(p3) KDWP4_NL
#define KDWP4_AT(name) KDWP4_L(name) ":" KDWP4_NL

// Stride 1. The loop turns twice round the rotation A, B, C (row A: start A, ky 1 of
// C, end B); prologue ph (0..5) starts two sets and enters it at row ph, so that it
// ends at its last row after n turns (ph 0 skips it when n is 0); ph 6 is a strip of
// one output row.
#define KDWP4_WALK_1                                                                                        \
  KDWP4_SETS(1) ".if kdwp4_zl" KDWP4_NL "movi v12.16b, #0" KDWP4_NL KDWP4_END ".if kdwp4_zr" KDWP4_NL        \
  ".if kdwp4_n == 1" KDWP4_NL "movi v14.16b, #0" KDWP4_NL ".elseif kdwp4_n == 2" KDWP4_NL                   \
  "movi v15.16b, #0" KDWP4_NL ".elseif kdwp4_n == 3" KDWP4_NL "movi v16.16b, #0" KDWP4_NL ".else" KDWP4_NL \
  "movi v17.16b, #0" KDWP4_NL KDWP4_END KDWP4_END KDWP4_ENTRY KDWP4_STRIP KDWP4_DISPATCH                                \
  "b " KDWP4_L(p4) KDWP4_NL "b " KDWP4_L(p5) KDWP4_NL                                                       \
  KDWP4_ROW(1, pf, A, X0, X0) KDWP4_ROW(1, p, X0, A, X0) KDWP4_ROW(1, pl, X0, X0, A) "b " KDWP4_L(end) "\n"  \
  KDWP4_AT(p1) KDWP4_ROW(1, pf, C, X0, X0) KDWP4_ROW(1, p, A, C, X0) "b " KDWP4_L(r1) "\n"                  \
  KDWP4_AT(p2) KDWP4_ROW(1, pf, A, X0, X0) KDWP4_ROW(1, p, B, A, X0) "b " KDWP4_L(r2) "\n"                  \
  KDWP4_AT(p3) KDWP4_ROW(1, pf, B, X0, X0) KDWP4_ROW(1, p, C, B, X0) "b " KDWP4_L(r3) "\n"                  \
  KDWP4_AT(p4) KDWP4_ROW(1, pf, C, X0, X0) KDWP4_ROW(1, p, A, C, X0) "b " KDWP4_L(r4) "\n"                  \
  KDWP4_AT(p5) KDWP4_ROW(1, pf, A, X0, X0) KDWP4_ROW(1, p, B, A, X0) "b " KDWP4_L(r5) "\n"                  \
  KDWP4_AT(p0) KDWP4_ROW(1, pf, B, X0, X0) KDWP4_ROW(1, p, C, B, X0) "cbz %w[n], " KDWP4_L(e) "\n"           \
  KDWP4_AT(r0) KDWP4_ROW(1, p, A, C, B) KDWP4_AT(r1) KDWP4_ROW(1, p, B, A, C) KDWP4_AT(r2)                   \
  KDWP4_ROW(1, p, C, B, A) KDWP4_AT(r3) KDWP4_ROW(1, p, A, C, B) KDWP4_AT(r4) KDWP4_ROW(1, p, B, A, C)       \
  KDWP4_AT(r5) KDWP4_ROW(1, p, C, B, A) "subs %w[n], %w[n], #1" KDWP4_NL "b.ne " KDWP4_L(r0) "\n"           \
  KDWP4_AT(e) KDWP4_ROW(1, p, X0, C, B) KDWP4_ROW(1, pl, X0, X0, C) KDWP4_AT(end) KDWP4_NEXT

// Stride 2. The loop goes 4 pairs of rows (an odd row: ky 1 of one set; an even row:
// end it, start the other), sets A, B, A, B; prologue ph (0..3) starts the set of pair
// ph and enters there (ph 0 skipping the loop when n is 0); the epilogue ends A.
#define KDWP4_WALK_2                                                                                        \
  KDWP4_SETS(2) ".if kdwp4_zl" KDWP4_NL "movi v8.16b, #0" KDWP4_NL KDWP4_END ".if kdwp4_zr" KDWP4_NL         \
  ".if kdwp4_n == 1" KDWP4_NL "movi v10.16b, #0" KDWP4_NL ".elseif kdwp4_n == 2" KDWP4_NL                   \
  "movi v12.16b, #0" KDWP4_NL ".elseif kdwp4_n == 3" KDWP4_NL "movi v14.16b, #0" KDWP4_NL ".else" KDWP4_NL \
  "movi v16.16b, #0" KDWP4_NL KDWP4_END KDWP4_END KDWP4_ENTRY KDWP4_STRIP KDWP4_DISPATCH                                \
  KDWP4_AT(p1) KDWP4_ROW(2, pf, B, X0, X0) "b " KDWP4_L(r1) "\n"                                            \
  KDWP4_AT(p2) KDWP4_ROW(2, pf, A, X0, X0) "b " KDWP4_L(r2) "\n"                                            \
  KDWP4_AT(p3) KDWP4_ROW(2, pf, B, X0, X0) "b " KDWP4_L(r3) "\n"                                            \
  KDWP4_AT(p0) KDWP4_ROW(2, pf, A, X0, X0) "cbz %w[n], " KDWP4_L(e) "\n"                                     \
  KDWP4_AT(r0) KDWP4_ROW(2, p, X0, A, X0) KDWP4_ROW(2, p, B, X0, A) KDWP4_AT(r1) KDWP4_ROW(2, p, X0, B, X0)  \
  KDWP4_ROW(2, p, A, X0, B) KDWP4_AT(r2) KDWP4_ROW(2, p, X0, A, X0) KDWP4_ROW(2, p, B, X0, A) KDWP4_AT(r3)  \
  KDWP4_ROW(2, p, X0, B, X0) KDWP4_ROW(2, p, A, X0, B) "subs %w[n], %w[n], #1" KDWP4_NL                     \
  "b.ne " KDWP4_L(r0) "\n" KDWP4_AT(e) KDWP4_ROW(2, p, X0, A, X0) KDWP4_ROW(2, pl, X0, X0, A) KDWP4_NEXT

#define KDWP4_OPERANDS                                                                                        \
  : [pf] "+r"(pf), [p] "+r"(p), [pl] "+r"(pl), [o] "+r"(out), [w] "+r"(w), [ns] "+r"(strips), [n] "=&r"(n), [t] "=&r"(t)     \
  : [n0] "r"(b.c.n), [ph] "r"(b.c.ph), [is] "r"(in_step), [os] "r"(b.out_row), [df] "r"(b.next_first),          \
    [dp] "r"(b.next_rows), [dout] "r"(b.next_out), [lo] "w"(a.lo), [hi] "w"(a.hi), [np] "i"(N), [zl] "i"(ZL),     \
    [zr] "i"(ZR), [act] "i"(static_cast<int>(St))                                                               \
  : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",       \
    "v14", "v15", "v16", "v17", "v18", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28"

// Bytes a row's loads advance before its last (post-incremented by the row step).
template <int S, int N, int ZL, int ZR>
constexpr ptrdiff_t kLoadedBefore = 64 * (((N - 1) * S + 3 - ZL - ZR - 1) / 4);

// `strips` >= 1 strips of N pixels, left to right, of the band b: pf, p, pl as above,
// each at the first strip's first loaded column (column 1 of the strip when ZL); out at
// its first output.
template <int S, int N, int ZL, int ZR, Store St>
__attribute__((always_inline)) inline void walk(const Band& b, const float* pf, const float* p, const float* pl,
                                                float* out, int strips, const Act& a) {
  const ptrdiff_t in_step = b.in_row - kLoadedBefore<S, N, ZL, ZR>;
  const float* w = b.w;
  int n;
  const void* t;
  if constexpr (S == 1) {
    asm volatile(KDWP4_WALK_1 KDWP4_OPERANDS, "v19");
  } else {
    asm volatile(KDWP4_WALK_2 KDWP4_OPERANDS);
  }
}

}  // namespace kestrel::kernels::arm::dwconv3x3_pack4

#undef KDWP4_NL
#undef KDWP4_IFN
#undef KDWP4_END
#undef KDWP4_V
#undef KDWP4_FMA
#undef KDWP4_LIST
#undef KDWP4_SET_A
#undef KDWP4_SET_B
#undef KDWP4_SET_C
#undef KDWP4_CALL
#undef KDWP4_CALL2
#undef KDWP4_G9
#undef KDWP4_GI
#undef KDWP4_G_A
#undef KDWP4_G_B
#undef KDWP4_G_C
#undef KDWP4_G_X0
#undef KDWP4_COL1_0
#undef KDWP4_COL1_1
#undef KDWP4_COL1_2
#undef KDWP4_COL2_0
#undef KDWP4_COL2_1
#undef KDWP4_COL2_2
#undef KDWP4_BIAS4
#undef KDWP4_BIAS_A
#undef KDWP4_BIAS_B
#undef KDWP4_BIAS_C
#undef KDWP4_BIAS_X0
#undef KDWP4_RELU1
#undef KDWP4_CLIP1
#undef KDWP4_LEAKY1
#undef KDWP4_ACT4
#undef KDWP4_END6
#undef KDWP4_END_A
#undef KDWP4_END_B
#undef KDWP4_END_C
#undef KDWP4_END_X0
#undef KDWP4_LDK
#undef KDWP4_LD4
#undef KDWP4_LDS
#undef KDWP4_LD_1
#undef KDWP4_LD_2
#undef KDWP4_TMP_1
#undef KDWP4_TMP_2
#undef KDWP4_ROW
#undef KDWP4_SETS
#undef KDWP4_L
#undef KDWP4_AT
#undef KDWP4_DISPATCH
#undef KDWP4_ENTRY
#undef KDWP4_NEXT
#undef KDWP4_STRIP
#undef KDWP4_WALK_1
#undef KDWP4_WALK_2
#undef KDWP4_OPERANDS
