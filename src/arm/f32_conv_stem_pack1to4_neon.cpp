// Direct K x K convolution (K = 3, 5, 7; stride 1 or 2) of a map of few planar channels
// (an image: the network's stem) into a 4-channel blocked map (ncnn's pack1to4). Why:
// the im2col SGEMM spent 0.52 other instructions per multiply-add on MobileNet v1's
// 3-channel stem (4.0 M of its 8.3 M in im2col alone, bench/arm/INSN_COUNTS.md), and its
// accumulators hold pixels, so a blocked output would need transposes on top.
//
// An output row at a time (all channel blocks): the K * in_c input rows it reads are
// copied once into per-thread zero-padded rows, one after another (a row above or below
// the map is zeros), so every tile runs the same code and steps from row to row by one
// stride. A tile is 8 output pixels x 4 output channels (one block) in 8 accumulators,
// or two blocks in 16 (in assembly, pair_tile); per (input channel, ky) it loads the
// (7 * S + K) floats of the padded row once and the K weight vectors of each block, and
// each of the 8 * K fmas per block takes its input by lane, so nothing is transposed.
// Each output is one fma chain over kk = (ic * K + ky) * K + kx from zero with the bias
// added last: the order of f32_conv_sgemm_8x12_neon, so blocked and planar networks
// agree bit for bit. MobileNet v1's conv1 (3x3 stride 2, 3 -> 32 at 224x224): 3.35 M
// instructions for 2.71 M fmas on cortex-a72 (4.85 M with the step in intrinsics).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "arm/arm_kernels.h"
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

// A pair of blocks, in assembly: GCC kept the 16 accumulators, the row and the 2K
// weight vectors (27 registers at K = 3) only with some 85 moves and 49 stack stores
// per tile, and with single loads a step takes 11 loads where ld1 of 2 to 4 registers
// takes 4. Registers: v0-v5 the row (up to 24 floats), v6-v15 the weights
// ({block 0, block 1} for each kx), v16-v23 / v24-v31 the accumulators of blocks 0 / 1
// (pixels 0-7), bound to the outputs. Pixel x of tap kx reads row float x * S + kx,
// that is vector (x * S + kx) / 4, lane (x * S + kx) % 4; taps kx and kx + 4 differ by
// one vector, so a tap is one of four lane patterns per stride on the row's registers
// from v0 or from v1.
#define STEM_PIX(lo, hi, w0, w1, r, lane)                  \
  "fmla " #lo ".4s, " #w0 ".4s, " #r ".s[" #lane "]\n\t"   \
  "fmla " #hi ".4s, " #w1 ".4s, " #r ".s[" #lane "]\n\t"
#define STEM_PIX8(w0, w1, r0, l0, r1, l1, r2, l2, r3, l3, r4, l4, r5, l5, r6, l6, r7, l7)              \
  STEM_PIX(v16, v24, w0, w1, r0, l0) STEM_PIX(v17, v25, w0, w1, r1, l1) STEM_PIX(v18, v26, w0, w1, r2, l2) \
  STEM_PIX(v19, v27, w0, w1, r3, l3) STEM_PIX(v20, v28, w0, w1, r4, l4) STEM_PIX(v21, v29, w0, w1, r5, l5) \
  STEM_PIX(v22, v30, w0, w1, r6, l6) STEM_PIX(v23, v31, w0, w1, r7, l7)
