// The inner loops of the NEON 1x1 convolution on 4-channel blocked (pack4) maps:
// 8 output channels x 8 pixels (and 4 and 1 for the rest of a map) in 16 float32x4
// accumulators, each one pixel's 4 output channels, so that the accumulators are the
// output's pack4 vectors as they are. A
// 4-channel step reads 8 input vectors (8 pixels of one channel block: 32 contiguous
// floats, read in place) and 8 weight vectors, and runs 64 FMAs, each taking its
// input channel by lane. Self-contained (only <arm_neon.h>) so that bench scripts can
// compile it alone and hand the loop to llvm-mca.
//
// Operand layouts (written by f32_conv1x1_pack4_8x8_neon.cpp):
//   weights  w[c * 4H + o]  : input channel c, output channel o of a block of 4H
//                             (H = 2 halves of 4 channels; H = 1 for a last block of
//                             at most 4), then its bias broadcast to 8 pixels:
//                             [H][8 pixels][4 channels]
//   input    x + j * xstep + 4 * p : channel block j (channels 4j..4j+3) of pixel p
// Every tile computes acc = bias, then acc = fma(acc, w_c, x_c) for c = 0..K-1 in
// order: the fma chain of the planar f32_conv1x1_8x8_neon, so blocked and planar maps
// give the same bits.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace kestrel::kernels::arm::conv1x1_pack4 {

constexpr int kTilePixels = 8;
constexpr int kBlockOut = 8;     // output channels per weight block
constexpr int kBiasFloats = 64;  // a full block's broadcast bias: [2][8][4]
constexpr size_t kStepWeights = 32;  // weight floats a step reads: 4 rows x 8 channels

// The accumulators of an 8-channel tile of up to 8 pixels: lN = output channels 0..3
// of pixel N (one vector of output block 2b), hN = channels 4..7 (block 2b + 1).
// Tiles of P < 8 pixels leave the members of pixels P..7 undefined.
struct Acc8x8 {
  float32x4_t l0, l1, l2, l3, l4, l5, l6, l7;
  float32x4_t h0, h1, h2, h3, h4, h5, h6, h7;
};

// The constants of the tiles over one X (kb blocks of 4 rows, rows xstep floats
// apart), computed once per GEMM. The K loop is a body of 16 steps that the first turn
// enters part-way, at step (16 - kb % 16) % 16, so that a tile of any kb takes one
// computed branch and 2 loop instructions per 16 steps (a loop of 4 steps with tails
// of 2 and 1 took 2 per 4 steps and 3 more per tile: 0.8 M instructions of MobileNet
// v1's 159 M).
constexpr size_t kBodySteps = 16;
// A tile whose kb is a multiple of 32 (K a multiple of 128: most of MobileNet's and
// SSD's pointwise layers) runs a body of twice the steps from its start: 2 loop
// instructions per 32 steps (~0.1 M of MobileNet v1's instructions, 0.25 M of SSD's).
constexpr size_t kLongBodySteps = 32;
// Bytes of one step's instructions (loads and FMAs, 4 bytes each) for 8, 4 and 1
// pixels; the assembly checks them (.error otherwise).
constexpr size_t step_bytes(int p) { return 4 * (p == 8 ? 4 + 64 : p == 4 ? 3 + 32 : 3 + 8); }

struct Loop {
  size_t kb;
  size_t skip;        // steps of the body the first turn skips
  size_t xstep;       // bytes between the rows of a block
  ptrdiff_t x8_step;  // an 8-pixel tile's second load of a row: the rest of the row step
  ptrdiff_t x8_next;  // from past an 8-pixel tile's last row to the next tile's first
  size_t entry8, entry4, entry1;  // byte offsets of step `skip` in the bodies of P pixels
  Loop(size_t kb_, size_t xstep_floats)
      : kb(kb_),
        skip((kBodySteps - kb % kBodySteps) % kBodySteps),
        xstep(xstep_floats * sizeof(float)),
        x8_step(static_cast<ptrdiff_t>(xstep) - 64),
        x8_next(static_cast<ptrdiff_t>(kTilePixels * 4 * sizeof(float)) - static_cast<ptrdiff_t>(kb * xstep)),
        entry8(skip * step_bytes(8)),
        entry4(skip * step_bytes(4)),
        entry1(skip * step_bytes(1)) {}
  size_t entry(int p) const { return p == 8 ? entry8 : p == 4 ? entry4 : entry1; }
};

