// The SMULL/SMLAL register tile of the int8 convolutions without dotprod
// (i8_conv_4x4_neon.cpp): 4 output channels x 4 pixels of int32 sums over kd groups of
// 16 taps, for ARMv8.0 cores (Cortex-A53, A72); in a header so that bench/arm/loops
// measures the loop the library runs.
//
//   a    the weights, [kd][4][16] s8 (64 bytes a step): row r's taps 16q .. 16q + 15
//   x    the first pixel's group, [4][16] s8, xs bytes from one step to the next
//   out  (smlal_4x4) written: 16 int32, out[4r + i] the sum of channel r, pixel i
//
// Per channel and pixel, SMULL multiplies the low 8 taps into int16 lanes and SMLAL2
// adds the high 8: two products per lane fit int16 (|q| <= 127 on one side at least:
// quantize_i8 and the requantized maps never give -128, so 2 x 127 x 128 < 2^15), and
// SADALP adds the lane pairs into int32. That is 3 instructions for 16 multiply-adds
// (FMLA: 4 for 16) and no lane shuffles: the accumulator holds one (channel, pixel)
// pair in its four lanes, which three ADDPs a channel fold at the end.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace kestrel::kernels::arm::i8 {

// Eight products of rows wa, wb by pixels v4 .. v7 into v8 .. v15 (b: "8b" the low
// taps, "16b" the high ones with SMLAL2).
#define KESTREL_I8_PRODS(op, wa, wb, b)                          \
  op " v8.8h, " wa "." b ", v4." b "\n\t"                         \
  op " v9.8h, " wa "." b ", v5." b "\n\t"                         \
  op " v10.8h, " wa "." b ", v6." b "\n\t"                        \
  op " v11.8h, " wa "." b ", v7." b "\n\t"                        \
  op " v12.8h, " wb "." b ", v4." b "\n\t"                        \
  op " v13.8h, " wb "." b ", v5." b "\n\t"                        \
  op " v14.8h, " wb "." b ", v6." b "\n\t"                        \
  op " v15.8h, " wb "." b ", v7." b "\n\t"
// v8 .. v15 pairwise into accumulators c0 .. c7 (SADDLP sets them, SADALP adds).
#define KESTREL_I8_PAIRS(op, c0, c1, c2, c3, c4, c5, c6, c7)     \
  op " " c0 ".4s, v8.8h\n\t" op " " c1 ".4s, v9.8h\n\t"           \
  op " " c2 ".4s, v10.8h\n\t" op " " c3 ".4s, v11.8h\n\t"         \
  op " " c4 ".4s, v12.8h\n\t" op " " c5 ".4s, v13.8h\n\t"         \
  op " " c6 ".4s, v14.8h\n\t" op " " c7 ".4s, v15.8h\n\t"
// One group of 16 taps: two LD1s and 48 multiplies and pair adds; channel r, pixel i
// in v(16 + 4r + i).
#define KESTREL_I8_STEP(pair)                                                                  \
  "ld1 {v0.16b, v1.16b, v2.16b, v3.16b}, [%[a]], #64\n\t"                                      \
  "ld1 {v4.16b, v5.16b, v6.16b, v7.16b}, [%[x]], %[xs]\n\t"                                    \
  KESTREL_I8_PRODS("smull", "v0", "v1", "8b") KESTREL_I8_PRODS("smlal2", "v0", "v1", "16b")    \
  KESTREL_I8_PAIRS(pair, "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23")               \
  KESTREL_I8_PRODS("smull", "v2", "v3", "8b") KESTREL_I8_PRODS("smlal2", "v2", "v3", "16b")    \
  KESTREL_I8_PAIRS(pair, "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31")
// Channel r's four accumulators (v(16 + 4r) ..) folded into one vector d of its four
// pixels.
#define KESTREL_I8_FOLD(d, c0, c1, c2, c3)                                                     \
  "addp " c0 ".4s, " c0 ".4s, " c1 ".4s\n\t" "addp " c2 ".4s, " c2 ".4s, " c3 ".4s\n\t"        \
  "addp " d ".4s, " c0 ".4s, " c2 ".4s\n\t"