// Stride 2: pixel x reads float 2x + c (c = kx % 4) of registers a..e.
#define STEM_S2C0(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 0, a, 2, b, 0, b, 2, c, 0, c, 2, d, 0, d, 2)
#define STEM_S2C1(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 1, a, 3, b, 1, b, 3, c, 1, c, 3, d, 1, d, 3)
#define STEM_S2C2(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 2, b, 0, b, 2, c, 0, c, 2, d, 0, d, 2, e, 0)
#define STEM_S2C3(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 3, b, 1, b, 3, c, 1, c, 3, d, 1, d, 3, e, 1)
// Stride 1: pixel x reads float x + c of registers a..c.
#define STEM_S1C0(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 0, a, 1, a, 2, a, 3, b, 0, b, 1, b, 2, b, 3)
#define STEM_S1C1(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 1, a, 2, a, 3, b, 0, b, 1, b, 2, b, 3, c, 0)
#define STEM_S1C2(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 2, a, 3, b, 0, b, 1, b, 2, b, 3, c, 0, c, 1)
#define STEM_S1C3(w0, w1, a, b, c, d, e) STEM_PIX8(w0, w1, a, 3, b, 0, b, 1, b, 2, b, 3, c, 0, c, 1, c, 2)
// Tap kx of stride S with weights w0 (block 0) and w1 (block 1).
#define STEM_TAP(S, kx, w0, w1) STEM_TAP_##S##_##kx(w0, w1)
#define STEM_TAP_2_0(w0, w1) STEM_S2C0(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_1(w0, w1) STEM_S2C1(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_2(w0, w1) STEM_S2C2(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_3(w0, w1) STEM_S2C3(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_2_4(w0, w1) STEM_S2C0(w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_2_5(w0, w1) STEM_S2C1(w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_2_6(w0, w1) STEM_S2C2(w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_1_0(w0, w1) STEM_S1C0(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_1(w0, w1) STEM_S1C1(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_2(w0, w1) STEM_S1C2(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_3(w0, w1) STEM_S1C3(w0, w1, v0, v1, v2, v3, v4)
#define STEM_TAP_1_4(w0, w1) STEM_S1C0(w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_1_5(w0, w1) STEM_S1C1(w0, w1, v1, v2, v3, v4, v5)
#define STEM_TAP_1_6(w0, w1) STEM_S1C2(w0, w1, v1, v2, v3, v4, v5)
// The row's (7 * S + K + 3) / 4 vectors from xa, which steps on to the next row.
#define STEM_ROW3 "ld1 {v0.4s-v2.4s}, [%[xa]], %[rs]\n\t"
#define STEM_ROW4 "ld1 {v0.4s-v3.4s}, [%[xa]], %[rs]\n\t"
#define STEM_ROW5 "ld1 {v0.4s-v3.4s}, [%[xa]], #64\n\t" "ld1 {v4.4s}, [%[xa]], %[rs64]\n\t"
#define STEM_ROW6 "ld1 {v0.4s-v3.4s}, [%[xa]], #64\n\t" "ld1 {v4.4s-v5.4s}, [%[xa]], %[rs64]\n\t"
#define STEM_W4(a, b) "ld1 {" #a ".4s-" #b ".4s}, [%[w]], #64\n\t"
#define STEM_W2 "ld1 {v14.4s-v15.4s}, [%[w]], #32\n\t"
// One (input channel, ky) step; a 7-wide window reloads v6-v9 with kx 4 and 5 once
// kx 0 and 1 are done.
#define STEM_STEP3(S, ROW) \
  ROW STEM_W4(v6, v9) "ld1 {v10.4s-v11.4s}, [%[w]], #32\n\t" \
  STEM_TAP(S, 0, v6, v7) STEM_TAP(S, 1, v8, v9) STEM_TAP(S, 2, v10, v11)
#define STEM_STEP5(S, ROW)                                                                 \
  ROW STEM_W4(v6, v9) STEM_W4(v10, v13) STEM_W2 STEM_TAP(S, 0, v6, v7) STEM_TAP(S, 1, v8, v9) \
  STEM_TAP(S, 2, v10, v11) STEM_TAP(S, 3, v12, v13) STEM_TAP(S, 4, v14, v15)
#define STEM_STEP7(S, ROW)                                                                         \
  ROW STEM_W4(v6, v9) STEM_W4(v10, v13) STEM_TAP(S, 0, v6, v7) STEM_TAP(S, 1, v8, v9) STEM_W4(v6, v9) \
  STEM_TAP(S, 2, v10, v11) STEM_TAP(S, 3, v12, v13) STEM_W2 STEM_TAP(S, 4, v6, v7)                    \
  STEM_TAP(S, 5, v8, v9) STEM_TAP(S, 6, v14, v15)
