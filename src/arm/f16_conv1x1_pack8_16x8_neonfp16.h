// The fp16 1x1 pack8 tile (16 output channels x 8 pixels, FMLA .8h by element), its
// activations and its two stores (pack8 blocks, or planar rows through an 8x8
// transpose): compiled into src/arm/f16_conv1x1_pack8_16x8_neonfp16.cpp and into
// bench/arm/loops/f16_conv1x1_pack8.cpp for llvm-mca. Needs -march=armv8.2-a+fp16.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace kestrel::kernels::arm::conv1x1_pack8_f16 {

constexpr int kLanes = 8;  // channels per block (one vector of halves)
using half = __fp16;

// The tiles' code inline in the drivers' loops whatever GCC's size budget says (with the
// planar stores beside the pack8 ones, GCC left lane() calls in the tail tiles' loops).
#define KESTREL_F16_INLINE __attribute__((always_inline)) inline

// The activations on the fp16 accumulators, as the reference's fp32 forms compare
// (x < 0 ? 0 : x keeps -0 and NaN, where FMAX would not): one type per instantiation.
struct NoAct {
  float16x8_t operator()(float16x8_t x) const { return x; }
};
struct ReLU {
  float16x8_t operator()(float16x8_t x) const {
    const float16x8_t zero = vdupq_n_f16(0);
    return vbslq_f16(vcltq_f16(x, zero), zero, x);
  }
};
struct Clip {
  float16x8_t lo, hi;
  float16x8_t operator()(float16x8_t x) const {
    const float16x8_t m = vbslq_f16(vcltq_f16(x, lo), lo, x);  // std::max(x, lo)
    return vbslq_f16(vcltq_f16(hi, m), hi, m);                   // std::min(m, hi)
  }
};
// Clip whose upper bound is neither a zero nor NaN (ReLU6): there FMIN equals std::min(m,
// hi), NaN staying NaN and no zero's sign at stake, in one instruction for two. The
// lower bound keeps compare + select: FMAX(-0, +0) is +0 where std::max gives -0.
struct ClipMin {
  float16x8_t lo, hi;
  float16x8_t operator()(float16x8_t x) const { return vminq_f16(vbslq_f16(vcltq_f16(x, lo), lo, x), hi); }
};
struct Leaky {
  float16x8_t slope;
  float16x8_t operator()(float16x8_t x) const {
    return vbslq_f16(vcgtq_f16(x, vdupq_n_f16(0)), x, vmulq_f16(x, slope));
  }
};
// Any other activation, through the table of its 65,536 results on halves
// (kernels/f16_activation_table.h), indexed by each lane's bits: exact whatever the
// function. GCC makes it 8 UMOV, 8 LDR h (register offset) and 7 INS.
struct Lut {
  const uint16_t* table;
  float16x8_t operator()(float16x8_t x) const {
    alignas(16) uint16_t h[kLanes];
    vst1q_u16(h, vreinterpretq_u16_f16(x));
    for (int i = 0; i < kLanes; ++i) h[i] = table[h[i]];
    return vreinterpretq_f16_u16(vld1q_u16(h));
  }
};

// Input channel 8j + L of the block loaded in v: one weight vector per output block,
// then an FMLA by element per accumulator. A weight row holds kBlocks blocks.
template <int kBlocks, int kNp, int L>
KESTREL_F16_INLINE void lane(float16x8_t (&acc)[kBlocks][kNp], const float16x8_t (&v)[kNp], const half* w) {
  for (int o = 0; o < kBlocks; ++o) {
    const float16x8_t wv = vld1q_f16(w + (L * kBlocks + o) * kLanes);
    for (int p = 0; p < kNp; ++p) acc[o][p] = vfmaq_laneq_f16(acc[o][p], wv, v[p], L);
  }
}

template <int kBlocks, int kNp, int... L>
KESTREL_F16_INLINE void lanes(float16x8_t (&acc)[kBlocks][kNp], const float16x8_t (&v)[kNp], const half* w,
                              std::integer_sequence<int, L...>) {
  (lane<kBlocks, kNp, L>(acc, v, w), ...);
}

