// The loop of the fp16 3x3 depthwise convolution on pack8 halves
// (f16_dwconv3x3_pack8_neonfp16.cpp): a strip of N <= 4 output pixels walked DOWN the
// map, each input row loaded once; the scheme of the fp32 pack4 walk
// (f32_dwconv3x3_pack4_neon.h), on 8 halves a vector (a pixel is 16 bytes in both, so
// the addressing is the same) and with the reference's activations. Inline assembly:
// GCC 12 keeps neither the 27 live vectors of the rotation nor the ld1 / st1 tuples in
// place when they are written in intrinsics. Needs -march=armv8.2-a+fp16; includes only
// <arm_neon.h>, so that bench/arm/loops/f16_dwconv3x3_pack8.cpp compiles it alone.
//
// An input row feeds up to three output rows, as their tap row ky: at stride 1 three
// sets of N accumulators (A = v0..v3, B = v4..v7, C = v8..v11) rotate over the output
// rows, at stride 2 two (A, B; an even row ends one set and starts the next, an odd
// row is ky = 1 of one). A set starts with one ld1 of N copies of the bias; once its
// ky = 2 taps are in, the activation runs in place and one st1 writes its output row.
// Per input row: one or two ld1 of its (N - 1) * S + 3 columns (stride 1: v12..v17,
// stride 2: v8..v16), the last post-incremented by a register to the next row. The taps
// ky * 3 + kx are v20..v28, loaded once per strip. So every output is its bias, then its
// taps in the order ky, kx, one fmla each, and the taps on padding are skipped:
// conv_reference_f16's sum, bit for bit.
//
// The rows of a strip: the first from `pf`, the middle ones from `p`, the last from
// `pl`. A first row above the map is skipped by entering the walk at a prologue that
// only starts its set, a last row below it by ending the set without it (a flag): so
// padding rows cost no steps, loads or taps. Column -1 (ZL) and the column after the
// strip (ZR) are not loaded, and their taps are left out of the variant. The loop body
// is two turns of the rotation (6 rows at stride 1, 4 pairs at stride 2) and one subs +
// b.ne; a prologue, picked through a table of branches by `ph`, starts the sets and
// enters the body where it ends in the same state whatever the strip's height, and one
// epilogue finishes. One call walks `strips` strips left to right in each of `blocks`
// channel blocks (a 7x7 block is only 49 outputs: the calls' set-up is paid once for
// all). N, ZL, ZR and the activation are assembler symbols (.set) and the variants `.if`
// blocks of one text (bench/arm/mca.py resolves them).
#pragma once
#include <arm_neon.h>

#include <cstddef>