#define STEM_X3(STEP) STEP STEP STEP
#define STEM_X5(STEP) STEP STEP STEP STEP STEP
#define STEM_X7(STEP) STEP STEP STEP STEP STEP STEP STEP
// The K steps of each input channel: a loop until xa reaches the end of the rows, or
// (a 3x3 window on 3 channels, an image's stem) the 9 steps written out, which saves
// the loop's 6 instructions on 432 fmas.
#define STEM_LOOP(STEP_K) "1:\n\t" STEP_K "cmp %[xa], %[xend]\n\t" "b.ne 1b\n\t"
#define STEM_THREE(STEP_K) STEM_X3(STEP_K)
// The accumulators from zero (4 loads of 16 zero floats: 16 movi took 16), the steps,
// then the pair's biases into v6 and v7. The rest of the clobbers: v0-v5 and the
// weights' registers besides v6 and v7.
#define STEM_PAIR(BODY, ...)                                                                              \
  asm("ld1 {v16.4s-v19.4s}, [%[zeros]]\n\t" "ld1 {v20.4s-v23.4s}, [%[zeros]]\n\t"                      \
      "ld1 {v24.4s-v27.4s}, [%[zeros]]\n\t" "ld1 {v28.4s-v31.4s}, [%[zeros]]\n\t"                       \
      BODY                                                                                              \
      "ld1 {v6.4s-v7.4s}, [%[bias]], #32\n\t"                                                           \
      : "=w"(l0), "=w"(l1), "=w"(l2), "=w"(l3), "=w"(l4), "=w"(l5), "=w"(l6), "=w"(l7), "=w"(h0),        \
        "=w"(h1), "=w"(h2), "=w"(h3), "=w"(h4), "=w"(h5), "=w"(h6), "=w"(h7), "=w"(b0), "=w"(b1),       \
        [w] "+r"(w), [xa] "+r"(xa), [bias] "+r"(bias)                                                   \
      : [rs] "r"(row_bytes), [rs64] "r"(row_bytes - 64), [xend] "r"(row_end), [zeros] "r"(kZeros)       \
      : "v0", "v1", "v2", "v3", "v4", "v5", __VA_ARGS__, "cc", "memory")
#define STEM_CLOBBER3 "v8", "v9", "v10", "v11"
#define STEM_CLOBBER5 "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15"

// Explicit register variables: the only way to name the registers an operand must be
// in (the accumulators must be where the assembly's FMAs leave them, and where st1's
// consecutive registers store them from).
#define STEM_ACC_REGISTERS                                                             \
  register float32x4_t l0 asm("v16"), l1 asm("v17"), l2 asm("v18"), l3 asm("v19");     \
  register float32x4_t l4 asm("v20"), l5 asm("v21"), l6 asm("v22"), l7 asm("v23");     \
  register float32x4_t h0 asm("v24"), h1 asm("v25"), h2 asm("v26"), h3 asm("v27");     \
  register float32x4_t h4 asm("v28"), h5 asm("v29"), h6 asm("v30"), h7 asm("v31");   \
  register float32x4_t b0 asm("v6"), b1 asm("v7")

alignas(16) constexpr float kZeros[16] = {};