// The stores of a tile's accumulators acc[o][p] (output channels 8o..8o+7 of pixel p),
// activation applied; at() places one at a tile's first channel and pixel.

// Pack8 halves: block o's pixel p at y + o * ystep + p * 8.
template <class Epi>
struct ToPack8 {
  half* y;
  size_t ystep;  // halves between blocks
  Epi epi;
  ToPack8 at(int oc0, int p0, int /*rows*/) const {
    return {y + static_cast<size_t>(oc0 / kLanes) * ystep + static_cast<size_t>(p0) * kLanes, ystep, epi};
  }
  template <int kBlocks, int kNp>
  void operator()(const float16x8_t (&acc)[kBlocks][kNp]) const {
    for (int o = 0; o < kBlocks; ++o) {
      for (int p = 0; p < kNp; ++p) vst1q_f16(y + o * ystep + p * kLanes, epi(acc[o][p]));
    }
  }
};

// 8 vectors of 8 halves, r[i].h[j] <-> r[j].h[i]: pairs of halves, of words, of
// doublewords swapped by TRN1/TRN2 (24 instructions).
inline void transpose8x8(float16x8_t (&r)[8]) {
  float32x4_t t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = vreinterpretq_f32_f16(vtrn1q_f16(r[i], r[i + 1]));      // lanes 0,2,4,6 of r[i], r[i+1]
    t[i + 1] = vreinterpretq_f32_f16(vtrn2q_f16(r[i], r[i + 1]));  // lanes 1,3,5,7
  }
  float64x2_t u[8];
  for (int i = 0; i < 8; i += 4) {
    for (int j = 0; j < 2; ++j) {
      u[i + j] = vreinterpretq_f64_f32(vtrn1q_f32(t[i + j], t[i + j + 2]));      // lanes j, j + 4 of 4 rows
      u[i + j + 2] = vreinterpretq_f64_f32(vtrn2q_f32(t[i + j], t[i + j + 2]));  // lanes j + 2, j + 6
    }
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = vreinterpretq_f16_f64(vtrn1q_f64(u[c], u[c + 4]));
    r[c + 4] = vreinterpretq_f16_f64(vtrn2q_f64(u[c], u[c + 4]));
  }
}

// The first kN halves of v at y: nothing past them is written (a row's padding, a
// neighbouring tile's pixels). y is 4-byte aligned (a tile starts at a multiple of 8
// pixels of a row whose cstep counts 4-byte units), so is the pair at y + 4.
template <int kN>
inline void store_halves(half* y, float16x8_t v) {
  if constexpr (kN == kLanes) {
    vst1q_f16(y, v);
  } else {
    if constexpr ((kN & 4) != 0) vst1_f16(y, vget_low_f16(v));
    if constexpr ((kN & 2) != 0) {
      vst1q_lane_u32(reinterpret_cast<uint32_t*>(y + (kN & 4)), vreinterpretq_u32_f16(v), (kN & 4) / 2);
    }
    if constexpr ((kN & 1) != 0) vst1q_lane_f16(y + (kN & 6), v, kN & 6);
  }
}

