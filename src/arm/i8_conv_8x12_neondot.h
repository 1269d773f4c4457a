// The SDOT register tile of the int8 convolutions (i8_conv_8x12_neondot.cpp): 8 output
// channels x 4 * NV pixels of int32 sums over kd tap quads, in a header so that
// bench/arm/loops measures the loop the library runs. Needs ARMv8.2 dotprod.
//
//   a   the weight quads, [kd][8][4] s8 (32 bytes a step); left past them
//   x   the first pixel's quads, [4 * NV][4] s8, xs bytes from one step to the next
//   acc written: acc[r][j] lane i is the sum of channel r, pixel 4j + i
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "arm/i8_neon.h"

namespace kestrel::kernels::arm::i8 {

constexpr int kDotRows = 8;

// Any NV: intrinsics (the map's last, short tiles).
template <int NV>
inline __attribute__((always_inline)) void dot_steps(size_t kd, const int8_t*& a, const int8_t* x, size_t xs,
                                                     int32x4_t (&acc)[kDotRows][NV]) {
  unroll<kDotRows>([&](auto r) KESTREL_I8_LAMBDA {
    unroll<NV>([&](auto j) KESTREL_I8_LAMBDA { acc[r][j] = vdupq_n_s32(0); });
  });
  for (size_t q = 0; q < kd; ++q, a += 32, x += xs) {
    const int8x16_t w0 = vld1q_s8(a), w1 = vld1q_s8(a + 16);
    unroll<NV>([&](auto j) KESTREL_I8_LAMBDA {
      const int8x16_t v = vld1q_s8(x + 16 * j);
      acc[0][j] = vdotq_laneq_s32(acc[0][j], v, w0, 0);
      acc[1][j] = vdotq_laneq_s32(acc[1][j], v, w0, 1);
      acc[2][j] = vdotq_laneq_s32(acc[2][j], v, w0, 2);
      acc[3][j] = vdotq_laneq_s32(acc[3][j], v, w0, 3);
      acc[4][j] = vdotq_laneq_s32(acc[4][j], v, w1, 0);
      acc[5][j] = vdotq_laneq_s32(acc[5][j], v, w1, 1);
      acc[6][j] = vdotq_laneq_s32(acc[6][j], v, w1, 2);
      acc[7][j] = vdotq_laneq_s32(acc[7][j], v, w1, 3);
    });
  }
}

// The 8 x 4 tile (a map's last pixels), written out: 8 SDOTs, two LD1s a step and a
// branch and count per two steps, against GCC's 15 instructions a step.
#define KESTREL_I8_STEP1                                          \
  "ld1 {v0.16b, v1.16b}, [%[a]], #32\n\t"                         \
  "ld1 {v2.16b}, [%[x]], %[xs]\n\t"                               \
  "sdot %[c0].4s, v2.16b, v0.4b[0]\n\t"                           \
  "sdot %[c1].4s, v2.16b, v0.4b[1]\n\t"                           \
  "sdot %[c2].4s, v2.16b, v0.4b[2]\n\t"                           \
  "sdot %[c3].4s, v2.16b, v0.4b[3]\n\t"                           \
  "sdot %[c4].4s, v2.16b, v1.4b[0]\n\t"                           \
  "sdot %[c5].4s, v2.16b, v1.4b[1]\n\t"                           \
  "sdot %[c6].4s, v2.16b, v1.4b[2]\n\t"                           \
  "sdot %[c7].4s, v2.16b, v1.4b[3]\n\t"

template <>
inline __attribute__((always_inline)) void dot_steps<1>(size_t kd, const int8_t*& a, const int8_t* x, size_t xs,
                                                        int32x4_t (&acc)[kDotRows][1]) {
  int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  asm volatile(
      "tbz %[n], #0, 1f\n\t"
      KESTREL_I8_STEP1
      "1:\n\t"
      "lsr %[n], %[n], #1\n\t"
      "cbz %[n], 3f\n"
      "2:\n\t"
      KESTREL_I8_STEP1
      KESTREL_I8_STEP1
      "subs %[n], %[n], #1\n\t"
      "b.ne 2b\n"
      "3:\n\t"
      : [c0] "+w"(c0), [c1] "+w"(c1), [c2] "+w"(c2), [c3] "+w"(c3), [c4] "+w"(c4), [c5] "+w"(c5), [c6] "+w"(c6),
        [c7] "+w"(c7), [a] "+r"(a), [x] "+r"(x), [n] "+r"(kd)
      : [xs] "r"(xs)
      : "v0", "v1", "v2", "cc", "memory");
  acc[0][0] = c0;
  acc[1][0] = c1;
  acc[2][0] = c2;
  acc[3][0] = c3;
  acc[4][0] = c4;
  acc[5][0] = c5;
  acc[6][0] = c6;
  acc[7][0] = c7;
}

#undef KESTREL_I8_STEP1

// The whole 8 x 12 tile, written out: GCC's loop spends 8 instructions a step on loads,
// pointer adds and the branch around the 24 SDOTs; here two post-incremented LD1s a
// step and one branch and count per four steps (10 for 96 SDOTs). acc[r][j] lives in v(8 + 3r + j)
// from zero (GCC's inline asm takes at most 30 operands, fewer than 24 read-write
// accumulators need) and is stored to the stack once at the end: 30 instructions a
// tile, against 4 a step saved.
#define KESTREL_I8_SDOT3(c0, c1, c2, w, lane)                     \
  "sdot " c0 ".4s, v2.16b, " w ".4b[" #lane "]\n\t"               \
  "sdot " c1 ".4s, v3.16b, " w ".4b[" #lane "]\n\t"               \
  "sdot " c2 ".4s, v4.16b, " w ".4b[" #lane "]\n\t"
#define KESTREL_I8_STEP                                           \
  "ld1 {v0.16b, v1.16b}, [%[a]], #32\n\t"                         \
  "ld1 {v2.16b, v3.16b, v4.16b}, [%[x]], %[xs]\n\t"               \
  KESTREL_I8_SDOT3("v8", "v9", "v10", "v0", 0)                    \
  KESTREL_I8_SDOT3("v11", "v12", "v13", "v0", 1)                  \
  KESTREL_I8_SDOT3("v14", "v15", "v16", "v0", 2)                  \
  KESTREL_I8_SDOT3("v17", "v18", "v19", "v0", 3)                  \
  KESTREL_I8_SDOT3("v20", "v21", "v22", "v1", 0)                  \
  KESTREL_I8_SDOT3("v23", "v24", "v25", "v1", 1)                  \
  KESTREL_I8_SDOT3("v26", "v27", "v28", "v1", 2)                  \
  KESTREL_I8_SDOT3("v29", "v30", "v31", "v1", 3)
#define KESTREL_I8_ZERO4(a, b, c, d) \
  "movi " a ".4s, #0\n\t" "movi " b ".4s, #0\n\t" "movi " c ".4s, #0\n\t" "movi " d ".4s, #0\n\t"

// The accumulators zeroed, then kd steps (%[n], consumed): kd % 4 first, then four a
// loop iteration (a branch and a count per 96 SDOTs).
#define KESTREL_I8_TILE_LOOP \
  KESTREL_I8_ZERO4("v8", "v9", "v10", "v11") KESTREL_I8_ZERO4("v12", "v13", "v14", "v15") \
  KESTREL_I8_ZERO4("v16", "v17", "v18", "v19") KESTREL_I8_ZERO4("v20", "v21", "v22", "v23") \
  KESTREL_I8_ZERO4("v24", "v25", "v26", "v27") KESTREL_I8_ZERO4("v28", "v29", "v30", "v31") \
  "tbz %[n], #0, 5f\n\t" \
  KESTREL_I8_STEP \
  "5:\n\t" \
  "tbz %[n], #1, 6f\n\t" \
  KESTREL_I8_STEP \
  KESTREL_I8_STEP \
  "6:\n\t" \
  "lsr %[n], %[n], #2\n\t" \
  "cbz %[n], 2f\n" \
  "1:\n\t" \
  KESTREL_I8_STEP \
  KESTREL_I8_STEP \
  KESTREL_I8_STEP \
  KESTREL_I8_STEP \
  "subs %[n], %[n], #1\n\t" \
  "b.ne 1b\n" \
  "2:\n\t"

template <>
inline __attribute__((always_inline)) void dot_steps<3>(size_t kd, const int8_t*& a, const int8_t* x, size_t xs,
                                                        int32x4_t (&acc)[kDotRows][3]) {
  alignas(16) int32_t sums[kDotRows * 3 * 4];
  int32_t* out = sums;
  asm volatile(
      KESTREL_I8_TILE_LOOP
      "st1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[out]], #64\n\t"
      "st1 {v12.4s, v13.4s, v14.4s, v15.4s}, [%[out]], #64\n\t"
      "st1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[out]], #64\n\t"
      "st1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[out]], #64\n\t"
      "st1 {v24.4s, v25.4s, v26.4s, v27.4s}, [%[out]], #64\n\t"
      "st1 {v28.4s, v29.4s, v30.4s, v31.4s}, [%[out]], #64\n\t"
      : [a] "+r"(a), [x] "+r"(x), [n] "+r"(kd), [out] "+r"(out)
      : [xs] "r"(xs)
      : "v0", "v1", "v2", "v3", "v4", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18",
        "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory");
  unroll<kDotRows>([&](auto r) KESTREL_I8_LAMBDA {
    unroll<3>([&](auto j) KESTREL_I8_LAMBDA { acc[r][j] = vld1q_s32(sums + (3 * r + j) * 4); });
  });
}

// `tiles` whole 8 x 12 tiles of one panel (consecutive pixel groups: x and o move 48
// and 12 bytes a tile), requantized into int8 rows in the same asm: no accumulator
// leaves its register, and no call, spill or C++ loop separates two tiles. Row r
// (v(8 + 3r) .. v(10 + 3r)): scvtf, then per vector rne(fma(float(sum), m[r], c[r])) (a
// DUP of c[r], FMLA by element, FCVTNS), narrowed with saturation to bytes, clamped to
// [lo, hi] and stored, 12 bytes: 23 instructions a row, against 31 and two round trips
// of the accumulators through the stack in C++.
// mc: m[8] then c[8] (floats); bounds: lo then hi (16 bytes each); rows ldc apart.
#define KESTREL_I8_ROW(a0, a1, a2, m, c, lane)                                                 \
  "scvtf " a0 ".4s, " a0 ".4s\n\t" "scvtf " a1 ".4s, " a1 ".4s\n\t" "scvtf " a2 ".4s, " a2 ".4s\n\t" \
  "dup v6.4s, " c ".s[" #lane "]\n\t" "fmla v6.4s, " a0 ".4s, " m ".s[" #lane "]\n\t"          \
  "fcvtns " a0 ".4s, v6.4s\n\t"                                                              \
  "dup v7.4s, " c ".s[" #lane "]\n\t" "fmla v7.4s, " a1 ".4s, " m ".s[" #lane "]\n\t"          \
  "fcvtns " a1 ".4s, v7.4s\n\t"                                                              \
  "dup v6.4s, " c ".s[" #lane "]\n\t" "fmla v6.4s, " a2 ".4s, " m ".s[" #lane "]\n\t"          \
  "fcvtns " a2 ".4s, v6.4s\n\t"                                                              \
  "sqxtn v6.4h, " a0 ".4s\n\t" "sqxtn2 v6.8h, " a1 ".4s\n\t" "sqxtn v7.4h, " a2 ".4s\n\t"      \
  "sqxtn v6.8b, v6.8h\n\t" "sqxtn2 v6.16b, v7.8h\n\t"                                        \
  "smax v6.16b, v6.16b, v4.16b\n\t" "smin v6.16b, v6.16b, v5.16b\n\t"                        \
  "str d6, [%[o]]\n\t" "mov v7.s[0], v6.s[2]\n\t" "str s7, [%[o], #8]\n\t"                   \
  "add %[o], %[o], %[ldc]\n\t"

inline __attribute__((always_inline)) void dot_tiles_i8(size_t kd, const int8_t* a0, const int8_t* x0, size_t xs,
                                                        size_t tiles, const float* mc, const int8_t* bounds,
                                                        int8_t* o0, size_t ldc) {
  const int8_t *a, *x;
  int8_t* o;
  size_t n;
  asm volatile(
      "cbz %[tiles], 4f\n"
      "3:\n\t"
      "mov %[a], %[a0]\n\t"
      "mov %[x], %[x0]\n\t"
      "mov %[n], %[kd]\n\t"
      "mov %[o], %[o0]\n\t"
      KESTREL_I8_TILE_LOOP
      "ldp q0, q1, [%[mc]]\n\t"
      "ldp q2, q3, [%[mc], #32]\n\t"
      "ld1 {v4.16b, v5.16b}, [%[bounds]]\n\t"
      KESTREL_I8_ROW("v8", "v9", "v10", "v0", "v2", 0)
      KESTREL_I8_ROW("v11", "v12", "v13", "v0", "v2", 1)
      KESTREL_I8_ROW("v14", "v15", "v16", "v0", "v2", 2)
      KESTREL_I8_ROW("v17", "v18", "v19", "v0", "v2", 3)
      KESTREL_I8_ROW("v20", "v21", "v22", "v1", "v3", 0)
      KESTREL_I8_ROW("v23", "v24", "v25", "v1", "v3", 1)
      KESTREL_I8_ROW("v26", "v27", "v28", "v1", "v3", 2)
      KESTREL_I8_ROW("v29", "v30", "v31", "v1", "v3", 3)
      "add %[x0], %[x0], #48\n\t"
      "add %[o0], %[o0], #12\n\t"
      "subs %[tiles], %[tiles], #1\n\t"
      "b.ne 3b\n"
      "4:\n\t"
      : [a] "=&r"(a), [x] "=&r"(x), [n] "=&r"(n), [o] "=&r"(o), [x0] "+r"(x0), [o0] "+r"(o0), [tiles] "+r"(tiles)
      : [a0] "r"(a0), [kd] "r"(kd), [xs] "r"(xs), [mc] "r"(mc), [bounds] "r"(bounds), [ldc] "r"(ldc)
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",
        "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc",
        "memory");
}

#undef KESTREL_I8_ROW
#undef KESTREL_I8_TILE_LOOP
#undef KESTREL_I8_SDOT3
#undef KESTREL_I8_STEP
#undef KESTREL_I8_ZERO4

}  // namespace kestrel::kernels::arm::i8