// Blocks b and b + 1 of one tile: the rows from `row` to row_end (row_bytes apart),
// their weights w ([kk][2][4]) and biases, stored with the activation to lo and hi (nx
// pixels each; kFull: 8). kThree: in_c = 3 and K = 3. w, bias, lo and hi move on to the
// next pair (lo and hi by pair_bytes), so that the pair loop copies no pointer.
template <int K, int S, bool kThree, bool kFull, Act kAct>
__attribute__((always_inline)) inline void pair_tile(const float* row, const float* row_end, size_t row_bytes,
                                                     const float*& w, const float*& bias, float*& lo, float*& hi,
                                                     size_t pair_bytes, int nx, const Epilogue<kAct>& epi) {
  STEM_ACC_REGISTERS;
  const float* xa = row;
  if constexpr (K == 3 && S == 2 && kThree) STEM_PAIR(STEM_THREE(STEM_X3(STEM_STEP3(2, STEM_ROW5))), STEM_CLOBBER3);
  if constexpr (K == 3 && S == 2 && !kThree) STEM_PAIR(STEM_LOOP(STEM_X3(STEM_STEP3(2, STEM_ROW5))), STEM_CLOBBER3);
  if constexpr (K == 3 && S == 1 && kThree) STEM_PAIR(STEM_THREE(STEM_X3(STEM_STEP3(1, STEM_ROW3))), STEM_CLOBBER3);
  if constexpr (K == 3 && S == 1 && !kThree) STEM_PAIR(STEM_LOOP(STEM_X3(STEM_STEP3(1, STEM_ROW3))), STEM_CLOBBER3);
  if constexpr (K == 5 && S == 2) STEM_PAIR(STEM_LOOP(STEM_X5(STEM_STEP5(2, STEM_ROW5))), STEM_CLOBBER5);
  if constexpr (K == 5 && S == 1) STEM_PAIR(STEM_LOOP(STEM_X5(STEM_STEP5(1, STEM_ROW3))), STEM_CLOBBER5);
  if constexpr (K == 7 && S == 2) STEM_PAIR(STEM_LOOP(STEM_X7(STEM_STEP7(2, STEM_ROW6))), STEM_CLOBBER5);
  if constexpr (K == 7 && S == 1) STEM_PAIR(STEM_LOOP(STEM_X7(STEM_STEP7(1, STEM_ROW4))), STEM_CLOBBER5);
  l0 = epi(vaddq_f32(l0, b0)), l1 = epi(vaddq_f32(l1, b0)), l2 = epi(vaddq_f32(l2, b0));
  l3 = epi(vaddq_f32(l3, b0)), l4 = epi(vaddq_f32(l4, b0)), l5 = epi(vaddq_f32(l5, b0));
  l6 = epi(vaddq_f32(l6, b0)), l7 = epi(vaddq_f32(l7, b0));
  h0 = epi(vaddq_f32(h0, b1)), h1 = epi(vaddq_f32(h1, b1)), h2 = epi(vaddq_f32(h2, b1));
  h3 = epi(vaddq_f32(h3, b1)), h4 = epi(vaddq_f32(h4, b1)), h5 = epi(vaddq_f32(h5, b1));
  h6 = epi(vaddq_f32(h6, b1)), h7 = epi(vaddq_f32(h7, b1));
  float* const lo_first = lo;
  float* const hi_first = hi;
  if constexpr (kFull) {
    // st1 of 4 registers: 4 stores for the 16 vectors (vst1q_f32: 8 stp).
    asm volatile(
        "st1 {v16.4s-v19.4s}, [%[lo]], #64\n\t"
        "st1 {v20.4s-v23.4s}, [%[lo]], %[step]\n\t"
        "st1 {v24.4s-v27.4s}, [%[hi]], #64\n\t"
        "st1 {v28.4s-v31.4s}, [%[hi]], %[step]\n\t"
        : [lo] "+r"(lo), [hi] "+r"(hi)
        : [step] "r"(pair_bytes - 64), "w"(l0), "w"(l1), "w"(l2), "w"(l3), "w"(l4), "w"(l5), "w"(l6), "w"(l7),
          "w"(h0), "w"(h1), "w"(h2), "w"(h3), "w"(h4), "w"(h5), "w"(h6), "w"(h7)
        : "memory");
  } else {
    // Named registers, not an array: an array went through the stack.
    auto put = [&](int x, float32x4_t a, float32x4_t b) __attribute__((always_inline)) {
      if (x < nx) vst1q_f32(lo + kLanes * x, a), vst1q_f32(hi + kLanes * x, b);
    };
    put(0, l0, h0), put(1, l1, h1), put(2, l2, h2), put(3, l3, h3);
    put(4, l4, h4), put(5, l5, h5), put(6, l6, h6), put(7, l7, h7);
    lo += pair_bytes / sizeof(float);
    hi += pair_bytes / sizeof(float);
  }
  epi.finish(lo_first, static_cast<size_t>(nx) * kLanes);
  epi.finish(hi_first, static_cast<size_t>(nx) * kLanes);
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
#undef STEM_STEP3
#undef STEM_STEP5
#undef STEM_STEP7
#undef STEM_X3
#undef STEM_X5
#undef STEM_X7
#undef STEM_PAIR
#undef STEM_CLOBBER5
#undef STEM_CLOBBER3
#undef STEM_THREE
#undef STEM_LOOP
#undef STEM_ACC_REGISTERS

// acc[x] += w * row[x * S + kx] for every x, the input taken by lane.
template <int S, int kx, size_t... X>
__attribute__((always_inline)) inline void tap(float32x4_t (&acc)[kTile], float32x4_t w, const float32x4_t* in,
                                               std::index_sequence<X...>) {
  ((acc[X] = vfmaq_laneq_f32(acc[X], w, in[(X * S + kx) / 4], (X * S + kx) % 4)), ...);
}

// A last odd block (out_c = 4 mod 8) of one tile, in intrinsics (8 accumulators leave
// GCC registers enough): per row, the row's vectors once, then the K taps in kx order.
template <int K, int S, Act kAct, size_t... KX>
__attribute__((always_inline)) inline void single_tile(const float* row, size_t row_floats, const float* w, int in_c,
                                                       const float* bias, float* o, int nx,
                                                       const Epilogue<kAct>& epi, std::index_sequence<KX...>) {
  constexpr int kVecs = ((kTile - 1) * S + K + 3) / 4;
  float32x4_t acc[kTile];
  for (auto& a : acc) a = vdupq_n_f32(0.f);
  for (int r = 0; r < in_c * K; ++r, row += row_floats, w += K * kLanes) {
    float32x4_t in[kVecs];
    for (int v = 0; v < kVecs; ++v) in[v] = vld1q_f32(row + 4 * v);
    (tap<S, static_cast<int>(KX)>(acc, vld1q_f32(w + kLanes * KX), in, std::make_index_sequence<kTile>{}), ...);
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

// memcpy of an input row in 4 instructions per 16 floats: glibc's __memcpy_generic took
// 151 K instructions of MobileNet v1's conv1 (224 floats a row), this loop 74 K.
__attribute__((always_inline)) inline void copy_row(float* dst, const float* src, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16) vst1q_f32_x4(dst + i, vld1q_f32_x4(src + i));
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vld1q_f32(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}

template <int K, int S, Act kAct>
void run_rows(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epilogue<kAct>& epi) {
  const int wp = padded_width(g);
  const int tiles = (g.out_w + kTile - 1) / kTile;
  const int in_c = g.in_c;
  const size_t n = taps(g), nb = blocks(g);
  const float* bias = packed + nb * n * kLanes;
  const size_t row_bytes = wp * sizeof(float), pair_bytes = 2 * out_cstep * sizeof(float);
  constexpr bool kThreeOk = K == 3;
  const bool three = kThreeOk && in_c == 3;
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
  {
    float* slots = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    // Slot column j holds input column j - pad_left, so tile t's first tap reads slot
    // column t * 8 * S. The padding columns stay zero: a row rewrites only the input's.
    std::fill(slots, slots + static_cast<size_t>(K) * in_c * wp, 0.f);
#pragma omp for schedule(static)
    for (int oy = 0; oy < g.out_h; ++oy) {
      for (int ic = 0; ic < in_c; ++ic) {
        for (int ky = 0; ky < K; ++ky) {
          const int iy = oy * S - g.pad_top + ky;
          float* slot = slots + static_cast<size_t>(ic * K + ky) * wp + g.pad_left;
          if (iy >= 0 && iy < g.in_h) {
            copy_row(slot, in + ic * in_cstep + static_cast<size_t>(iy) * g.in_w, g.in_w);
          } else {
            std::memset(slot, 0, sizeof(float) * g.in_w);
          }
        }
      }
      float* out_row = out + static_cast<size_t>(oy) * g.out_w * kLanes;
      for (int t = 0; t < tiles; ++t) {
        const float* row = slots + t * kTile * S;
        const float* row_end = row + static_cast<size_t>(in_c) * K * wp;
        const int x0 = t * kTile, nx = std::min(kTile, g.out_w - x0);
        const float* w = packed;
        const float* bias_b = bias;
        float* lo = out_row + static_cast<size_t>(x0) * kLanes;
        float* hi = lo + out_cstep;
        if (nx == kTile && three) {
          for (size_t p = nb / 2; p != 0; --p) {
            pair_tile<K, S, kThreeOk, true>(row, row_end, row_bytes, w, bias_b, lo, hi, pair_bytes, nx, epi);
          }
        } else if (nx == kTile) {
          for (size_t p = nb / 2; p != 0; --p) {
            pair_tile<K, S, false, true>(row, row_end, row_bytes, w, bias_b, lo, hi, pair_bytes, nx, epi);
          }
        } else {
          for (size_t p = nb / 2; p != 0; --p) {
            pair_tile<K, S, false, false>(row, row_end, row_bytes, w, bias_b, lo, hi, pair_bytes, nx, epi);
          }
        }
        if (nb % 2) single_tile<K, S>(row, wp, w, in_c, bias_b, lo, nx, epi, std::make_index_sequence<K>{});
      }
    }
  }
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