// The 8-channel x P-pixel tile (P = 8, or 4 and 1: the rest of a square map is 0, 1
// or 4 pixels) over kb >= 1 channel blocks, in assembly: GCC 12 keeps the 4-register
// tuples of vld1q_f32_x4 (ld1 {4 registers}: a quarter of the load instructions of
// single loads) apart from 16 accumulators only by spilling, some 40 stack moves per
// step, and with single loads (ldp) a step takes 8 loads instead of 4. Registers:
// v0-v7 the input (pixels 0-7), v8-v15 the weights ({c0, c1} and {c2, c3} of the step,
// low and high halves), v16-v23 / v24-v31 the low / high accumulators, bound to the
// outputs. A step's loads come first, together: loading the next step's operands as
// soon as the FMAs are done with them was slower on llvm-mca's in-order Cortex-A53
// (208 cycles per two steps against 191: it stalls each load behind the FMAs before
// it) and the same on the A72. The loop ends on the weight pointer (every tile of a
// block reads the same kb * 128 bytes of weights), so no counter is set per tile.
// One pixel and lane: its low (v16 + p) and high (v24 + p) accumulators.
#define KP4_PIX(lo, hi, x, w_lo, w_hi, lane)                 \
  "fmla " #lo ".4s, " #w_lo ".4s, " #x ".s[" #lane "]\n\t"   \
  "fmla " #hi ".4s, " #w_hi ".4s, " #x ".s[" #lane "]\n\t"
#define KP4_LANE1(w_lo, w_hi, lane) KP4_PIX(v16, v24, v0, w_lo, w_hi, lane)
#define KP4_LANE4(w_lo, w_hi, lane)                                                              \
  KP4_LANE1(w_lo, w_hi, lane) KP4_PIX(v17, v25, v1, w_lo, w_hi, lane)                            \
  KP4_PIX(v18, v26, v2, w_lo, w_hi, lane) KP4_PIX(v19, v27, v3, w_lo, w_hi, lane)
#define KP4_LANE8(w_lo, w_hi, lane)                                                              \
  KP4_LANE4(w_lo, w_hi, lane) KP4_PIX(v20, v28, v4, w_lo, w_hi, lane)                            \
  KP4_PIX(v21, v29, v5, w_lo, w_hi, lane) KP4_PIX(v22, v30, v6, w_lo, w_hi, lane)                \
  KP4_PIX(v23, v31, v7, w_lo, w_hi, lane)
#define KP4_LOAD_X1 "ld1 {v0.4s}, [%[x]], %[xs]\n\t"
#define KP4_LOAD_X4 "ld1 {v0.4s-v3.4s}, [%[x]], %[xs]\n\t"
#define KP4_LOAD_X8 "ld1 {v0.4s-v3.4s}, [%[x]], #64\n\t" "ld1 {v4.4s-v7.4s}, [%[x]], %[xs]\n\t"
#define KP4_BIAS1 "ld1 {v16.4s}, [%[b0]]\n\t" "ld1 {v24.4s}, [%[b2]]\n\t"
#define KP4_BIAS4 "ld1 {v16.4s-v19.4s}, [%[b0]]\n\t" "ld1 {v24.4s-v27.4s}, [%[b2]]\n\t"
#define KP4_BIAS8 KP4_BIAS4 "ld1 {v20.4s-v23.4s}, [%[b1]]\n\t" "ld1 {v28.4s-v31.4s}, [%[b3]]\n\t"
#define KP4_STEP(LOAD_X, LANE)                                                    \
  LOAD_X                                                                          \
  "ld1 {v8.4s-v11.4s}, [%[w]], #64\n\t"                                           \
  "ld1 {v12.4s-v15.4s}, [%[w]], #64\n\t"                                          \
  LANE(v8, v9, 0) LANE(v10, v11, 1) LANE(v12, v13, 2) LANE(v14, v15, 3)
#define KP4_STEP4(LOAD_X, LANE) \
  KP4_STEP(LOAD_X, LANE) KP4_STEP(LOAD_X, LANE) KP4_STEP(LOAD_X, LANE) KP4_STEP(LOAD_X, LANE)
// Enters the 16-step body at step `skip` (lp.entry: its byte offset), then turns until
// the weights are read; NEXT moves x on (8 pixels: to the next tile).
#define KP4_ENTER                      \
  "adr %[e], .Lkp4_body%=\n\t"          \
  "add %[e], %[e], %[entry]\n\t"        \
  "br %[e]\n"