// Planar halves: the tile's channel c (c < rows, the panel's real channels; the rest
// are the packing's zero padding) at y + c * ystep, its kNp pixels contiguous.
template <class Epi>
struct ToPlanar {
  half* y;
  size_t ystep;  // halves between channels
  int rows;
  Epi epi;
  ToPlanar at(int oc0, int p0, int rows_here) const {
    return {y + static_cast<size_t>(oc0) * ystep + p0, ystep, rows_here, epi};
  }
  template <int kBlocks, int kNp>
  void operator()(const float16x8_t (&acc)[kBlocks][kNp]) const {
    for (int o = 0; o < kBlocks; ++o) {
      float16x8_t r[kLanes];
      for (int p = 0; p < kLanes; ++p) r[p] = acc[o][p < kNp ? p : kNp - 1];  // lanes past kNp: not stored
      transpose8x8(r);
      rows_of<kNp>(r, y + static_cast<size_t>(o) * kLanes * ystep, rows - o * kLanes,
                   std::make_integer_sequence<int, kLanes>());
    }
  }
  // Channel c's row, activated, for each c < n, unrolled so that r stays in registers.
  // The activation acts lane by lane, so it may follow the transpose: on the real
  // channels only (a 1-channel head activates 1 vector, not 8: Lut's lookups count).
  template <int kNp, int... C>
  void rows_of(const float16x8_t (&r)[kLanes], half* yb, int n, std::integer_sequence<int, C...>) const {
    ((C < n ? store_halves<kNp>(yb + C * ystep, epi(r[C])) : void()), ...);
  }
};

// One tile: kBlocks blocks of 8 output channels (1 or 2) x kNp pixels. `x[p]` points at
// pixel p's vector in input block 0; blocks are xstep halves apart. `w` is the panel
// (bias first, kBlocks * 8 halves a row).
template <int kBlocks, int kNp, class Out>
KESTREL_F16_INLINE void tile(const half* const* x, size_t xstep, int kb, const half* w, const Out& out) {
  constexpr int rows = kBlocks * kLanes;
  float16x8_t acc[kBlocks][kNp];
  for (int o = 0; o < kBlocks; ++o) {
    const float16x8_t b = vld1q_f16(w + o * kLanes);
    for (int p = 0; p < kNp; ++p) acc[o][p] = b;
  }
  w += rows;
  for (int j = 0; j < kb; ++j) {
    float16x8_t v[kNp];
    for (int p = 0; p < kNp; ++p) v[p] = vld1q_f16(x[p] + j * xstep);
    lanes(acc, v, w, std::make_integer_sequence<int, kLanes>());
    w += kLanes * rows;
  }
  out(acc);
}

// 16 FMLAs of one input channel (lane l of v0-v7) into both accumulator blocks.
#define KESTREL_F16_ROW(wa, wb, l)                                                                            \
"fmla v16.8h, " wa ".8h, v0.h[" l "]\n fmla v17.8h, " wa ".8h, v1.h[" l "]\n"                                \
"fmla v18.8h, " wa ".8h, v2.h[" l "]\n fmla v19.8h, " wa ".8h, v3.h[" l "]\n"                                \
"fmla v20.8h, " wa ".8h, v4.h[" l "]\n fmla v21.8h, " wa ".8h, v5.h[" l "]\n"                                \
"fmla v22.8h, " wa ".8h, v6.h[" l "]\n fmla v23.8h, " wa ".8h, v7.h[" l "]\n"                                \
"fmla v24.8h, " wb ".8h, v0.h[" l "]\n fmla v25.8h, " wb ".8h, v1.h[" l "]\n"                                \
"fmla v26.8h, " wb ".8h, v2.h[" l "]\n fmla v27.8h, " wb ".8h, v3.h[" l "]\n"                                \
"fmla v28.8h, " wb ".8h, v4.h[" l "]\n fmla v29.8h, " wb ".8h, v5.h[" l "]\n"                                \
"fmla v30.8h, " wb ".8h, v6.h[" l "]\n fmla v31.8h, " wb ".8h, v7.h[" l "]\n"

