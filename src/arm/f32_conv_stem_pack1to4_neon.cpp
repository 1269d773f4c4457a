// Direct K x K convolution (K = 3, 5, 7; stride 1 or 2) of a map of few planar channels
// (an image: the network's stem) into a 4-channel blocked map (ncnn's pack1to4). Why:
// the im2col SGEMM spent 0.52 other instructions per multiply-add on MobileNet v1's
// 3-channel stem (4.0 M of its 8.3 M in im2col alone, bench/arm/INSN_COUNTS.md), and its
// accumulators hold pixels, so a blocked output would need transposes on top.
//
// A tile is 8 output pixels x 4 output channels (one block) in 8 accumulators, or two
// blocks in 16 (in assembly, pair_tiles); per (input channel, ky) row it loads the
// (7 * S + K) floats it reads once and the K weight vectors of each block, and each of
// the 8 * K fmas per block takes its input by lane, so nothing is transposed. Tiles
// whose reads lie inside the input read its rows in place (in_w floats apart, channels
// in_cstep apart); only the tiles over the padding (the first; the last where its
// window passes the right edge or its loads would pass the map's end; every tile of an
// output row whose window passes the top or bottom) read per-thread zero-padded copies
// of the rows, of just the columns they read. Each output is one fma chain over
// kk = (ic * K + ky) * K + kx from zero (the first product an fmul: see plain_bias)
// with the bias added last: the order of f32_conv_sgemm_8x12_neon, so blocked and
// planar networks agree bit for bit. MobileNet v1's conv1 (3x3 stride 2, 3 -> 32 at
// 224x224) on cortex-a72: 3.23 M instructions for 2.71 M multiplies (3.35 M with every
// row copied once per output row reading it, zeroed accumulators and a row's 6 weight
// vectors in 2 loads).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm {
namespace {

using gemm::Act;
using gemm::Epilogue;

constexpr int kLanes = 4;      // output channels per block (pack4)
constexpr int kTile = 8;       // output pixels per tile
constexpr int kMaxInC = 8;     // beyond a few channels im2col + GEMM reuses its tiles better
constexpr int kSlack = 3;      // floats a tile's last vector may read past its last tap

// Floats of a padded input row: every tile's reads, rounded up to whole vectors.
int padded_width(const ConvGeometry& g) {
  const int tiles = (g.out_w + kTile - 1) / kTile;
  const int reads = (tiles * kTile - 1) * g.sw + g.kw + kSlack;
  return (std::max(reads, g.pad_left + g.in_w) + 3) / 4 * 4;
}

bool supports(const ConvGeometry& g) {
  const bool window = g.kh == g.kw && (g.kh == 3 || g.kh == 5 || g.kh == 7) && g.dh == 1 && g.dw == 1;
  const bool stride = g.sh == g.sw && (g.sh == 1 || g.sh == 2);
  return window && stride && g.group == 1 && g.in_c >= 1 && g.in_c <= kMaxInC && g.in_pack == 1 &&
         g.out_pack == kLanes && g.out_c % kLanes == 0 && g.out_h >= 1 && g.out_w >= 1;
}

size_t blocks(const ConvGeometry& g) { return static_cast<size_t>(g.out_c) / kLanes; }
size_t taps(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) * g.kh * g.kw; }

size_t packed_floats(const ConvGeometry& g) { return blocks(g) * kLanes * (taps(g) + 1); }

// Blocks go in pairs, a last odd block alone. A group of B blocks starting at block b
// keeps its weight vectors at b * taps * 4 floats as [kk][B][4] (kk in the SGEMM's
// order), so that a pair's step reads its 2K vectors in one run; then [block][4] biases.
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const size_t n = taps(g), nb = blocks(g);
  float* b_out = packed + nb * n * kLanes;
  for (size_t b = 0; b < nb; ++b) {
    const size_t first = b - b % 2;
    const size_t width = first + 1 < nb ? 2 : 1;
    for (int o = 0; o < kLanes; ++o) {
      const size_t oc = b * kLanes + o;
      for (size_t kk = 0; kk < n; ++kk) {
        packed[(first * n + kk * width + (b - first)) * kLanes + o] = weight[oc * n + kk];
      }
      b_out[oc] = bias ? bias[oc] : 0.f;
    }
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// The K * in_c row slots.
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  return static_cast<size_t>(g.kh) * g.in_c * padded_width(g) * sizeof(float);
}

// How a tile walks its in_c * K input rows, in place or in the padded copies: rs from a
// row to the next of its channel and cs from a channel's last row to the next channel's
// first, in bytes (rs64, cs64: less the 64 that a row's first load has stepped), and
// span, the floats from the first row to where the last channel's would start.
struct Walk {
  size_t rs, rs64, cs, cs64;
  size_t row_floats, chan_floats, span;
};

