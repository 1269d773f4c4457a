// The fp16 stem's tiles (K x K windows, K = 3, 5, 7, stride S = 1 or 2, of a few planar
// channels of halves into 8-channel blocks): compiled into
// src/arm/f16_conv_stem_pack1to8_neonfp16.cpp and into bench/arm/loops/f16_conv_stem_pack8.cpp
// for llvm-mca. Needs -march=armv8.2-a+fp16.
//
// Every output vector holds 8 output channels of one pixel; a tap adds its weight vector
// (8 output channels at one input channel, ky, kx) times one input half, taken by lane
// from the input row's vectors (FMLA by element), so nothing is transposed or broadcast.
// Each output starts from its bias and takes one fused multiply-add per tap inside the
// map, input channel by input channel, row by row, column by column: the order of
// conv_reference_f16, which skips the padding's taps as these tiles do.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"

namespace kestrel::kernels::arm::stem_pack8_f16 {

using half = __fp16;
constexpr int kLanes = 8;  // output channels per block
constexpr int kTile = 8;   // output pixels per tile

// Vectors of one input row that a tile of 8 pixels reads: its 7 * S + K halves.
template <int K, int S>
constexpr int kRowVecs = (7 * S + K + kLanes - 1) / kLanes;

// Input half e (0-20) of a row loaded into v0-v2: FMLA by element on .8h takes its
// element from v0-v15 only.
#define F16S_E_0 "v0.h[0]"
#define F16S_E_1 "v0.h[1]"
#define F16S_E_2 "v0.h[2]"
#define F16S_E_3 "v0.h[3]"
#define F16S_E_4 "v0.h[4]"
#define F16S_E_5 "v0.h[5]"
#define F16S_E_6 "v0.h[6]"
#define F16S_E_7 "v0.h[7]"
#define F16S_E_8 "v1.h[0]"
#define F16S_E_9 "v1.h[1]"
#define F16S_E_10 "v1.h[2]"
#define F16S_E_11 "v1.h[3]"
#define F16S_E_12 "v1.h[4]"
#define F16S_E_13 "v1.h[5]"
#define F16S_E_14 "v1.h[6]"
#define F16S_E_15 "v1.h[7]"
#define F16S_E_16 "v2.h[0]"
#define F16S_E_17 "v2.h[1]"
#define F16S_E_18 "v2.h[2]"
#define F16S_E_19 "v2.h[3]"
#define F16S_E_20 "v2.h[4]"
// Pixel p of both blocks (accumulators a and b) takes input half e with weights wa, wb.
#define F16S_PIX(a, b, wa, wb, e)                               \
  "fmla v" #a ".8h, " wa ".8h, " F16S_E_##e "\n\t"             \
  "fmla v" #b ".8h, " wb ".8h, " F16S_E_##e "\n\t"
#define F16S_PIX8(wa, wb, e0, e1, e2, e3, e4, e5, e6, e7)                                      \
  F16S_PIX(16, 24, wa, wb, e0) F16S_PIX(17, 25, wa, wb, e1) F16S_PIX(18, 26, wa, wb, e2)       \
  F16S_PIX(19, 27, wa, wb, e3) F16S_PIX(20, 28, wa, wb, e4) F16S_PIX(21, 29, wa, wb, e5)       \
  F16S_PIX(22, 30, wa, wb, e6) F16S_PIX(23, 31, wa, wb, e7)
// Tap kx at stride S: pixel p reads half p * S + kx of the row.
#define F16S_TAP(S, kx, wa, wb) F16S_TAP_##S##_##kx(wa, wb)
#define F16S_TAP_1_0(wa, wb) F16S_PIX8(wa, wb, 0, 1, 2, 3, 4, 5, 6, 7)
#define F16S_TAP_1_1(wa, wb) F16S_PIX8(wa, wb, 1, 2, 3, 4, 5, 6, 7, 8)
#define F16S_TAP_1_2(wa, wb) F16S_PIX8(wa, wb, 2, 3, 4, 5, 6, 7, 8, 9)
#define F16S_TAP_1_3(wa, wb) F16S_PIX8(wa, wb, 3, 4, 5, 6, 7, 8, 9, 10)
#define F16S_TAP_1_4(wa, wb) F16S_PIX8(wa, wb, 4, 5, 6, 7, 8, 9, 10, 11)
#define F16S_TAP_1_5(wa, wb) F16S_PIX8(wa, wb, 5, 6, 7, 8, 9, 10, 11, 12)
#define F16S_TAP_1_6(wa, wb) F16S_PIX8(wa, wb, 6, 7, 8, 9, 10, 11, 12, 13)
#define F16S_TAP_2_0(wa, wb) F16S_PIX8(wa, wb, 0, 2, 4, 6, 8, 10, 12, 14)
#define F16S_TAP_2_1(wa, wb) F16S_PIX8(wa, wb, 1, 3, 5, 7, 9, 11, 13, 15)
#define F16S_TAP_2_2(wa, wb) F16S_PIX8(wa, wb, 2, 4, 6, 8, 10, 12, 14, 16)
#define F16S_TAP_2_3(wa, wb) F16S_PIX8(wa, wb, 3, 5, 7, 9, 11, 13, 15, 17)
#define F16S_TAP_2_4(wa, wb) F16S_PIX8(wa, wb, 4, 6, 8, 10, 12, 14, 16, 18)
#define F16S_TAP_2_5(wa, wb) F16S_PIX8(wa, wb, 5, 7, 9, 11, 13, 15, 17, 19)
#define F16S_TAP_2_6(wa, wb) F16S_PIX8(wa, wb, 6, 8, 10, 12, 14, 16, 18, 20)
// A row's kRowVecs vectors in one ld1; xa then steps to the channel's next row (I = rs)
// or to the next channel's first row (I = cs).
#define F16S_ROW(S, I) F16S_ROW_##S(I)
#define F16S_ROW_1(I) "ld1 {v0.8h-v1.8h}, [%[xa]], %[" #I "]\n\t"
#define F16S_ROW_2(I) "ld1 {v0.8h-v2.8h}, [%[xa]], %[" #I "]\n\t"
#define F16S_W4(a, b) "ld1 {" a ".8h-" b ".8h}, [%[w]], #64\n\t"
#define F16S_W2(a, b) "ld1 {" a ".8h-" b ".8h}, [%[w]], #32\n\t"
// One input channel of a 3x3 window: its 18 weight vectors ({block 0, block 1} per tap)
// in 5 loads through v4-v15, the third row's once the first two rows' taps are done.
#define F16S_K3_CHANNEL(S)                                                                           \
  F16S_ROW(S, rs) F16S_W4("v4", "v7") F16S_W4("v8", "v11") F16S_W4("v12", "v15")                    \
  F16S_TAP(S, 0, "v4", "v5") F16S_TAP(S, 1, "v6", "v7") F16S_TAP(S, 2, "v8", "v9")                  \
  F16S_ROW(S, rs) F16S_TAP(S, 0, "v10", "v11") F16S_TAP(S, 1, "v12", "v13") F16S_W4("v4", "v7")     \
  F16S_TAP(S, 2, "v14", "v15") F16S_W2("v8", "v9") F16S_ROW(S, cs) F16S_TAP(S, 0, "v4", "v5")       \
  F16S_TAP(S, 1, "v6", "v7") F16S_TAP(S, 2, "v8", "v9")
// 5x5 and 7x7, a row at a time; a 7-wide row reloads v4-v5 with tap 6 once tap 0 is done.
#define F16S_K5_ROW(S, I)                                                                            \
  F16S_ROW(S, I) F16S_W4("v4", "v7") F16S_W4("v8", "v11") F16S_W2("v12", "v13")                     \
  F16S_TAP(S, 0, "v4", "v5") F16S_TAP(S, 1, "v6", "v7") F16S_TAP(S, 2, "v8", "v9")                  \
  F16S_TAP(S, 3, "v10", "v11") F16S_TAP(S, 4, "v12", "v13")
#define F16S_K5_CHANNEL(S) \
  F16S_K5_ROW(S, rs) F16S_K5_ROW(S, rs) F16S_K5_ROW(S, rs) F16S_K5_ROW(S, rs) F16S_K5_ROW(S, cs)
#define F16S_K7_ROW(S, I)                                                                            \
  F16S_ROW(S, I) F16S_W4("v4", "v7") F16S_W4("v8", "v11") F16S_W4("v12", "v15")                     \
  F16S_TAP(S, 0, "v4", "v5") F16S_W2("v4", "v5") F16S_TAP(S, 1, "v6", "v7")                         \
  F16S_TAP(S, 2, "v8", "v9") F16S_TAP(S, 3, "v10", "v11") F16S_TAP(S, 4, "v12", "v13")              \
  F16S_TAP(S, 5, "v14", "v15") F16S_TAP(S, 6, "v4", "v5")
#define F16S_K7_CHANNEL(S)                                                                           \
  F16S_K7_ROW(S, rs) F16S_K7_ROW(S, rs) F16S_K7_ROW(S, rs) F16S_K7_ROW(S, rs) F16S_K7_ROW(S, rs)    \
  F16S_K7_ROW(S, rs) F16S_K7_ROW(S, cs)
// The accumulators from the replicated biases (4 loads, not 16 moves), then the
// channels. Outputs bound to v16-v31 (explicit register variables: the only way to name
// the registers the FMLAs leave them in and st1 stores them from).
#define F16S_PAIR(CHANNEL)                                                                              \
  asm("ld1 {v16.8h-v19.8h}, [%[w]], #64\n\t"                                                            \
      "ld1 {v20.8h-v23.8h}, [%[w]], #64\n\t"                                                            \
      "ld1 {v24.8h-v27.8h}, [%[w]], #64\n\t"                                                            \
      "ld1 {v28.8h-v31.8h}, [%[w]], #64\n\t"                                                            \
      ".Lf16_stem_channel%=:\n\t" CHANNEL "subs %w[n], %w[n], #1\n\t"                                    \
      "b.ne .Lf16_stem_channel%=\n\t"                                                                   \
      : "=w"(a0), "=w"(a1), "=w"(a2), "=w"(a3), "=w"(a4), "=w"(a5), "=w"(a6), "=w"(a7), "=w"(b0),       \
        "=w"(b1), "=w"(b2), "=w"(b3), "=w"(b4), "=w"(b5), "=w"(b6), "=w"(b7), [w] "+r"(w), [xa] "+r"(x), \
        [n] "+r"(n)                                                                                     \
      : [rs] "r"(rs), [cs] "r"(cs)                                                                      \
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",  \
        "v15", "cc", "memory")

// The epilogue, a block (8 accumulators) per asm (an asm takes at most 30 operands, a
// "+w" counting twice): the activation on each accumulator vr (temporaries vt, vu) in
// the reference's compare-and-select forms of conv1x1_pack8_f16's functors (x < 0 ? 0 :
// x keeps -0 and NaN, where FMAX would not), then 2 st1 of 4 registers (vst1q_f16: 4
// stp), block 1 ostep bytes after block 0. Left to GCC, the activation of the bound
// registers took 10 moves besides its 32 instructions. The temporaries leave v8-v15 (a
// Clip's bounds) or v15 (a LeakyReLU's slope) free: with no register left, GCC moved
// the other block's accumulators through the stack.
#define F16S_EACH_A(M) M(16, 0, 8) M(17, 1, 9) M(18, 2, 10) M(19, 3, 11) M(20, 4, 12) M(21, 5, 13) M(22, 6, 14) M(23, 7, 8)
#define F16S_EACH_B(M) M(24, 0, 8) M(25, 1, 9) M(26, 2, 10) M(27, 3, 11) M(28, 4, 12) M(29, 5, 13) M(30, 6, 14) M(31, 7, 8)
#define F16S_NONE(r, t, u)
#define F16S_RELU(r, t, u) "fcmlt v" #t ".8h, v" #r ".8h, #0.0\n\tbic v" #r ".16b, v" #r ".16b, v" #t ".16b\n\t"
#define F16S_CLIP(r, t, u)                                                                         \
  "fcmgt v" #t ".8h, %[lo].8h, v" #r ".8h\n\tbit v" #r ".16b, %[lo].16b, v" #t ".16b\n\t"           \
  "fcmgt v" #t ".8h, v" #r ".8h, %[hi].8h\n\tbit v" #r ".16b, %[hi].16b, v" #t ".16b\n\t"
#define F16S_LEAKY(r, t, u)                                                                        \
  "fcmgt v" #t ".8h, v" #r ".8h, #0.0\n\tfmul v" #u ".8h, v" #r ".8h, %[slope].8h\n\t"              \
  "bif v" #r ".16b, v" #u ".16b, v" #t ".16b\n\t"
#define F16S_EPILOGUE(ACT, INPUTS, ...)                                                              \
  asm volatile(F16S_EACH_A(ACT) "st1 {v16.8h-v19.8h}, [%[o]], #64\n\tst1 {v20.8h-v23.8h}, [%[o]], %[down]\n\t" \
               : [o] "+r"(o), "+w"(a0), "+w"(a1), "+w"(a2), "+w"(a3), "+w"(a4), "+w"(a5), "+w"(a6), "+w"(a7)  \
               : [down] "r"(down) INPUTS                                                                  \
               : __VA_ARGS__ "memory");                                                                   \
  asm volatile(F16S_EACH_B(ACT) "st1 {v24.8h-v27.8h}, [%[o]], #64\n\tst1 {v28.8h-v31.8h}, [%[o]]\n\t"         \
               : [o] "+r"(o), "+w"(b0), "+w"(b1), "+w"(b2), "+w"(b3), "+w"(b4), "+w"(b5), "+w"(b6), "+w"(b7)  \
               : [down] "r"(down) INPUTS                                                                  \
               : __VA_ARGS__ "memory")
#define F16S_TEMPS8 "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7",
#define F16S_TEMPS15 F16S_TEMPS8 "v8", "v9", "v10", "v11", "v12", "v13", "v14",
#define F16S_CLIP_IN , [lo] "w"(epi.lo), [hi] "w"(epi.hi)
#define F16S_LEAKY_IN , [slope] "w"(epi.slope)

// Two blocks (16 output channels) x 8 pixels whose windows lie inside the map, read in
// place. x: channel 0's first window row at the first pixel's first column; rs: bytes
// from a row to the next, cs: from a channel's last row to the next channel's first. w:
// the pair's panel (16 bias vectors: 8 copies of block 0's, 8 of block 1's; then per
// tap {block 0, block 1}). o: block 0's output at the first pixel, block 1's ostep bytes
// on. Registers: v0-v2 the row, v4-v15 the weights, v16-v23 / v24-v31 the accumulators
// of blocks 0 / 1. Per input channel of a 3x3 window: 3 + 5 loads for 144 FMLAs.
template <int K, int S, class Epi>
__attribute__((always_inline)) inline void pair_tile(const half* x, size_t rs, size_t cs, int n, const half* w,
                                                     half* o, size_t ostep, const Epi& epi) {
  register float16x8_t a0 asm("v16"), a1 asm("v17"), a2 asm("v18"), a3 asm("v19");
  register float16x8_t a4 asm("v20"), a5 asm("v21"), a6 asm("v22"), a7 asm("v23");
  register float16x8_t b0 asm("v24"), b1 asm("v25"), b2 asm("v26"), b3 asm("v27");
  register float16x8_t b4 asm("v28"), b5 asm("v29"), b6 asm("v30"), b7 asm("v31");
  if constexpr (K == 3 && S == 1) F16S_PAIR(F16S_K3_CHANNEL(1));
  if constexpr (K == 3 && S == 2) F16S_PAIR(F16S_K3_CHANNEL(2));
  if constexpr (K == 5 && S == 1) F16S_PAIR(F16S_K5_CHANNEL(1));
  if constexpr (K == 5 && S == 2) F16S_PAIR(F16S_K5_CHANNEL(2));
  if constexpr (K == 7 && S == 1) F16S_PAIR(F16S_K7_CHANNEL(1));
  if constexpr (K == 7 && S == 2) F16S_PAIR(F16S_K7_CHANNEL(2));
  const size_t down = ostep - 64;
  using namespace conv1x1_pack8_f16;
  if constexpr (std::is_same_v<Epi, NoAct>) {
    F16S_EPILOGUE(F16S_NONE, );
  } else if constexpr (std::is_same_v<Epi, ReLU>) {
    F16S_EPILOGUE(F16S_RELU, , F16S_TEMPS8);
  } else if constexpr (std::is_same_v<Epi, Clip>) {
    F16S_EPILOGUE(F16S_CLIP, F16S_CLIP_IN, F16S_TEMPS8);
  } else {
    static_assert(std::is_same_v<Epi, Leaky>, "pair_tile: None, ReLU, Clip or LeakyReLU");
    F16S_EPILOGUE(F16S_LEAKY, F16S_LEAKY_IN, F16S_TEMPS15);
  }
}

#undef F16S_E_0
#undef F16S_E_1
#undef F16S_E_2
#undef F16S_E_3
#undef F16S_E_4
#undef F16S_E_5
#undef F16S_E_6
#undef F16S_E_7
#undef F16S_E_8
#undef F16S_E_9
#undef F16S_E_10
#undef F16S_E_11
#undef F16S_E_12
#undef F16S_E_13
#undef F16S_E_14
#undef F16S_E_15
#undef F16S_E_16
#undef F16S_E_17
#undef F16S_E_18
#undef F16S_E_19
#undef F16S_E_20
#undef F16S_PIX
#undef F16S_PIX8
#undef F16S_TAP
#undef F16S_TAP_1_0
#undef F16S_TAP_1_1
#undef F16S_TAP_1_2
#undef F16S_TAP_1_3
#undef F16S_TAP_1_4
#undef F16S_TAP_1_5
#undef F16S_TAP_1_6
#undef F16S_TAP_2_0
#undef F16S_TAP_2_1
#undef F16S_TAP_2_2
#undef F16S_TAP_2_3
#undef F16S_TAP_2_4
#undef F16S_TAP_2_5
#undef F16S_TAP_2_6
#undef F16S_ROW
#undef F16S_ROW_1
#undef F16S_ROW_2
#undef F16S_W4
#undef F16S_W2
#undef F16S_K3_CHANNEL
#undef F16S_K5_ROW
#undef F16S_K5_CHANNEL
#undef F16S_K7_ROW
#undef F16S_K7_CHANNEL
#undef F16S_PAIR
#undef F16S_EACH_A
#undef F16S_EACH_B
#undef F16S_NONE
#undef F16S_RELU
#undef F16S_CLIP
#undef F16S_LEAKY
#undef F16S_EPILOGUE
#undef F16S_TEMPS8
#undef F16S_TEMPS15
#undef F16S_CLIP_IN
#undef F16S_LEAKY_IN

// acc[p] += w * row[p * S + kx] for every pixel p, the input taken by lane.
template <int S, int kx, int... P>
__attribute__((always_inline)) inline void tap(float16x8_t (&acc)[kTile], float16x8_t w, const float16x8_t* in,
                                               std::integer_sequence<int, P...>) {
  ((acc[P] = vfmaq_laneq_f16(acc[P], w, in[(P * S + kx) / kLanes], (P * S + kx) % kLanes)), ...);
}

// One block x 8 pixels whose columns lie inside the map, rows ky0 to ky1 of the window
// (the others over the padding), in intrinsics (8 accumulators leave GCC registers
// enough): a last odd block, and the tiles of output rows over the top or bottom
// padding. x: channel 0's row ky0 at the first pixel's first column; rstride, cstride:
// halves between rows, channels. w: the block's tap 0, wstep halves from tap to tap.
template <int K, int S, class Epi, int... KX>
__attribute__((always_inline)) inline void block_tile(const half* x, size_t rstride, size_t cstride, int in_c,
                                                      int ky0, int ky1, const half* w, size_t wstep,
                                                      const half* bias, half* o, const Epi& epi,
                                                      std::integer_sequence<int, KX...>) {
  constexpr int kVecs = kRowVecs<K, S>;
  float16x8_t acc[kTile];
  const float16x8_t b = vld1q_f16(bias);
  for (auto& a : acc) a = b;
  for (int ic = 0; ic < in_c; ++ic) {
    const half* r = x + ic * cstride;
    const half* wr = w + static_cast<size_t>(ic * K + ky0) * K * wstep;
    for (int ky = ky0; ky < ky1; ++ky, r += rstride, wr += K * wstep) {
      float16x8_t in[kVecs];
      for (int v = 0; v < kVecs; ++v) in[v] = vld1q_f16(r + kLanes * v);
      (tap<S, KX>(acc, vld1q_f16(wr + KX * wstep), in, std::make_integer_sequence<int, kTile>{}), ...);
    }
  }
  for (int p = 0; p < kTile; ++p) vst1q_f16(o + kLanes * p, epi(acc[p]));
}

// B blocks (1, or the 2 of a pair) of one pixel, taps kx0 to kx1 and ky0 to ky1 (the
// others over the padding): the pixels whose window passes the left or right edge, and
// rows too short for a tile. x: channel 0's row ky0 at column kx0 of the window; w:
// block 0's tap 0, block i's kLanes * i halves on, its bias bias_step * i halves on, its
// output ostep * i halves on.
template <int K, int B, class Epi>
inline void pixel(const half* x, size_t rstride, size_t cstride, int in_c, int ky0, int ky1, int kx0, int kx1,
                  const half* w, size_t wstep, const half* bias, size_t bias_step, half* o, size_t ostep,
                  const Epi& epi) {
  float16x8_t acc[B];
  for (int i = 0; i < B; ++i) acc[i] = vld1q_f16(bias + i * bias_step);
  for (int ic = 0; ic < in_c; ++ic) {
    const half* r = x + ic * cstride;
    const half* wr = w + (static_cast<size_t>(ic * K + ky0) * K + kx0) * wstep;
    for (int ky = ky0; ky < ky1; ++ky, r += rstride, wr += K * wstep) {
      for (int kx = 0; kx < kx1 - kx0; ++kx) {
        const half v = r[kx];
        for (int i = 0; i < B; ++i) acc[i] = vfmaq_n_f16(acc[i], vld1q_f16(wr + kx * wstep + i * kLanes), v);
      }
    }
  }
  for (int i = 0; i < B; ++i) vst1q_f16(o + i * ostep, epi(acc[i]));
}

}  // namespace kestrel::kernels::arm::stem_pack8_f16