// The full tile (16 output channels x 8 contiguous pixels) with its registers placed by
// hand: FMLA by element on halves takes its element from v0-v15 only, and GCC, left to
// itself, reloads operands (57 loads for the 128 FMLAs of a block). Here the 8 pixel
// vectors live in v0-v7, 4 weight rows of 16 channels in v8-v15 (two loads per half
// block), the 16 accumulators in v16-v31: per input block 2 + 4 ld1 of 4 registers for
// 128 FMLA. Same order as tile(): bias, then input channel by input channel.
template <class Out>
KESTREL_F16_INLINE void tile_16x8(const half* x, size_t xstep, int kb, const half* w, const Out& out) {
  register float16x8_t a0 asm("v16"), a1 asm("v17"), a2 asm("v18"), a3 asm("v19"), a4 asm("v20"), a5 asm("v21"),
      a6 asm("v22"), a7 asm("v23"), b0 asm("v24"), b1 asm("v25"), b2 asm("v26"), b3 asm("v27"), b4 asm("v28"),
      b5 asm("v29"), b6 asm("v30"), b7 asm("v31");
  const size_t xskip = xstep * sizeof(half) - 64;  // the second 4 pixels follow the first
  asm volatile(
      "ld1 {v24.8h, v25.8h}, [%[w]], #32\n"  // bias: channels 0-7, 8-15
      "mov v16.16b, v24.16b\n mov v17.16b, v24.16b\n mov v18.16b, v24.16b\n mov v19.16b, v24.16b\n"
      "mov v20.16b, v24.16b\n mov v21.16b, v24.16b\n mov v22.16b, v24.16b\n mov v23.16b, v24.16b\n"
      "mov v26.16b, v25.16b\n mov v27.16b, v25.16b\n mov v28.16b, v25.16b\n mov v29.16b, v25.16b\n"
      "mov v30.16b, v25.16b\n mov v31.16b, v25.16b\n mov v24.16b, v25.16b\n"
      ".Lf16_conv1x1_block%=:\n"
      "ld1 {v0.8h, v1.8h, v2.8h, v3.8h}, [%[x]], #64\n"
      "ld1 {v4.8h, v5.8h, v6.8h, v7.8h}, [%[x]], %[xskip]\n"
      "ld1 {v8.8h, v9.8h, v10.8h, v11.8h}, [%[w]], #64\n"
      "ld1 {v12.8h, v13.8h, v14.8h, v15.8h}, [%[w]], #64\n"
      KESTREL_F16_ROW("v8", "v9", "0") KESTREL_F16_ROW("v10", "v11", "1")
      KESTREL_F16_ROW("v12", "v13", "2") KESTREL_F16_ROW("v14", "v15", "3")
      "ld1 {v8.8h, v9.8h, v10.8h, v11.8h}, [%[w]], #64\n"
      "ld1 {v12.8h, v13.8h, v14.8h, v15.8h}, [%[w]], #64\n"
      KESTREL_F16_ROW("v8", "v9", "4") KESTREL_F16_ROW("v10", "v11", "5")
      KESTREL_F16_ROW("v12", "v13", "6") KESTREL_F16_ROW("v14", "v15", "7")
      "subs %w[kb], %w[kb], #1\n"
      "b.ne .Lf16_conv1x1_block%=\n"
      : [x] "+r"(x), [w] "+r"(w), [kb] "+r"(kb), "=w"(a0), "=w"(a1), "=w"(a2), "=w"(a3), "=w"(a4), "=w"(a5),
        "=w"(a6), "=w"(a7), "=w"(b0), "=w"(b1), "=w"(b2), "=w"(b3), "=w"(b4), "=w"(b5), "=w"(b6), "=w"(b7)
      : [xskip] "r"(xskip)
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "cc",
        "memory");
  const float16x8_t acc[2][8] = {{a0, a1, a2, a3, a4, a5, a6, a7}, {b0, b1, b2, b3, b4, b5, b6, b7}};
  out(acc);
}

// 8 FMLAs of one input channel (lane l of v0-v7) into the one accumulator block.
#define KESTREL_F16_ROW8(wa, l)                                                                               \
"fmla v16.8h, " wa ".8h, v0.h[" l "]\n fmla v17.8h, " wa ".8h, v1.h[" l "]\n"                                \
"fmla v18.8h, " wa ".8h, v2.h[" l "]\n fmla v19.8h, " wa ".8h, v3.h[" l "]\n"                                \
"fmla v20.8h, " wa ".8h, v4.h[" l "]\n fmla v21.8h, " wa ".8h, v5.h[" l "]\n"                                \
"fmla v22.8h, " wa ".8h, v6.h[" l "]\n fmla v23.8h, " wa ".8h, v7.h[" l "]\n"