Walk make_walk(int k, int in_c, size_t row_floats, size_t chan_floats) {
  Walk w;
  w.rs = row_floats * sizeof(float);
  w.cs = (chan_floats - (k - 1) * row_floats) * sizeof(float);  // wraps where never used (in_h < K)
  w.rs64 = w.rs - 64;
  w.cs64 = w.cs - 64;
  w.row_floats = row_floats;
  w.chan_floats = chan_floats;
  w.span = static_cast<size_t>(in_c) * chan_floats;
  return w;
}

// A pair of blocks, in assembly: GCC kept the 16 accumulators, the row and the 2K
// weight vectors (27 registers at K = 3) only with some 85 moves and 49 stack stores
// per tile, and with single loads a step takes 11 loads where ld1 of 2 to 4 registers
// takes 4. Registers: v0-v5 the row (up to 24 floats), v6-v15 the weights
// ({block 0, block 1} for each kx), v16-v23 / v24-v31 the accumulators of blocks 0 / 1
// (pixels 0-7), bound to the outputs. Pixel x of tap kx reads row float x * S + kx,
// that is vector (x * S + kx) / 4, lane (x * S + kx) % 4; taps kx and kx + 4 differ by
// one vector, so a tap is one of four lane patterns per stride on the row's registers
// from v0 or from v1. OP is fmla, or fmul for a tile's first tap (no zeroed
// accumulators: 4 loads a tile).
#define STEM_PIX(OP, lo, hi, w0, w1, r, lane)                   \
  OP " " #lo ".4s, " #w0 ".4s, " #r ".s[" #lane "]\n\t"       \
  OP " " #hi ".4s, " #w1 ".4s, " #r ".s[" #lane "]\n\t"
#define STEM_PIX8(OP, w0, w1, r0, l0, r1, l1, r2, l2, r3, l3, r4, l4, r5, l5, r6, l6, r7, l7)           \
  STEM_PIX(OP, v16, v24, w0, w1, r0, l0) STEM_PIX(OP, v17, v25, w0, w1, r1, l1)                       \
  STEM_PIX(OP, v18, v26, w0, w1, r2, l2) STEM_PIX(OP, v19, v27, w0, w1, r3, l3)                       \
  STEM_PIX(OP, v20, v28, w0, w1, r4, l4) STEM_PIX(OP, v21, v29, w0, w1, r5, l5)                       \
  STEM_PIX(OP, v22, v30, w0, w1, r6, l6) STEM_PIX(OP, v23, v31, w0, w1, r7, l7)
// Stride 2: pixel x reads float 2x + c (c = kx % 4) of registers a..e.
#define STEM_S2C0(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 0, a, 2, b, 0, b, 2, c, 0, c, 2, d, 0, d, 2)
#define STEM_S2C1(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 1, a, 3, b, 1, b, 3, c, 1, c, 3, d, 1, d, 3)
#define STEM_S2C2(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 2, b, 0, b, 2, c, 0, c, 2, d, 0, d, 2, e, 0)
#define STEM_S2C3(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 3, b, 1, b, 3, c, 1, c, 3, d, 1, d, 3, e, 1)
// Stride 1: pixel x reads float x + c of registers a..c.
#define STEM_S1C0(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 0, a, 1, a, 2, a, 3, b, 0, b, 1, b, 2, b, 3)
#define STEM_S1C1(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 1, a, 2, a, 3, b, 0, b, 1, b, 2, b, 3, c, 0)
#define STEM_S1C2(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 2, a, 3, b, 0, b, 1, b, 2, b, 3, c, 0, c, 1)
#define STEM_S1C3(OP, w0, w1, a, b, c, d, e) STEM_PIX8(OP, w0, w1, a, 3, b, 0, b, 1, b, 2, b, 3, c, 0, c, 1, c, 2)
// Tap kx of stride S with weights w0 (block 0) and w1 (block 1).
#define STEM_TAP(OP, S, kx, w0, w1) STEM_TAP_##S##_##kx(OP, w0, w1)
#define STEM_TAP_2_0(OP, w0, w1) STEM_S2C0(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_1(OP, w0, w1) STEM_S2C1(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_2(OP, w0, w1) STEM_S2C2(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_3(OP, w0, w1) STEM_S2C3(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_4(OP, w0, w1) STEM_S2C0(OP, w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_2_5(OP, w0, w1) STEM_S2C1(OP, w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_2_6(OP, w0, w1) STEM_S2C2(OP, w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_1_0(OP, w0, w1) STEM_S1C0(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_1(OP, w0, w1) STEM_S1C1(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_2(OP, w0, w1) STEM_S1C2(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_3(OP, w0, w1) STEM_S1C3(OP, w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_4(OP, w0, w1) STEM_S1C0(OP, w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_1_5(OP, w0, w1) STEM_S1C1(OP, w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_1_6(OP, w0, w1) STEM_S1C2(OP, w0, w1, v1, v2, v3, v4, v5)
// The row's (7 * S + K + 3) / 4 vectors from xa, which steps on to the next row of the
// channel (I = r) or to the next channel's first row (I = c).
#define STEM_ROW3(I) "ld1 {v0.4s-v2.4s}, [%[xa]], %[" #I "s]\n\t"
#define STEM_ROW4(I) "ld1 {v0.4s-v3.4s}, [%[xa]], %[" #I "s]\n\t"
#define STEM_ROW5(I) "ld1 {v0.4s-v3.4s}, [%[xa]], #64\n\t" "ld1 {v4.4s}, [%[xa]], %[" #I "s64]\n\t"
#define STEM_ROW6(I) "ld1 {v0.4s-v3.4s}, [%[xa]], #64\n\t" "ld1 {v4.4s-v5.4s}, [%[xa]], %[" #I "s64]\n\t"
#define STEM_W4(a, b) "ld1 {" #a ".4s-" #b ".4s}, [%[w]], #64\n\t"
#define STEM_W2(a, b) "ld1 {" #a ".4s-" #b ".4s}, [%[w]], #32\n\t"
// 3x3: two rows' 12 weight vectors in three loads of 4 (one row's 6 take two), the
// second row loaded once the first's last tap is done.
#define STEM_K3_TWO(S, ROW, I0, I1, OP)                                                                    \
  ROW(I0) STEM_W4(v8, v11) STEM_W4(v12, v15) STEM_TAP(OP, S, 0, v8, v9) STEM_TAP("fmla", S, 1, v10, v11) \
  STEM_W4(v8, v11) STEM_TAP("fmla", S, 2, v12, v13) ROW(I1) STEM_TAP("fmla", S, 0, v14, v15)              \
  STEM_TAP("fmla", S, 1, v8, v9) STEM_TAP("fmla", S, 2, v10, v11)