#define KP4_STEP16(LOAD_X, LANE) \
  KP4_STEP4(LOAD_X, LANE) KP4_STEP4(LOAD_X, LANE) KP4_STEP4(LOAD_X, LANE) KP4_STEP4(LOAD_X, LANE)
// MORE: the steps after the first 16 (kLongBodySteps) or nothing.
#define KP4_TILE(BIAS, ENTER, LOAD_X, LANE, MORE, NEXT)                                                \
  asm(BIAS                                                                                             \
      ENTER                                                                                            \
      ".Lkp4_body%=:\n\t"                                                                              \
      KP4_STEP(LOAD_X, LANE)                                                                           \
      ".Lkp4_step1%=:\n\t"                                                                             \
      KP4_STEP(LOAD_X, LANE) KP4_STEP(LOAD_X, LANE) KP4_STEP(LOAD_X, LANE)                             \
      KP4_STEP4(LOAD_X, LANE) ".Lkp4_step8%=:\n\t" KP4_STEP4(LOAD_X, LANE) KP4_STEP4(LOAD_X, LANE)       \
      MORE                                                                                             \
      "cmp %[w], %[wend]\n\t"                                                                          \
      "b.ne .Lkp4_body%=\n\t"                                                                          \
      ".if .Lkp4_step1%= - .Lkp4_body%= - %c[sb]\n\t"                                                  \
      ".error \"step_bytes() is not the size of a step\"\n\t"                                          \
      ".endif\n\t"                                                                                     \
      NEXT                                                                                             \
      : "=w"(l0), "=w"(l1), "=w"(l2), "=w"(l3), "=w"(l4), "=w"(l5), "=w"(l6), "=w"(l7), "=w"(h0),        \
        "=w"(h1), "=w"(h2), "=w"(h3), "=w"(h4), "=w"(h5), "=w"(h6), "=w"(h7), [w] "+r"(w), [x] "+r"(x),   \
        [e] "=&r"(e)                                                                                     \
      : [entry] "r"(lp.entry(P)), [wend] "r"(wend), [xs] "r"(xs), [xn] "r"(lp.x8_next), [b0] "r"(bias),  \
        [b1] "r"(bias + 16), [b2] "r"(bias + 32), [b3] "r"(bias + 48), [sb] "i"(step_bytes(P))           \
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",   \
        "v15", "cc", "memory")

// Explicit register variables: the only way to name the registers an operand must be
// in (the accumulators must be where the assembly's FMAs leave them).
#define KP4_ACC_REGISTERS                                                                \
  register float32x4_t l0 asm("v16"), l1 asm("v17"), l2 asm("v18"), l3 asm("v19");       \
  register float32x4_t l4 asm("v20"), l5 asm("v21"), l6 asm("v22"), l7 asm("v23");       \
  register float32x4_t h0 asm("v24"), h1 asm("v25"), h2 asm("v26"), h3 asm("v27");       \
  register float32x4_t h4 asm("v28"), h5 asm("v29"), h6 asm("v30"), h7 asm("v31")

// How a tile's K loop starts: entered part-way (any kb), or at the start of the body
// of 16 steps (kb % 16 == 0) or of 32 (kb % 32 == 0; 8-pixel tiles only).
// kHalf: kb % 16 == 8, entered at step 8 by a plain branch (2 instructions a tile
// fewer than the computed one).
enum class Body { kEntered, kHalf, kWhole16, kWhole32 };

// w: the block's weights (kb * 128 bytes), bias: its broadcast bias ([2][8][4]); x:
// the tile's first pixel in row 0, moved on: 8 pixels, to the next 8-pixel tile
// (x + 32 floats); 4 and 1, past the last row.
template <int P, Body kBody = Body::kEntered>
__attribute__((always_inline)) inline Acc8x8 tile(const Loop& lp, const float* w, const float*& x,
                                                  const float* bias) {
  static_assert(P == 8 || P == 4 || P == 1, "8, 4 or 1 pixels");
  KP4_ACC_REGISTERS;
  const float* wend = w + lp.kb * kStepWeights;
  const size_t xs = P == 8 ? static_cast<size_t>(lp.x8_step) : lp.xstep;
  uint64_t e;
  // A whole body (kb a multiple of its steps; so are most layers' K / 4) is entered at
  // its start without the computed branch.
  static_assert(P == 8 || kBody == Body::kEntered, "whole bodies for 8-pixel tiles");
  if constexpr (kBody == Body::kWhole32) {
    KP4_TILE(KP4_BIAS8, "", KP4_LOAD_X8, KP4_LANE8, KP4_STEP16(KP4_LOAD_X8, KP4_LANE8), "add %[x], %[x], %[xn]\n\t");
  } else if constexpr (kBody == Body::kHalf) {
    KP4_TILE(KP4_BIAS8, "b .Lkp4_step8%=\n\t", KP4_LOAD_X8, KP4_LANE8, "", "add %[x], %[x], %[xn]\n\t");
  } else if constexpr (kBody == Body::kWhole16) {
    KP4_TILE(KP4_BIAS8, "", KP4_LOAD_X8, KP4_LANE8, "", "add %[x], %[x], %[xn]\n\t");
  } else if constexpr (P == 8) {
    KP4_TILE(KP4_BIAS8, KP4_ENTER, KP4_LOAD_X8, KP4_LANE8, "", "add %[x], %[x], %[xn]\n\t");
  } else if constexpr (P == 4) {
    KP4_TILE(KP4_BIAS4, KP4_ENTER, KP4_LOAD_X4, KP4_LANE4, "", "");
  } else {
    KP4_TILE(KP4_BIAS1, KP4_ENTER, KP4_LOAD_X1, KP4_LANE1, "", "");
  }
  return Acc8x8{l0, l1, l2, l3, l4, l5, l6, l7, h0, h1, h2, h3, h4, h5, h6, h7};
}

// Stores an 8 x 8 tile as two runs of 8 pack4 vectors (lo, hi) with 4 instructions,
// moving lo and hi on by 8 vectors: the registers are bound back to v16-v31, where
// the FMAs left them (and the fused activation, which GCC computes in place), so that
// st1's consecutive registers hold them without moves (vst1q_f32 pairs: 8 stp and 2
// str, GCC pairing them unevenly).
__attribute__((always_inline)) inline void store8x8_pack4(const Acc8x8& a, float*& lo, float*& hi) {
  KP4_ACC_REGISTERS;
  l0 = a.l0, l1 = a.l1, l2 = a.l2, l3 = a.l3, l4 = a.l4, l5 = a.l5, l6 = a.l6, l7 = a.l7;
  h0 = a.h0, h1 = a.h1, h2 = a.h2, h3 = a.h3, h4 = a.h4, h5 = a.h5, h6 = a.h6, h7 = a.h7;
  asm volatile(
      "st1 {v16.4s-v19.4s}, [%[lo]], #64\n\t"
      "st1 {v20.4s-v23.4s}, [%[lo]], #64\n\t"
      "st1 {v24.4s-v27.4s}, [%[hi]], #64\n\t"
      "st1 {v28.4s-v31.4s}, [%[hi]], #64\n\t"
      : [lo] "+r"(lo), [hi] "+r"(hi)
      : "w"(l0), "w"(l1), "w"(l2), "w"(l3), "w"(l4), "w"(l5), "w"(l6), "w"(l7), "w"(h0), "w"(h1), "w"(h2), "w"(h3),
        "w"(h4), "w"(h5), "w"(h6), "w"(h7)
      : "memory");
}

#undef KP4_PIX
#undef KP4_LANE1
#undef KP4_LANE4
#undef KP4_LANE8
#undef KP4_LOAD_X1
#undef KP4_LOAD_X4
#undef KP4_LOAD_X8
#undef KP4_BIAS1
#undef KP4_BIAS4
#undef KP4_BIAS8
#undef KP4_STEP
#undef KP4_STEP4
#undef KP4_STEP16
#undef KP4_TILE
#undef KP4_ENTER
#undef KP4_ACC_REGISTERS

// Every other tile (a last 2, 3, 5, 6 or 7 pixels of a map, a last block of 4 output
// channels, a planar output's partial block): P pixels x H halves in intrinsics, the
// result left in buf as [H][8][4] for the caller's epilogue. Named members, not
// arrays, so that GCC keeps the accumulators in registers.
struct Run {
  float32x4_t p0, p1, p2, p3, p4, p5, p6, p7;
};

__attribute__((always_inline)) inline Run splat_run(float32x4_t b) {
  return Run{b, b, b, b, b, b, b, b};
}

template <int P>
__attribute__((always_inline)) inline Run load_run(const float* x) {
  Run r;
  r.p0 = vld1q_f32(x);
  if constexpr (P > 1) r.p1 = vld1q_f32(x + 4);
  if constexpr (P > 2) r.p2 = vld1q_f32(x + 8);
  if constexpr (P > 3) r.p3 = vld1q_f32(x + 12);
  if constexpr (P > 4) r.p4 = vld1q_f32(x + 16);
  if constexpr (P > 5) r.p5 = vld1q_f32(x + 20);
  if constexpr (P > 6) r.p6 = vld1q_f32(x + 24);
  if constexpr (P > 7) r.p7 = vld1q_f32(x + 28);
  return r;
}

template <int P>
__attribute__((always_inline)) inline void store_run(float* dst, const Run& r) {
  vst1q_f32(dst, r.p0);
  if constexpr (P > 1) vst1q_f32(dst + 4, r.p1);
  if constexpr (P > 2) vst1q_f32(dst + 8, r.p2);
  if constexpr (P > 3) vst1q_f32(dst + 12, r.p3);
  if constexpr (P > 4) vst1q_f32(dst + 16, r.p4);
  if constexpr (P > 5) vst1q_f32(dst + 20, r.p5);
  if constexpr (P > 6) vst1q_f32(dst + 24, r.p6);
  if constexpr (P > 7) vst1q_f32(dst + 28, r.p7);
}

// a(p) += w * x(p).s[L] for the P pixels.
template <int P, int L>
__attribute__((always_inline)) inline void fma_run(Run& a, float32x4_t w, const Run& x) {
  a.p0 = vfmaq_laneq_f32(a.p0, w, x.p0, L);
  if constexpr (P > 1) a.p1 = vfmaq_laneq_f32(a.p1, w, x.p1, L);
  if constexpr (P > 2) a.p2 = vfmaq_laneq_f32(a.p2, w, x.p2, L);
  if constexpr (P > 3) a.p3 = vfmaq_laneq_f32(a.p3, w, x.p3, L);
  if constexpr (P > 4) a.p4 = vfmaq_laneq_f32(a.p4, w, x.p4, L);
  if constexpr (P > 5) a.p5 = vfmaq_laneq_f32(a.p5, w, x.p5, L);
  if constexpr (P > 6) a.p6 = vfmaq_laneq_f32(a.p6, w, x.p6, L);
  if constexpr (P > 7) a.p7 = vfmaq_laneq_f32(a.p7, w, x.p7, L);
}

template <int P, int H>
__attribute__((always_inline)) inline void tile_any(size_t kb, const float* w, const float* x, size_t xstep,
                                                    const float* bias, float* buf) {
  static_assert(P >= 1 && P <= kTilePixels && (H == 1 || H == 2), "1..8 pixels, 1 or 2 halves");
  Run lo = splat_run(vld1q_f32(bias));
  Run hi = H == 2 ? splat_run(vld1q_f32(bias + 4 * kTilePixels)) : Run{};
  for (size_t j = 0; j < kb; ++j, x += xstep) {
    const Run xr = load_run<P>(x);
    if constexpr (H == 2) {
      fma_run<P, 0>(lo, vld1q_f32(w), xr);
      fma_run<P, 0>(hi, vld1q_f32(w + 4), xr);
      fma_run<P, 1>(lo, vld1q_f32(w + 8), xr);
      fma_run<P, 1>(hi, vld1q_f32(w + 12), xr);
      fma_run<P, 2>(lo, vld1q_f32(w + 16), xr);
      fma_run<P, 2>(hi, vld1q_f32(w + 20), xr);
      fma_run<P, 3>(lo, vld1q_f32(w + 24), xr);
      fma_run<P, 3>(hi, vld1q_f32(w + 28), xr);
      w += 32;
    } else {
      fma_run<P, 0>(lo, vld1q_f32(w), xr);
      fma_run<P, 1>(lo, vld1q_f32(w + 4), xr);
      fma_run<P, 2>(lo, vld1q_f32(w + 8), xr);
      fma_run<P, 3>(lo, vld1q_f32(w + 12), xr);
      w += 16;
    }
  }
  store_run<P>(buf, lo);
  if constexpr (H == 2) store_run<P>(buf + 4 * kTilePixels, hi);
}

}  // namespace kestrel::kernels::arm::conv1x1_pack4
