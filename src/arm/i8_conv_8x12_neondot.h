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

// The whole 8 x 12 tile, written out: GCC's loop spends 8 instructions a step on loads,
// pointer adds and the branch around the 24 SDOTs; here two post-incremented LD1s a
// step and one branch per two steps (10 for 48 SDOTs). acc[r][j] lives in v(8 + 3r + j)
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

template <>
inline __attribute__((always_inline)) void dot_steps<3>(size_t kd, const int8_t*& a, const int8_t* x, size_t xs,
                                                        int32x4_t (&acc)[kDotRows][3]) {
  alignas(16) int32_t sums[kDotRows * 3 * 4];
  int32_t* out = sums;
  asm volatile(
      KESTREL_I8_ZERO4("v8", "v9", "v10", "v11") KESTREL_I8_ZERO4("v12", "v13", "v14", "v15")
      KESTREL_I8_ZERO4("v16", "v17", "v18", "v19") KESTREL_I8_ZERO4("v20", "v21", "v22", "v23")
      KESTREL_I8_ZERO4("v24", "v25", "v26", "v27") KESTREL_I8_ZERO4("v28", "v29", "v30", "v31")
      "cbz %[n], 2f\n\t"
      "tbz %[n], #0, 1f\n\t"
      KESTREL_I8_STEP
      "subs %[n], %[n], #1\n\t"
      "b.eq 2f\n"
      "1:\n\t"
      KESTREL_I8_STEP
      KESTREL_I8_STEP
      "subs %[n], %[n], #2\n\t"
      "b.ne 1b\n"
      "2:\n\t"
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

#undef KESTREL_I8_SDOT3
#undef KESTREL_I8_STEP
#undef KESTREL_I8_ZERO4

}  // namespace kestrel::kernels::arm::i8