#define STEM_K3_ONE(S, ROW, I)                                                                          \
  ROW(I) STEM_W4(v8, v11) STEM_W2(v12, v13) STEM_TAP("fmla", S, 0, v8, v9) STEM_TAP("fmla", S, 1, v10, v11) \
  STEM_TAP("fmla", S, 2, v12, v13)
#define STEM_K3_CHANNEL(S, ROW, OP) STEM_K3_TWO(S, ROW, r, r, OP) STEM_K3_ONE(S, ROW, c)
// 3 channels of 3x3 (an image's stem), the 9 rows written out: no loop, and 14 weight
// loads, not 15.
#define STEM_K3_NINE(S, ROW)                                                                               \
  STEM_K3_TWO(S, ROW, r, r, "fmul") STEM_K3_TWO(S, ROW, c, r, "fmla") STEM_K3_TWO(S, ROW, r, c, "fmla") \
  STEM_K3_TWO(S, ROW, r, r, "fmla") STEM_K3_ONE(S, ROW, c)
// 5x5 and 7x7: a row at a time; a 7-wide window reloads v6-v9 with kx 4 and 5 once kx 0
// and 1 are done (a channel's 7th row: the first 6 go in pairs).
#define STEM_STEP5(S, ROW, I, OP)                                                                         \
  ROW(I) STEM_W4(v6, v9) STEM_W4(v10, v13) STEM_W2(v14, v15) STEM_TAP(OP, S, 0, v6, v7)                \
  STEM_TAP("fmla", S, 1, v8, v9) STEM_TAP("fmla", S, 2, v10, v11) STEM_TAP("fmla", S, 3, v12, v13)      \
  STEM_TAP("fmla", S, 4, v14, v15)
#define STEM_STEP7(S, ROW, I, OP)                                                                          \
  ROW(I) STEM_W4(v6, v9) STEM_W4(v10, v13) STEM_TAP(OP, S, 0, v6, v7) STEM_TAP("fmla", S, 1, v8, v9)    \
  STEM_W4(v6, v9) STEM_TAP("fmla", S, 2, v10, v11) STEM_TAP("fmla", S, 3, v12, v13) STEM_W2(v14, v15)    \
  STEM_TAP("fmla", S, 4, v6, v7) STEM_TAP("fmla", S, 5, v8, v9) STEM_TAP("fmla", S, 6, v14, v15)
#define STEM_K5_CHANNEL(S, ROW, OP)                                                                     \
  STEM_STEP5(S, ROW, r, OP) STEM_STEP5(S, ROW, r, "fmla") STEM_STEP5(S, ROW, r, "fmla")                \
  STEM_STEP5(S, ROW, r, "fmla") STEM_STEP5(S, ROW, c, "fmla")