namespace kestrel::kernels::arm::dwconv3x3_pack8_f16 {

// The activations, as the reference compares (activation.h: -0 and NaN kept where it
// keeps them, so FMAX only where it agrees):
//   kRelu   x < 0 ? 0 : x              fcmlt + bic
//   kClip   min(max(x, lo), hi)        fcmgt + bit (lo), fmin (hi: FMIN is the
//                                      reference's min unless hi is -0, which the
//                                      kernel declines)
//   kLeaky  x > 0 ? x : x * lo         fmul + fcmgt + bif
enum class Store { kLinear, kRelu, kClip, kLeaky };

// Loop count and entry of a strip of m >= 1 output rows: the rows that are a full step
// (stride 1: rows that start, continue and end a set; stride 2: pairs that end one set
// and start the next) less the prologue's and epilogue's, in turns of the loop (6 rows,
// 4 pairs) entered at its row ph; stride 1, m == 1 is entry 6 (no full row).
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

// One call: `strips` strips of N pixels (left to right, 4 pixels apart) of the same m
// output rows in each of `blocks` channel blocks. Steps in bytes. After a strip the row
// pointers stand past the rows they read (pf and pl one row, p m rows at stride 1 and
// 2m - 1 at stride 2) and out m rows on: strip_* take them to the next strip, block_*
// from there to the first strip of the next block (pf and pl step alike, and where they
// point at padding, which is not read, their value does not matter).
struct Walk {
  const __fp16* w;  // the first block's packed weights: 9 tap vectors, 4 copies of the bias
  const __fp16 *pf, *p, *pl;  // the first strip's first loaded column of its rows
  __fp16* out;                // its first output
  int strips, blocks;
  ptrdiff_t in_row, out_row;
  ptrdiff_t strip_first, strip_rows, strip_out;
  ptrdiff_t block_first, block_rows, block_out;
  Count c;         // c.ph: the entry, past the prologues where the first row is padding
  int last_zero;   // the last row is padding
};

// The steps of walks over m output rows of stride S: in_row / out_row bytes between
// rows, in_block / out_block between blocks; first_zero / last_zero: the first / last
// row is padding. The pointers, w and the counts are the caller's.
template <int S>
inline Walk walk_of(int m, int strips, ptrdiff_t in_row, ptrdiff_t out_row, ptrdiff_t in_block, ptrdiff_t out_block,
                    bool first_zero, bool last_zero) {
  const ptrdiff_t rows = S == 1 ? m : 2 * m - 1, back = 64 * S * (strips - 1);
  Walk k{};
  k.strips = strips;
  k.in_row = in_row;
  k.out_row = out_row;
  k.strip_first = 64 * S - in_row;
  k.strip_rows = 64 * S - rows * in_row;
  k.strip_out = 64 - m * out_row;
  k.block_first = in_block - back - in_row;
  k.block_rows = in_block - back - rows * in_row;
  k.block_out = out_block - 64 * (strips - 1) - m * out_row;
  k.c = count_of<S>(m);
  if (first_zero) k.c.ph += S == 1 ? 7 : 4;
  k.last_zero = last_zero;
  return k;
}

// The activation's constants: kClip lo / hi, kLeaky the slope in lo (read by the walk
// into v29, v30).
struct Act {
  float16x8_t lo, hi;
};

#define KH8_NL "\n\t"
#define KH8_IFN(k) ".if kh8_n > " #k KH8_NL
#define KH8_END ".endif" KH8_NL
#define KH8_V(r) "v" #r ".8h"
#define KH8_Q(r) "v" #r ".16b"
#define KH8_CALL(m, ...) m(__VA_ARGS__)
#define KH8_CALL2(m, ...) m(__VA_ARGS__)  // KH8_CALL within KH8_CALL would not expand
// Taps ky * 3 + kx are v20..v28.
#define KH8_FMA(acc, x, t) "fmla " KH8_V(acc) ", " KH8_V(x) ", v2" #t ".8h" KH8_NL

// `op` on a list of `count` (an assembler expression, 1..4) registers from r0.
#define KH8_LIST(op, count, r0, r1, r2, r3, tail)                                                             \
  ".if " count " == 1" KH8_NL op " {" KH8_V(r0) "}" tail KH8_NL ".elseif " count " == 2" KH8_NL                \
  op " {" KH8_V(r0) ", " KH8_V(r1) "}" tail KH8_NL ".elseif " count " == 3" KH8_NL                             \
  op " {" KH8_V(r0) ", " KH8_V(r1) ", " KH8_V(r2) "}" tail KH8_NL ".else" KH8_NL op " {" KH8_V(r0) "-" KH8_V(r3) \
  "}" tail KH8_NL KH8_END

// The sets' accumulators.
#define KH8_SET_A 0, 1, 2, 3
#define KH8_SET_B 4, 5, 6, 7
#define KH8_SET_C 8, 9, 10, 11

// The columns of pixels 0..3 for kx = 0, 1, 2: pixel + kx at stride 1 (v12..v17),
// 2 * pixel + kx at stride 2 (v8..v16).
#define KH8_COL1_0 12, 13, 14, 15
#define KH8_COL1_1 13, 14, 15, 16
#define KH8_COL1_2 14, 15, 16, 17
#define KH8_COL2_0 8, 10, 12, 14
#define KH8_COL2_1 9, 11, 13, 15
#define KH8_COL2_2 10, 12, 14, 16

// Set a0..a3 takes tap t on columns c0..c3 (those of kx for its pixels 0..3); X0 is no
// set. A column of padding is skipped, as the reference skips it: column -1 (kx = 0 of
// pixel 0) with ZL, the column after the strip (kx = 2 of its last pixel) with ZR. (The
// .if conditions are arithmetic that mca.py can evaluate too.)
#define KH8_TAP4_1(a0, a1, a2, a3, c0, c1, c2, c3, t)                                                \
  KH8_FMA(a0, c0, t) KH8_IFN(1) KH8_FMA(a1, c1, t) KH8_IFN(2) KH8_FMA(a2, c2, t) KH8_IFN(3) KH8_FMA(a3, c3, t) \
  KH8_END KH8_END KH8_END
#define KH8_TAP4_0(a0, a1, a2, a3, c0, c1, c2, c3, t)                                                        \
  ".if 1 - kh8_zl" KH8_NL KH8_FMA(a0, c0, t) KH8_END KH8_IFN(1) KH8_FMA(a1, c1, t) KH8_IFN(2) KH8_FMA(a2, c2, t) \
  KH8_IFN(3) KH8_FMA(a3, c3, t) KH8_END KH8_END KH8_END
// Pixel p - 1 unless it is the last (kh8_n == p) with ZR.
#define KH8_NOT_LAST(p) ".if 1 - kh8_zr + kh8_n - " #p KH8_NL
#define KH8_TAP4_2(a0, a1, a2, a3, c0, c1, c2, c3, t)                                                    \
  KH8_NOT_LAST(1) KH8_FMA(a0, c0, t) KH8_END KH8_IFN(1) KH8_NOT_LAST(2) KH8_FMA(a1, c1, t) KH8_END KH8_IFN(2) \
  KH8_NOT_LAST(3) KH8_FMA(a2, c2, t) KH8_END KH8_IFN(3) KH8_NOT_LAST(4) KH8_FMA(a3, c3, t) KH8_END KH8_END    \
  KH8_END KH8_END
#define KH8_TAPS(kx, set, cols, t) KH8_CALL(KH8_TAP4_##kx, set, cols, t)
#define KH8_G_A(S, kx, t) KH8_TAPS(kx, KH8_SET_A, KH8_COL##S##_##kx, t)
#define KH8_G_B(S, kx, t) KH8_TAPS(kx, KH8_SET_B, KH8_COL##S##_##kx, t)
#define KH8_G_C(S, kx, t) KH8_TAPS(kx, KH8_SET_C, KH8_COL##S##_##kx, t)
#define KH8_G_X0(S, kx, t) ""

// A set's start: N copies of the bias.
#define KH8_BIAS4(a0, a1, a2, a3) KH8_LIST("ld1", "kh8_n", a0, a1, a2, a3, ", [%[w]]")
#define KH8_BIAS_A KH8_CALL(KH8_BIAS4, KH8_SET_A)
#define KH8_BIAS_B KH8_CALL(KH8_BIAS4, KH8_SET_B)
#define KH8_BIAS_C KH8_CALL(KH8_BIAS4, KH8_SET_C)
#define KH8_BIAS_X0 ""

// The activations by pairs of accumulators a, b with temporaries u, m: the two masks
// first, so that an in-order core does not wait on each. Leaky needs two temporaries an
// accumulator and goes one at a time.
#define KH8_RELU2(a, b, u, m)                                                                    \
  "fcmlt " KH8_V(u) ", " KH8_V(a) ", #0.0" KH8_NL "fcmlt " KH8_V(m) ", " KH8_V(b) ", #0.0" KH8_NL \
  "bic " KH8_Q(a) ", " KH8_Q(a) ", " KH8_Q(u) KH8_NL "bic " KH8_Q(b) ", " KH8_Q(b) ", " KH8_Q(m) KH8_NL
#define KH8_RELU1(a, u, m) \
  "fcmlt " KH8_V(u) ", " KH8_V(a) ", #0.0" KH8_NL "bic " KH8_Q(a) ", " KH8_Q(a) ", " KH8_Q(u) KH8_NL
#define KH8_CLIP2(a, b, u, m)                                                                            \
  "fcmgt " KH8_V(u) ", v29.8h, " KH8_V(a) KH8_NL "fcmgt " KH8_V(m) ", v29.8h, " KH8_V(b) KH8_NL       \
  "bit " KH8_Q(a) ", v29.16b, " KH8_Q(u) KH8_NL "bit " KH8_Q(b) ", v29.16b, " KH8_Q(m) KH8_NL          \
  "fmin " KH8_V(a) ", " KH8_V(a) ", v30.8h" KH8_NL "fmin " KH8_V(b) ", " KH8_V(b) ", v30.8h" KH8_NL
#define KH8_CLIP1(a, u, m)                                                                                  \
  "fcmgt " KH8_V(u) ", v29.8h, " KH8_V(a) KH8_NL "bit " KH8_Q(a) ", v29.16b, " KH8_Q(u) KH8_NL           \
  "fmin " KH8_V(a) ", " KH8_V(a) ", v30.8h" KH8_NL
#define KH8_LEAKY1(a, u, m)                                                                                \
  "fmul " KH8_V(u) ", " KH8_V(a) ", v29.8h" KH8_NL "fcmgt " KH8_V(m) ", " KH8_V(a) ", #0.0" KH8_NL         \
  "bif " KH8_Q(a) ", " KH8_Q(u) ", " KH8_Q(m) KH8_NL
#define KH8_LEAKY2(a, b, u, m) KH8_LEAKY1(a, u, m) KH8_LEAKY1(b, u, m)
// Activation F on the set's N accumulators.
#define KH8_ACT4(F, a0, a1, a2, a3, u, m)                                                                     \
  ".if kh8_n == 1" KH8_NL F##1(a0, u, m) ".else" KH8_NL F##2(a0, a1, u, m) KH8_END ".if kh8_n == 3" KH8_NL \
  F##1(a2, u, m) ".elseif kh8_n == 4" KH8_NL F##2(a2, a3, u, m) KH8_END
// A set's end: the activation in place, one st1.
#define KH8_END6(a0, a1, a2, a3, u, m)                                                                        \
  ".if kh8_act == 1" KH8_NL KH8_ACT4(KH8_RELU, a0, a1, a2, a3, u, m) ".elseif kh8_act == 2" KH8_NL           \
  KH8_ACT4(KH8_CLIP, a0, a1, a2, a3, u, m) ".elseif kh8_act == 3" KH8_NL KH8_ACT4(KH8_LEAKY, a0, a1, a2, a3, u, m) \
  KH8_END KH8_LIST("st1", "kh8_n", a0, a1, a2, a3, ", [%[o]], %[os]")
#define KH8_END_A(u, m) KH8_CALL(KH8_END6, KH8_SET_A, u, m)
#define KH8_END_B(u, m) KH8_CALL(KH8_END6, KH8_SET_B, u, m)
#define KH8_END_C(u, m) KH8_CALL(KH8_END6, KH8_SET_C, u, m)
#define KH8_END_X0(u, m) ""
// The activation's temporaries, past the columns.
#define KH8_TMP_1 18, 19
#define KH8_TMP_2 17, 18

// The kh8_d loaded columns of a row into r0.. (ld1 of at most 4, 4, 1), all but the last
// post-incremented by 64 bytes, the last by the row step `is`.
#define KH8_LD4(p, r0, r3) "ld1 {" KH8_V(r0) "-" KH8_V(r3) "}, [%[" #p "]], #64" KH8_NL
#define KH8_LDS(p, r0, r1, r2, r3, r4, r5, r6, r7, r8)                                                      \
  ".if kh8_d <= 4" KH8_NL KH8_LIST("ld1", "kh8_d", r0, r1, r2, r3, ", [%[" #p "]], %[is]") ".else" KH8_NL     \
  KH8_LD4(p, r0, r3) ".if kh8_d <= 8" KH8_NL KH8_LIST("ld1", "kh8_d - 4", r4, r5, r6, r7, ", [%[" #p "]], %[is]") \
  ".else" KH8_NL KH8_LD4(p, r4, r7) "ld1 {" KH8_V(r8) "}, [%[" #p "]], %[is]" KH8_NL KH8_END KH8_END
// Without column -1 (ZL) the loads start at the first column register, else past it.
#define KH8_LD_1(p)                                                                            \
  ".if kh8_zl" KH8_NL KH8_LDS(p, 13, 14, 15, 16, 17, 18, 19, 20, 21) ".else" KH8_NL            \
  KH8_LDS(p, 12, 13, 14, 15, 16, 17, 18, 19, 20) KH8_END
#define KH8_LD_2(p)                                                                       \
  ".if kh8_zl" KH8_NL KH8_LDS(p, 9, 10, 11, 12, 13, 14, 15, 16, 17) ".else" KH8_NL        \
  KH8_LDS(p, 8, 9, 10, 11, 12, 13, 14, 15, 16) KH8_END

// One input row at stride S from pointer p: set X takes its ky = 0 taps (and starts), Y
// its ky = 1, Z its ky = 2 (and ends); X0 for none. Column by column, and per column Z,
// Y, X: the bias load has 2N fmlas before its first use, and Z's last fmla 2N after it
// before the activation reads it.
#define KH8_ROW(S, p, X, Y, Z)                                                                          \
  KH8_LD_##S(p) KH8_BIAS_##X KH8_G_##Z(S, 0, 6) KH8_G_##Y(S, 0, 3) KH8_G_##X(S, 0, 0) KH8_G_##Z(S, 1, 7)  \
      KH8_G_##Y(S, 1, 4) KH8_G_##X(S, 1, 1) KH8_G_##Z(S, 2, 8) KH8_G_##Y(S, 2, 5) KH8_G_##X(S, 2, 2)        \
          KH8_CALL2(KH8_END_##Z, KH8_TMP_##S)

// The variant's symbols, from one immediate (asm takes at most 30 operands): kVariant.
#define KH8_SETS(S)                                                                                              \
  ".set kh8_n, %c[var] & 7" KH8_NL ".set kh8_zl, (%c[var] >> 3) & 1" KH8_NL ".set kh8_zr, (%c[var] >> 4) & 1" KH8_NL \
  ".set kh8_act, %c[var] >> 5" KH8_NL ".set kh8_d, (kh8_n - 1) * " #S " + 3 - kh8_zl - kh8_zr" KH8_NL          \
  ".if kh8_act >= 2" KH8_NL "ldp q29, q30, [%[act]]" KH8_NL KH8_END
#define KH8_L(name) ".Lkh8_" #name "_%="
#define KH8_AT(name) KH8_L(name) ":" KH8_NL
// A block's start (its strip count) and a strip's (the block's taps: ld1 from w, which
// then points at the bias; the loop count); a strip's end: on to the next strip while
// `ns` says so (w back to the taps), else to the next block while `nb` says so (w on
// to its taps, 256 bytes from the last).
#define KH8_STRIP                                                                                           \
  KH8_AT(b) "mov %w[ns], %w[ns0]" KH8_NL KH8_AT(s) "ld1 {v20.8h-v23.8h}, [%[w]], #64" KH8_NL                   \
  "ld1 {v24.8h-v27.8h}, [%[w]], #64" KH8_NL "ld1 {v28.8h}, [%[w]], #16" KH8_NL "mov %w[n], %w[n0]" KH8_NL
#define KH8_NEXT                                                                                                   \
  "subs %w[ns], %w[ns], #1" KH8_NL "b.eq " KH8_L(nb) KH8_NL "add %[pf], %[pf], %[df]" KH8_NL                      \
  "add %[pl], %[pl], %[df]" KH8_NL "add %[p], %[p], %[dp]" KH8_NL "add %[o], %[o], %[dout]" KH8_NL                \
  "sub %[w], %[w], #144" KH8_NL "b " KH8_L(s) KH8_NL KH8_AT(nb) "subs %w[nb], %w[nb], #1" KH8_NL                   \
  "b.eq " KH8_L(done) KH8_NL "add %[pf], %[pf], %[bf]" KH8_NL "add %[pl], %[pl], %[bf]" KH8_NL                     \
  "add %[p], %[p], %[bp]" KH8_NL "add %[o], %[o], %[bo]" KH8_NL "add %[w], %[w], #112" KH8_NL "b " KH8_L(b) KH8_NL \
  KH8_AT(done)
// The entry by ph: t, set once per call, is entry ph of a table of branches to the
// prologues; each strip branches through it.
#define KH8_ENTRY "adr %[t], " KH8_L(tab) KH8_NL "add %[t], %[t], %w[ph], uxtw #2" KH8_NL
#define KH8_B(name) "b " KH8_L(name) KH8_NL
// A walk whose first row is above the map (zt) enters at ph plus the prologues' count:
// there the first row is only its set's start (q*: the bias, no loads, no taps) and the
// prologue goes on at its second row (s*). A walk whose last row is below the map (zb)
// ends its last set without it (z*). So a padding row is skipped, as the reference
// skips it, and the pointer at it is never read.
#define KH8_LAST_ROW(S, X, temps) \
  "cbnz %w[zb], " KH8_L(z##X) KH8_NL KH8_ROW(S, pl, X0, X0, X) KH8_B(end) KH8_AT(z##X) KH8_CALL2(KH8_END_##X, temps)
// Stride 1. The body turns twice round the rotation A, B, C (row A: start A, ky 1 of C,
// end B); prologue ph (0..5) starts two sets and enters the body at row ph, so that its
// last row is the body's last after n turns (ph 0 skips the body when n is 0); ph 6 (m)
// is a strip of one output row. The epilogue ends B, then C.
#define KH8_PRO_1(k, X, Y, then) \
  KH8_AT(q##k) KH8_BIAS_##X KH8_B(s##k) KH8_AT(p##k) KH8_ROW(1, pf, X, X0, X0) KH8_AT(s##k) KH8_ROW(1, p, Y, X, X0) then
#define KH8_WALK_1                                                                                              \
  KH8_SETS(1) KH8_ENTRY KH8_STRIP "br %[t]" KH8_NL KH8_AT(tab) KH8_B(p0) KH8_B(p1) KH8_B(p2) KH8_B(p3) KH8_B(p4) \
  KH8_B(p5) KH8_B(pm) KH8_B(q0) KH8_B(q1) KH8_B(q2) KH8_B(q3) KH8_B(q4) KH8_B(q5) KH8_B(qm)                     \
  KH8_AT(qm) KH8_BIAS_A KH8_B(sm) KH8_AT(pm) KH8_ROW(1, pf, A, X0, X0) KH8_AT(sm) KH8_ROW(1, p, X0, A, X0)       \
  KH8_LAST_ROW(1, A, KH8_TMP_1)                                                                                 \
  KH8_B(end) KH8_PRO_1(1, C, A, KH8_B(r1)) KH8_PRO_1(2, A, B, KH8_B(r2)) KH8_PRO_1(3, B, C, KH8_B(r3))          \
  KH8_PRO_1(4, C, A, KH8_B(r4)) KH8_PRO_1(5, A, B, KH8_B(r5)) KH8_PRO_1(0, B, C, "cbz %w[n], " KH8_L(e) KH8_NL)  \
  KH8_AT(r0) KH8_ROW(1, p, A, C, B) KH8_AT(r1) KH8_ROW(1, p, B, A, C) KH8_AT(r2) KH8_ROW(1, p, C, B, A)           \
  KH8_AT(r3) KH8_ROW(1, p, A, C, B) KH8_AT(r4) KH8_ROW(1, p, B, A, C) KH8_AT(r5) KH8_ROW(1, p, C, B, A)           \
  "subs %w[n], %w[n], #1" KH8_NL "b.ne " KH8_L(r0) KH8_NL                                                       \
  KH8_AT(e) KH8_ROW(1, p, X0, C, B) KH8_LAST_ROW(1, C, KH8_TMP_1) KH8_AT(end) KH8_NEXT

// Stride 2. The body goes 4 pairs of rows (an odd row: ky 1 of one set; an even row: end
// it, start the other), sets A, B, A, B; prologue ph (0..3) starts the set of pair ph
// and enters there (ph 0 skipping the body when n is 0); the epilogue ends A.
#define KH8_PRO_2(k, X, then) \
  KH8_AT(q##k) KH8_BIAS_##X KH8_B(s##k) KH8_AT(p##k) KH8_ROW(2, pf, X, X0, X0) KH8_AT(s##k) then
#define KH8_WALK_2                                                                                               \
  KH8_SETS(2) KH8_ENTRY KH8_STRIP "br %[t]" KH8_NL KH8_AT(tab) KH8_B(p0) KH8_B(p1) KH8_B(p2) KH8_B(p3) KH8_B(q0)  \
  KH8_B(q1) KH8_B(q2) KH8_B(q3) KH8_PRO_2(1, B, KH8_B(r1)) KH8_PRO_2(2, A, KH8_B(r2)) KH8_PRO_2(3, B, KH8_B(r3))  \
  KH8_PRO_2(0, A, "cbz %w[n], " KH8_L(e) KH8_NL)                                                                  \
  KH8_AT(r0) KH8_ROW(2, p, X0, A, X0) KH8_ROW(2, p, B, X0, A) KH8_AT(r1) KH8_ROW(2, p, X0, B, X0)                \
  KH8_ROW(2, p, A, X0, B) KH8_AT(r2) KH8_ROW(2, p, X0, A, X0) KH8_ROW(2, p, B, X0, A) KH8_AT(r3)                 \
  KH8_ROW(2, p, X0, B, X0) KH8_ROW(2, p, A, X0, B) "subs %w[n], %w[n], #1" KH8_NL "b.ne " KH8_L(r0) KH8_NL       \
  KH8_AT(e) KH8_ROW(2, p, X0, A, X0) KH8_LAST_ROW(2, A, KH8_TMP_2) KH8_AT(end) KH8_NEXT

#define KH8_OPERANDS                                                                                          \
  : [pf] "+r"(pf), [p] "+r"(p), [pl] "+r"(pl), [o] "+r"(out), [w] "+r"(w), [nb] "+r"(blocks), [ns] "=&r"(ns),    \
    [n] "=&r"(n), [t] "=&r"(t)                                                                                 \
  : [ns0] "r"(k.strips), [n0] "r"(k.c.n), [ph] "r"(k.c.ph), [is] "r"(in_step), [os] "r"(k.out_row),              \
    [df] "r"(k.strip_first), [dp] "r"(k.strip_rows), [dout] "r"(k.strip_out), [bf] "r"(k.block_first),           \
    [bp] "r"(k.block_rows), [bo] "r"(k.block_out), [zb] "r"(k.last_zero), [act] "r"(&a),   \
    [var] "i"(kVariant<N, ZL, ZR, St>)                                                                         \
  : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", \
    "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30"

// The assembler symbols of a variant in one number.
template <int N, int ZL, int ZR, Store St>
constexpr int kVariant = N | ZL << 3 | ZR << 4 | static_cast<int>(St) << 5;

// Bytes a row's loads advance before its last ld1 (post-incremented by the row step).
template <int S, int N, int ZL, int ZR>
constexpr ptrdiff_t kLoadedBefore = 64 * (((N - 1) * S + 3 - ZL - ZR - 1) / 4);

// The walk k (k.strips >= 1 strips of N pixels, k.blocks >= 1 blocks): ZL, ZR say whether
// column -1 / the column after the strip is padding (then k's pointers are at column 1
// of the strip, or its last column is not read).
template <int S, int N, int ZL, int ZR, Store St>
__attribute__((always_inline)) inline void walk(const Walk& k, const Act& a) {
  const ptrdiff_t in_step = k.in_row - kLoadedBefore<S, N, ZL, ZR>;
  const __fp16 *w = k.w, *pf = k.pf, *p = k.p, *pl = k.pl;
  __fp16* out = k.out;
  int blocks = k.blocks, ns, n;
  const void* t;
  if constexpr (S == 1) {
    asm volatile(KH8_WALK_1 KH8_OPERANDS);
  } else {
    asm volatile(KH8_WALK_2 KH8_OPERANDS);
  }
}

}  // namespace kestrel::kernels::arm::dwconv3x3_pack8_f16

#undef KH8_ACT4
#undef KH8_AT
#undef KH8_BIAS4
#undef KH8_BIAS_A
#undef KH8_BIAS_B
#undef KH8_BIAS_C
#undef KH8_BIAS_X0
#undef KH8_CALL
#undef KH8_CALL2
#undef KH8_CLIP1
#undef KH8_CLIP2
#undef KH8_COL1_0
#undef KH8_COL1_1
#undef KH8_COL1_2
#undef KH8_COL2_0
#undef KH8_COL2_1
#undef KH8_COL2_2
#undef KH8_B
#undef KH8_LAST_ROW
#undef KH8_PRO_1
#undef KH8_PRO_2
#undef KH8_END
#undef KH8_END6
#undef KH8_END_A
#undef KH8_END_B
#undef KH8_END_C
#undef KH8_END_X0
#undef KH8_ENTRY
#undef KH8_FMA
#undef KH8_G_A
#undef KH8_G_B
#undef KH8_G_C
#undef KH8_G_X0
#undef KH8_IFN
#undef KH8_L
#undef KH8_LD4
#undef KH8_LDS
#undef KH8_LD_1
#undef KH8_LD_2
#undef KH8_LEAKY1
#undef KH8_LEAKY2
#undef KH8_LIST
#undef KH8_NEXT
#undef KH8_NL
#undef KH8_OPERANDS
#undef KH8_Q
#undef KH8_RELU1
#undef KH8_RELU2
#undef KH8_ROW
#undef KH8_SETS
#undef KH8_SET_A
#undef KH8_SET_B
#undef KH8_SET_C
#undef KH8_STRIP
#undef KH8_TAP4_0
#undef KH8_TAP4_1
#undef KH8_TAP4_2
#undef KH8_NOT_LAST
#undef KH8_TAPS
#undef KH8_TMP_1
#undef KH8_TMP_2
#undef KH8_V
#undef KH8_WALK_1
#undef KH8_WALK_2