// kd >= 1 groups (%[n], consumed): the first sets the accumulators (SADDLP: no
// zeroing), then kd - 1, two a loop iteration; channel r's sums folded into v(r).
#define KESTREL_I8_TILE                                   \
  KESTREL_I8_STEP("saddlp")                               \
  "sub %[n], %[n], #1\n\t"                                \
  "tbz %[n], #0, 1f\n\t"                                  \
  KESTREL_I8_STEP("sadalp")                               \
  "1:\n\t"                                                \
  "lsr %[n], %[n], #1\n\t"                                \
  "cbz %[n], 3f\n"                                        \
  "2:\n\t"                                                \
  KESTREL_I8_STEP("sadalp")                               \
  KESTREL_I8_STEP("sadalp")                               \
  "subs %[n], %[n], #1\n\t"                               \
  "b.ne 2b\n"                                             \
  "3:\n\t"                                                \
  KESTREL_I8_FOLD("v0", "v16", "v17", "v18", "v19")       \
  KESTREL_I8_FOLD("v1", "v20", "v21", "v22", "v23")       \
  KESTREL_I8_FOLD("v2", "v24", "v25", "v26", "v27")       \
  KESTREL_I8_FOLD("v3", "v28", "v29", "v30", "v31")

#define KESTREL_I8_CLOBBERS                                                                                      \
  "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", \
      "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory"

// The sums stored. Not inlined: the tile calls it 2 to 6 times, and each copy is 150
// instructions.
inline __attribute__((noinline)) void smlal_4x4(size_t kd, const int8_t* a, const int8_t* x, size_t xs,
                                                int32_t* out) {
  asm volatile(KESTREL_I8_TILE "st1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[out]]\n\t"
               : [a] "+r"(a), [x] "+r"(x), [n] "+r"(kd)
               : [xs] "r"(xs), [out] "r"(out)
               : KESTREL_I8_CLOBBERS);
}

// The sums requantized into int8 rows in the same asm (a whole 4 x 4 tile of an int8
// map with a bounds-only activation, i8_reference.h): rne(fma(float(sum), m[r], c[r]))
// (FCVTNS), narrowed with saturation, clamped to [lo, hi] and stored, 4 bytes a
// channel, channels ldc bytes apart: 31 instructions a tile, no round trip of the sums
// through the stack (MobileNet v1 int8 on cortex-a72: 153.8 -> 149.7 M instructions
// against the driver's C++ epilogue).
// mc: m[4] at mc, c[4] 32 bytes on (the panel's factors, i8_conv_driver_neon.h);
// bounds: lo then hi (16 bytes each). Inlined into the caller's loop over tiles: as a
// call of its own, it saved and restored d8 .. d15 (callee-saved) every tile.
#define KESTREL_I8_ROW(a, d, lane)                                                             \
  "scvtf " a ".4s, " a ".4s\n\t" "dup " d ".4s, v5.s[" #lane "]\n\t"                            \
  "fmla " d ".4s, " a ".4s, v4.s[" #lane "]\n\t" "fcvtns " d ".4s, " d ".4s\n\t"
inline __attribute__((always_inline)) void smlal_4x4_i8(size_t kd, const int8_t* a, const int8_t* x, size_t xs,
                                                       const float* mc, const int8_t* bounds, int8_t* o,
                                                       size_t ldc) {
  asm volatile(KESTREL_I8_TILE
               "ldr q4, [%[mc]]\n\t"
               "ldr q5, [%[mc], #32]\n\t"
               "ld1 {v6.16b, v7.16b}, [%[bounds]]\n\t"
               KESTREL_I8_ROW("v0", "v8", 0) KESTREL_I8_ROW("v1", "v9", 1)
               KESTREL_I8_ROW("v2", "v10", 2) KESTREL_I8_ROW("v3", "v11", 3)
               "sqxtn v12.4h, v8.4s\n\t" "sqxtn2 v12.8h, v9.4s\n\t"
               "sqxtn v13.4h, v10.4s\n\t" "sqxtn2 v13.8h, v11.4s\n\t"
               "sqxtn v12.8b, v12.8h\n\t" "sqxtn2 v12.16b, v13.8h\n\t"
               "smax v12.16b, v12.16b, v6.16b\n\t" "smin v12.16b, v12.16b, v7.16b\n\t"
               "st1 {v12.s}[0], [%[o]], %[ldc]\n\t" "st1 {v12.s}[1], [%[o]], %[ldc]\n\t"
               "st1 {v12.s}[2], [%[o]], %[ldc]\n\t" "st1 {v12.s}[3], [%[o]]\n\t"
               : [a] "+r"(a), [x] "+r"(x), [n] "+r"(kd), [o] "+r"(o)
               : [xs] "r"(xs), [mc] "r"(mc), [bounds] "r"(bounds), [ldc] "r"(ldc)
               : KESTREL_I8_CLOBBERS);
}

#undef KESTREL_I8_ROW
#undef KESTREL_I8_CLOBBERS
#undef KESTREL_I8_TILE
#undef KESTREL_I8_FOLD
#undef KESTREL_I8_STEP
#undef KESTREL_I8_PAIRS
#undef KESTREL_I8_PRODS

}  // namespace kestrel::kernels::arm::i8