// Two rows of a 7x7 window: their 28 weight vectors in 7 loads of 4 (one row's 14 take
// four), through v6-v13 in turn.
#define STEM_K7_TWO(S, ROW, OP)                                                                            \
  ROW(r) STEM_W4(v6, v9) STEM_W4(v10, v13) STEM_TAP(OP, S, 0, v6, v7) STEM_TAP("fmla", S, 1, v8, v9)      \
  STEM_W4(v6, v9) STEM_TAP("fmla", S, 2, v10, v11) STEM_TAP("fmla", S, 3, v12, v13) STEM_W4(v10, v13)     \
  STEM_TAP("fmla", S, 4, v6, v7) STEM_TAP("fmla", S, 5, v8, v9) STEM_TAP("fmla", S, 6, v10, v11) ROW(r)  \
  STEM_W4(v6, v9) STEM_TAP("fmla", S, 0, v12, v13) STEM_TAP("fmla", S, 1, v6, v7)                        \
  STEM_TAP("fmla", S, 2, v8, v9) STEM_W4(v10, v13) STEM_W4(v6, v9) STEM_TAP("fmla", S, 3, v10, v11)      \
  STEM_TAP("fmla", S, 4, v12, v13) STEM_TAP("fmla", S, 5, v6, v7) STEM_TAP("fmla", S, 6, v8, v9)
#define STEM_K7_CHANNEL(S, ROW, OP)                                                                 \
  STEM_K7_TWO(S, ROW, OP) STEM_K7_TWO(S, ROW, "fmla") STEM_K7_TWO(S, ROW, "fmla") STEM_STEP7(S, ROW, c, "fmla")
// The first channel (its first tap an fmul), then a loop over the others until xa
// reaches xend.
#define STEM_CHANNELS(CHANNEL, S, ROW)                                                      \
  CHANNEL(S, ROW, "fmul") "cmp %[xa], %[xend]\n\t" "b.eq 2f\n\t" "1:\n\t" CHANNEL(S, ROW, "fmla") \
  "cmp %[xa], %[xend]\n\t" "b.ne 1b\n\t" "2:\n\t"
// The rest of the clobbers: the row's and the weights' registers (at K = 3, v5-v7 stay
// free for the biases and the activation's constants, kept across the tiles).
#define STEM_PAIR(BODY, ...)                                                                           \
  asm(BODY                                                                                             \
      : "=w"(l0), "=w"(l1), "=w"(l2), "=w"(l3), "=w"(l4), "=w"(l5), "=w"(l6), "=w"(l7), "=w"(h0),     \
        "=w"(h1), "=w"(h2), "=w"(h3), "=w"(h4), "=w"(h5), "=w"(h6), "=w"(h7), [w] "+r"(wa), [xa] "+r"(xa) \
      : [rs] "r"(rs), [rs64] "r"(rs64), [cs] "r"(cs), [cs64] "r"(cs64), [xend] "r"(xend)                \
      : __VA_ARGS__, "cc", "memory")
#define STEM_CLOBBER3 "v0", "v1", "v2", "v3", "v4", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15"
#define STEM_CLOBBER57                                                                                  \
  "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15"

// Explicit register variables: the only way to name the registers an operand must be
// in (the accumulators must be where the assembly's FMAs leave them, and where st1's
// consecutive registers store them from).
#define STEM_ACC_REGISTERS                                                             \
  register float32x4_t l0 asm("v16"), l1 asm("v17"), l2 asm("v18"), l3 asm("v19");     \
  register float32x4_t l4 asm("v20"), l5 asm("v21"), l6 asm("v22"), l7 asm("v23");     \
  register float32x4_t h0 asm("v24"), h1 asm("v25"), h2 asm("v26"), h3 asm("v27");     \
  register float32x4_t h4 asm("v28"), h5 asm("v29"), h6 asm("v30"), h7 asm("v31")