// A panel of 8 output channels (the last of 24, 40 or 34) x 8 contiguous pixels, placed
// as tile_16x8 is: GCC's code for tile<1, 8> reloaded operands and took 0.30
// instructions per multiply-add where this takes 0.133. Pixels in v0-v7, the 8 weight
// rows of an input block in v8-v15 (two ld1 of 4), 8 accumulators in v16-v23.
template <class Out>
KESTREL_F16_INLINE void tile_8x8(const half* x, size_t xstep, int kb, const half* w, const Out& out) {
  register float16x8_t a0 asm("v16"), a1 asm("v17"), a2 asm("v18"), a3 asm("v19"), a4 asm("v20"), a5 asm("v21"),
      a6 asm("v22"), a7 asm("v23");
  const size_t xskip = xstep * sizeof(half) - 64;
  asm volatile(
      "ld1 {v16.8h}, [%[w]], #16\n"  // bias
      "mov v17.16b, v16.16b\n mov v18.16b, v16.16b\n mov v19.16b, v16.16b\n mov v20.16b, v16.16b\n"
      "mov v21.16b, v16.16b\n mov v22.16b, v16.16b\n mov v23.16b, v16.16b\n"
      ".Lf16_conv1x1_block8_%=:\n"
      "ld1 {v0.8h, v1.8h, v2.8h, v3.8h}, [%[x]], #64\n"
      "ld1 {v4.8h, v5.8h, v6.8h, v7.8h}, [%[x]], %[xskip]\n"
      "ld1 {v8.8h, v9.8h, v10.8h, v11.8h}, [%[w]], #64\n"
      "ld1 {v12.8h, v13.8h, v14.8h, v15.8h}, [%[w]], #64\n"
      KESTREL_F16_ROW8("v8", "0") KESTREL_F16_ROW8("v9", "1") KESTREL_F16_ROW8("v10", "2") KESTREL_F16_ROW8("v11", "3")
      KESTREL_F16_ROW8("v12", "4") KESTREL_F16_ROW8("v13", "5") KESTREL_F16_ROW8("v14", "6") KESTREL_F16_ROW8("v15", "7")
      "subs %w[kb], %w[kb], #1\n"
      "b.ne .Lf16_conv1x1_block8_%=\n"
      : [x] "+r"(x), [w] "+r"(w), [kb] "+r"(kb), "=w"(a0), "=w"(a1), "=w"(a2), "=w"(a3), "=w"(a4), "=w"(a5),
        "=w"(a6), "=w"(a7)
      : [xskip] "r"(xskip)
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "cc",
        "memory");
  const float16x8_t acc[1][8] = {{a0, a1, a2, a3, a4, a5, a6, a7}};
  out(acc);
}
#undef KESTREL_F16_ROW8

// The pack8 -> pack8 tile as the llvm-mca loop calls it.
template <class Epi>
inline void tile_16x8(const half* x, size_t xstep, int kb, const half* w, half* y, size_t ystep, const Epi& epi) {
  tile_16x8(x, xstep, kb, w, ToPack8<Epi>{y, ystep, epi});
}

#undef KESTREL_F16_ROW
#undef KESTREL_F16_INLINE

// A tile of 1-8 pixels (kBlocks blocks of 8 channels): the pixel count picks the
// instantiation of tile() once per tile.
template <int kBlocks, class Out, int... N>
inline void tile_any(int np, const half* const* x, size_t xstep, int kb, const half* w, const Out& out,
                     std::integer_sequence<int, N...>) {
  ((np == N + 1 ? tile<kBlocks, N + 1>(x, xstep, kb, w, out) : void()), ...);
}

}  // namespace kestrel::kernels::arm::conv1x1_pack8_f16