// Blocks b and b + 1 of the tiles side by side from `row` to `stop` (kFull: 8 pixels
// each; else one tile of nx), walked as `walk` says, with their weights w ([kk][2][4])
// and biases, stored with the activation to o (block b) and o + cstep floats (b + 1).
// kThree: in_c = 3 and K = 3.
template <int K, int S, bool kThree, bool kFull, Act kAct>
__attribute__((always_inline)) inline void pair_tiles(const float* row, const float* stop, Walk walk,
                                                      const float* w, const float* bias, float* o, size_t cstep,
                                                      int nx, const Epilogue<kAct>& epi) {
  // Locals: the asm's memory clobber would have the fields read again for every tile.
  const size_t rs = walk.rs, rs64 = walk.rs64, cs = walk.cs, cs64 = walk.cs64, span = walk.span;
  const size_t down = cstep * sizeof(float) - 64, up = 64 - cstep * sizeof(float);
  const float32x4_t b0 = vld1q_f32(bias), b1 = vld1q_f32(bias + kLanes);
  for (; row != stop; row += kTile * S) {
    STEM_ACC_REGISTERS;
    const float* xa = row;
    const float* wa = w;
    const float* xend = kThree ? row : row + span;  // unused by the unrolled body
    if constexpr (K == 3 && S == 2 && kThree) STEM_PAIR(STEM_K3_NINE(2, STEM_ROW5), STEM_CLOBBER3);
    if constexpr (K == 3 && S == 2 && !kThree) STEM_PAIR(STEM_CHANNELS(STEM_K3_CHANNEL, 2, STEM_ROW5), STEM_CLOBBER3);
    if constexpr (K == 3 && S == 1 && kThree) STEM_PAIR(STEM_K3_NINE(1, STEM_ROW3), STEM_CLOBBER3);
    if constexpr (K == 3 && S == 1 && !kThree) STEM_PAIR(STEM_CHANNELS(STEM_K3_CHANNEL, 1, STEM_ROW3), STEM_CLOBBER3);
    if constexpr (K == 5 && S == 2) STEM_PAIR(STEM_CHANNELS(STEM_K5_CHANNEL, 2, STEM_ROW5), STEM_CLOBBER57);
    if constexpr (K == 5 && S == 1) STEM_PAIR(STEM_CHANNELS(STEM_K5_CHANNEL, 1, STEM_ROW3), STEM_CLOBBER57);
    if constexpr (K == 7 && S == 2) STEM_PAIR(STEM_CHANNELS(STEM_K7_CHANNEL, 2, STEM_ROW6), STEM_CLOBBER57);
    if constexpr (K == 7 && S == 1) STEM_PAIR(STEM_CHANNELS(STEM_K7_CHANNEL, 1, STEM_ROW4), STEM_CLOBBER57);
    l0 = epi(vaddq_f32(l0, b0)), l1 = epi(vaddq_f32(l1, b0)), l2 = epi(vaddq_f32(l2, b0));
    l3 = epi(vaddq_f32(l3, b0)), l4 = epi(vaddq_f32(l4, b0)), l5 = epi(vaddq_f32(l5, b0));
    l6 = epi(vaddq_f32(l6, b0)), l7 = epi(vaddq_f32(l7, b0));
    h0 = epi(vaddq_f32(h0, b1)), h1 = epi(vaddq_f32(h1, b1)), h2 = epi(vaddq_f32(h2, b1));
    h3 = epi(vaddq_f32(h3, b1)), h4 = epi(vaddq_f32(h4, b1)), h5 = epi(vaddq_f32(h5, b1));
    h6 = epi(vaddq_f32(h6, b1)), h7 = epi(vaddq_f32(h7, b1));
    float* const first = o;
    if constexpr (kFull) {
      // st1 of 4 registers: 4 stores for the 16 vectors (vst1q_f32: 8 stp); one pointer
      // down to block b + 1 and back up, on to the next tile.
      asm volatile(
          "st1 {v16.4s-v19.4s}, [%[o]], #64\n\t"
          "st1 {v20.4s-v23.4s}, [%[o]], %[down]\n\t"
          "st1 {v24.4s-v27.4s}, [%[o]], #64\n\t"
          "st1 {v28.4s-v31.4s}, [%[o]], %[up]\n\t"
          : [o] "+r"(o)
          : [down] "r"(down), [up] "r"(up), "w"(l0), "w"(l1), "w"(l2), "w"(l3), "w"(l4), "w"(l5), "w"(l6),
            "w"(l7), "w"(h0), "w"(h1), "w"(h2), "w"(h3), "w"(h4), "w"(h5), "w"(h6), "w"(h7)
          : "memory");
    } else {
      // Named registers, not an array: an array went through the stack.
      float* const hi = o + cstep;
      auto put = [&](int x, float32x4_t a, float32x4_t b) __attribute__((always_inline)) {
        if (x < nx) vst1q_f32(o + kLanes * x, a), vst1q_f32(hi + kLanes * x, b);
      };
      put(0, l0, h0), put(1, l1, h1), put(2, l2, h2), put(3, l3, h3);
      put(4, l4, h4), put(5, l5, h5), put(6, l6, h6), put(7, l7, h7);
    }
    epi.finish(first, static_cast<size_t>(kFull ? kTile : nx) * kLanes);
    epi.finish(first + cstep, static_cast<size_t>(kFull ? kTile : nx) * kLanes);
  }
}

#undef STEM_PIX
#undef STEM_PIX8
#undef STEM_S2C0
#undef STEM_S2C1
#undef STEM_S2C2
#undef STEM_S2C3
#undef STEM_S1C0
#undef STEM_S1C1
#undef STEM_S1C2
#undef STEM_S1C3
#undef STEM_TAP
#undef STEM_TAP_2_0
#undef STEM_TAP_2_1
#undef STEM_TAP_2_2
#undef STEM_TAP_2_3
#undef STEM_TAP_2_4
#undef STEM_TAP_2_5
#undef STEM_TAP_2_6
#undef STEM_TAP_1_0
#undef STEM_TAP_1_1
#undef STEM_TAP_1_2
#undef STEM_TAP_1_3
#undef STEM_TAP_1_4
#undef STEM_TAP_1_5
#undef STEM_TAP_1_6
#undef STEM_ROW3
#undef STEM_ROW4
#undef STEM_ROW5
#undef STEM_ROW6
#undef STEM_W4
#undef STEM_W2
#undef STEM_K3_TWO
#undef STEM_K3_ONE
#undef STEM_K3_CHANNEL
#undef STEM_K3_NINE
#undef STEM_STEP5
#undef STEM_STEP7
#undef STEM_K5_CHANNEL
#undef STEM_K7_TWO
#undef STEM_K7_CHANNEL
#undef STEM_CHANNELS
#undef STEM_PAIR
#undef STEM_CLOBBER3
#undef STEM_CLOBBER57
#undef STEM_ACC_REGISTERS

// acc[x] += w * row[x * S + kx] for every x, the input taken by lane.
template <int S, int kx, size_t... X>
__attribute__((always_inline)) inline void tap(float32x4_t (&acc)[kTile], float32x4_t w, const float32x4_t* in,
                                               std::index_sequence<X...>) {
  ((acc[X] = vfmaq_laneq_f32(acc[X], w, in[(X * S + kx) / 4], (X * S + kx) % 4)), ...);
}

// One block of one tile, in intrinsics (8 accumulators leave GCC registers enough): a
// last odd block (out_c = 4 mod 8), or every block where plain_bias is false. Per row,
// the row's vectors once, then the K taps in kx order; w_step floats between one tap's
// weight vector and the next's (4 alone, 8 in a pair).
template <int K, int S, Act kAct, size_t... KX>
__attribute__((always_inline)) inline void single_tile(const float* row, const Walk& walk, const float* w,
                                                       size_t w_step, int in_c, const float* bias, float* o, int nx,
                                                       const Epilogue<kAct>& epi, std::index_sequence<KX...>) {
  constexpr int kVecs = ((kTile - 1) * S + K + 3) / 4;
  float32x4_t acc[kTile];
  for (auto& a : acc) a = vdupq_n_f32(0.f);
  for (int ic = 0; ic < in_c; ++ic) {
    const float* r = row + ic * walk.chan_floats;
    for (int ky = 0; ky < K; ++ky, r += walk.row_floats, w += K * w_step) {
      float32x4_t in[kVecs];
      for (int v = 0; v < kVecs; ++v) in[v] = vld1q_f32(r + 4 * v);
      (tap<S, static_cast<int>(KX)>(acc, vld1q_f32(w + w_step * KX), in, std::make_index_sequence<kTile>{}), ...);
    }
  }
  const float32x4_t b = vld1q_f32(bias);
  // Constant indices into acc (unrolled, guarded): with a run-time bound GCC kept acc
  // in memory and stored every accumulator to the stack after each row step.
#pragma GCC unroll 8
  for (int x = 0; x < kTile; ++x) {
    if (x < nx) vst1q_f32(o + kLanes * x, epi(vaddq_f32(acc[x], b)));
  }
  epi.finish(o, static_cast<size_t>(nx) * kLanes);
}

// memcpy of part of an input row in 4 instructions per 16 floats (glibc's
// __memcpy_generic took 151 K instructions of MobileNet v1's conv1 where this took 74
// K), a tail of 1 to 3 floats as one overlapping vector.
__attribute__((always_inline)) inline void copy_row(float* dst, const float* src, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16) vst1q_f32_x4(dst + i, vld1q_f32_x4(src + i));
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vld1q_f32(src + i));
  if (i < n && n >= 4) {
    vst1q_f32(dst + n - 4, vld1q_f32(src + n - 4));
  } else {
    for (; i < n; ++i) dst[i] = src[i];
  }
}

// The first tap's product goes into the accumulators with fmul, not fmla onto zeros:
// the two differ only where every product so far is zero, -0 against +0, and adding a
// bias other than -0 to either gives the same bits (x + b == x for b != 0 and
// -0 + +0 == +0). Where a bias is -0, every tile starts from zeros (single_tile).
bool plain_bias(const float* bias, int n) {
  for (int i = 0; i < n; ++i) {
    if (bias[i] == 0.f && std::signbit(bias[i])) return false;
  }
  return true;
}

// What run_rows' loops need, worked out once per call and copied into each thread:
// variables shared with an OpenMP region whose address is taken (std::min takes
// references) are read through pointers, again after every tile's asm (its memory
// clobber).
struct Plan {
  const float* in;
  float* out;
  const float* packed;
  const float* bias;
  size_t in_cstep, out_cstep, n, nb, pairs;
  Walk padded, direct;
  int in_c, in_w, in_h, out_w, out_h, pad_top, pad_left, wp, tiles, full_tiles;
  // Tiles t_lo up to t_mid read in place on output rows whose window lies inside the
  // map (every tap of their pixels inside the row; the loads past the last tap run on
  // into the next row), up to t_last on one whose window ends on the map's last row
  // (the loads inside the row too). The padded rows' columns that tiles before t_lo
  // read: left_n, or kReads whole vectors where the row has them (left_whole).
  int t_lo, t_mid, t_last, left_n;
  bool three, left_whole;
};

template <int K, int S>
Plan make_plan(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
               size_t out_cstep) {
  constexpr int kReads = ((kTile - 1) * S + K + 3) / 4 * 4;  // floats a tile loads from a row
  constexpr int kStep = kTile * S;                            // input columns from tile to tile
  Plan p;
  p.in = in, p.out = out, p.packed = packed;
  p.in_cstep = in_cstep, p.out_cstep = out_cstep, p.n = taps(g), p.nb = blocks(g);
  p.bias = packed + p.nb * p.n * kLanes;
  p.pairs = plain_bias(p.bias, g.out_c) ? p.nb / 2 : 0;
  p.in_c = g.in_c, p.in_w = g.in_w, p.in_h = g.in_h, p.out_w = g.out_w, p.out_h = g.out_h;
  p.pad_top = g.pad_top, p.pad_left = g.pad_left, p.wp = padded_width(g);
  p.tiles = (g.out_w + kTile - 1) / kTile, p.full_tiles = g.out_w / kTile;
  p.padded = make_walk(K, g.in_c, p.wp, static_cast<size_t>(K) * p.wp);
  p.direct = make_walk(K, g.in_c, g.in_w, in_cstep);
  p.t_lo = (g.pad_left + kStep - 1) / kStep;
  auto direct_end = [&](int spill) {
    int t = p.t_lo;
    for (; t < p.tiles; ++t) {
      const int x = t * kStep - g.pad_left, nx = std::min(kTile, g.out_w - t * kTile);
      if (x + (nx - 1) * S + K > g.in_w || x + kReads > g.in_w + spill) break;
    }
    return t;
  };
  p.t_mid = direct_end(g.in_w), p.t_last = direct_end(0);
  p.left_whole = p.t_lo == 1 && g.in_w >= kReads;
  p.left_n = std::min(g.in_w, (p.t_lo - 1) * kStep + kReads - g.pad_left);
  p.three = K == 3 && g.in_c == 3;
  return p;
}

// Output row oy: the padded rows' columns that its tiles over the padding read, then
// each run of tiles (over the left padding, in place, over the right padding) pair of
// blocks by pair.
template <int K, int S, Act kAct>
__attribute__((always_inline)) inline void run_row(const Plan& p, int oy, float* slots, const Epilogue<kAct>& epi) {
  constexpr int kReads = ((kTile - 1) * S + K + 3) / 4 * 4;
  constexpr int kStep = kTile * S;
  const int in_c = p.in_c, in_w = p.in_w, in_h = p.in_h, wp = p.wp, tiles = p.tiles;
  const size_t in_cstep = p.in_cstep;
  const int iy0 = oy * S - p.pad_top;
  const bool inside = iy0 >= 0 && iy0 + K <= in_h;
  // Tiles [t_in, t_out) read in place, the others the slots.
  const int t_in = inside ? p.t_lo : 0;
  int t_out = 0;
  if (inside) t_out = iy0 + K < in_h ? p.t_mid : p.t_last;
  if (t_out < t_in) t_out = t_in;
  float* slot = slots + p.pad_left;
  if (!inside) {
    for (int ic = 0; ic < in_c; ++ic) {
      for (int ky = 0; ky < K; ++ky, slot += wp) {
        const int iy = iy0 + ky;
        if (iy >= 0 && iy < in_h) {
          copy_row(slot, p.in + ic * in_cstep + static_cast<size_t>(iy) * in_w, in_w);
        } else {
          std::memset(slot, 0, sizeof(float) * in_w);
        }
      }
    }
  } else if (p.t_lo > 0 || t_out < tiles) {
    const float* chan = p.in + static_cast<size_t>(iy0) * in_w;
    const int rows = in_c * K;
    if (p.left_whole) {
      for (int r = 0, ky = 0; r < rows; ++r, slot += wp) {
#pragma GCC unroll 8
        for (int v = 0; v < kReads; v += 4) vst1q_f32(slot + v, vld1q_f32(chan + v));
        chan += ++ky == K ? (ky = 0, in_cstep - (K - 1) * in_w) : in_w;
      }
      slot = slots + p.pad_left;
      chan = p.in + static_cast<size_t>(iy0) * in_w;
    } else if (p.t_lo > 0) {
      for (int r = 0, ky = 0; r < rows; ++r, slot += wp) {
        copy_row(slot, chan, p.left_n);
        chan += ++ky == K ? (ky = 0, in_cstep - (K - 1) * in_w) : in_w;
      }
      slot = slots + p.pad_left;
      chan = p.in + static_cast<size_t>(iy0) * in_w;
    }
    const int from = t_out * kStep - p.pad_left > 0 ? t_out * kStep - p.pad_left : 0;
    for (int r = 0, ky = 0; t_out < tiles && r < rows; ++r, slot += wp) {
      copy_row(slot + from, chan + from, in_w - from);
      chan += ++ky == K ? (ky = 0, in_cstep - (K - 1) * in_w) : in_w;
    }
  }
  float* const out_row = p.out + static_cast<size_t>(oy) * p.out_w * kLanes;
  const size_t n = p.n, nb = p.nb, out_cstep = p.out_cstep, pairs = p.pairs;
  const bool three = p.three;
  for (int part = 0; part < 3; ++part) {
    const int t0 = part == 0 ? 0 : part == 1 ? t_in : t_out;
    const int t1 = part == 0 ? t_in : part == 1 ? t_out : tiles;
    if (t0 >= t1) continue;
    const Walk walk = part == 1 ? p.direct : p.padded;  // a copy: in registers across the tiles' asm
    const float* src = part == 1 ? p.in + static_cast<size_t>(iy0) * in_w - p.pad_left : slots;
    const float* row = src + t0 * kStep;
    const int full = (t1 < p.full_tiles ? t1 : p.full_tiles) - t0;
    const float* stop = row + full * kStep;
    const float* w = p.packed;
    const float* b = p.bias;
    float* o = out_row + static_cast<size_t>(t0) * kTile * kLanes;
    for (size_t q = pairs; q != 0; --q, w += 2 * n * kLanes, b += 2 * kLanes, o += 2 * out_cstep) {
      if (three) {
        pair_tiles<K, S, K == 3, true>(row, stop, walk, w, b, o, out_cstep, kTile, epi);
      } else {
        pair_tiles<K, S, false, true>(row, stop, walk, w, b, o, out_cstep, kTile, epi);
      }
      if (full < t1 - t0) {
        pair_tiles<K, S, false, false>(stop, stop + kStep, walk, w, b, o + full * kTile * kLanes, out_cstep,
                                       p.out_w - p.full_tiles * kTile, epi);
      }
    }
    for (size_t blk = 2 * pairs; blk < nb; ++blk) {
      const size_t first = blk - blk % 2, width = first + 1 < nb ? 2 : 1;
      const float* wb = p.packed + (first * n + blk - first) * kLanes;
      for (int t = t0; t < t1; ++t) {
        const int nx = p.out_w - t * kTile < kTile ? p.out_w - t * kTile : kTile;
        single_tile<K, S>(src + t * kStep, walk, wb, width * kLanes, in_c, p.bias + blk * kLanes,
                          out_row + blk * out_cstep + static_cast<size_t>(t) * kTile * kLanes, nx, epi,
                          std::make_index_sequence<K>{});
      }
    }
  }
}

template <int K, int S, Act kAct>
void run_rows(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epilogue<kAct>& epi) {
  const Plan plan = make_plan<K, S>(g, packed, in, in_cstep, out, out_cstep);
  parallel_region(ctx.num_threads, [&] {
    const Plan p = plan;
    float* slots = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    // Slot column j holds input column j - pad_left, so tile t's first tap reads slot
    // column t * 8 * S. The padding columns stay zero: a row rewrites only the input's.
    std::fill(slots, slots + static_cast<size_t>(K) * p.in_c * p.wp, 0.f);
#pragma omp for schedule(static)
    for (int oy = 0; oy < p.out_h; ++oy) run_row<K, S>(p, oy, slots, epi);
  });
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    auto go = [&](auto k_c, auto s_c) {
      run_rows<decltype(k_c)::value, decltype(s_c)::value>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    };
    using I3 = std::integral_constant<int, 3>;
    using I5 = std::integral_constant<int, 5>;
    using I7 = std::integral_constant<int, 7>;
    using S1 = std::integral_constant<int, 1>;
    using S2 = std::integral_constant<int, 2>;
    if (g.kh == 3) g.sh == 1 ? go(I3{}, S1{}) : go(I3{}, S2{});
    if (g.kh == 5) g.sh == 1 ? go(I5{}, S1{}) : go(I5{}, S2{});
    if (g.kh == 7) g.sh == 1 ? go(I7{}, S1{}) : go(I7{}, S2{});
  });
}

}  // namespace

const ConvKernel kF32ConvStemPack1to4_Neon = {
    "f32_conv_stem_8x4_pack1to4_neon",
    Isa::kNeon,
    supports,
    packed_floats,
    pack,
    no_workspace,
    workspace_per_thread_bytes,
    1e-4,
    run,
    kLanes,
};

}  // namespace kestrel::kernels::arm
