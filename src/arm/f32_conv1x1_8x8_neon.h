// The register-blocked inner loops of the NEON 1x1 convolution (Bi et al., Alg. 2):
// 8 output channels x 8 pixels in 16 float32x4 accumulators, plus the 8 x 4 tile and
// the 8 x 1..3 tail. Self-contained (only <arm_neon.h>) so bench scripts can compile it
// alone and mark the loop for llvm-mca.
//
// Operand layouts (written by f32_conv1x1_8x8_neon.cpp):
//   weights  w[c * 8 + o]  : input channel c, output channel o of the 8-channel block,
//                            followed by the block's 8 biases (w + k * 8)
//   input    x[c * P + p]  : input channel c, pixel p of a P-pixel tile (P = 8 or 4);
//            x[p * k + c]  : the same for the 1..3-pixel tail
// The tile functions return their accumulators and are always inlined: a returned
// struct that is not inlined lives in memory, and GCC then stores it every iteration.
// Every tile computes acc = bias, then acc = fma(acc, x_c, w_c) for c = 0..k-1 in
// order, whatever its width, so an output's bits do not depend on how pixels are tiled.
#pragma once
// GCC's pre-allocation scheduler (-fschedule-insns) hoists the loads of a 4-channel
// step so far that 16 accumulators plus the operands no longer fit in 32 registers:
// it then adds ~17 register moves per iteration, which take FMA issue slots (llvm-mca:
// 88% instead of 100% of the A72 FMA peak). This header is included first by its
// .cpp, so the option covers that translation unit only. Clang schedules well as is.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif
#include <arm_neon.h>

namespace kestrel::kernels::arm::conv1x1 {

constexpr int kBlockOut = 8;  // output channels per weight block

// One column of a tile: output channels 0..7 at 4 adjacent pixels. Named members,
// not arrays, so that GCC keeps all accumulators in registers (its scalar
// replacement runs before loops over array indices are unrolled).
struct Col {
  float32x4_t o0, o1, o2, o3, o4, o5, o6, o7;
};

// Broadcasts straight from memory (ld1r): built from lanes of two loaded bias vectors
// instead, the accumulators share SSA origins that GCC coalesces, and the 8 x 4 loop
// then gains register moves.
inline void col_init(Col& c, const float* b) {
  c.o0 = vld1q_dup_f32(b);
  c.o1 = vld1q_dup_f32(b + 1);
  c.o2 = vld1q_dup_f32(b + 2);
  c.o3 = vld1q_dup_f32(b + 3);
  c.o4 = vld1q_dup_f32(b + 4);
  c.o5 = vld1q_dup_f32(b + 5);
  c.o6 = vld1q_dup_f32(b + 6);
  c.o7 = vld1q_dup_f32(b + 7);
}

// 8 FMAs with the weight taken by lane (fmla v.4s, v.4s, v.s[lane]).
inline void col_fma(Col& c, float32x4_t x, float32x4_t w0, float32x4_t w1) {
  c.o0 = vfmaq_laneq_f32(c.o0, x, w0, 0);
  c.o1 = vfmaq_laneq_f32(c.o1, x, w0, 1);
  c.o2 = vfmaq_laneq_f32(c.o2, x, w0, 2);
  c.o3 = vfmaq_laneq_f32(c.o3, x, w0, 3);
  c.o4 = vfmaq_laneq_f32(c.o4, x, w1, 0);
  c.o5 = vfmaq_laneq_f32(c.o5, x, w1, 1);
  c.o6 = vfmaq_laneq_f32(c.o6, x, w1, 2);
  c.o7 = vfmaq_laneq_f32(c.o7, x, w1, 3);
}

// Accumulators of an 8-channel x (4 * kVecs)-pixel tile, kVecs = 1 or 2; c1 is unused
// (and optimised away) when kVecs == 1.
template <int kVecs>
struct Acc {
  static_assert(kVecs == 1 || kVecs == 2, "8x8 and 8x4 tiles only");
  Col c0, c1;
};

// One input channel's operands: its 8 weights and 4 * kVecs pixels (x1 unused
// when kVecs == 1).
struct Chan {
  float32x4_t w0, w1, x0, x1;
};

template <int kVecs>
inline Chan load_chan(const float* __restrict w, const float* __restrict x) {
  Chan ch;
  ch.w0 = vld1q_f32(w);
  ch.w1 = vld1q_f32(w + 4);
  ch.x0 = vld1q_f32(x);
  if constexpr (kVecs == 2) ch.x1 = vld1q_f32(x + 4);
  return ch;
}

// One input channel's contribution: 8 * kVecs FMAs.
template <int kVecs>
inline void fma_chan(const Chan& ch, Col& c0, Col& c1) {
  col_fma(c0, ch.x0, ch.w0, ch.w1);
  if constexpr (kVecs == 2) col_fma(c1, ch.x1, ch.w0, ch.w1);
}

// The 8 x (4 * kVecs) microkernel over k input channels; kVecs = 2 is the paper's
// 8 x 8 block. Per step of 4 input channels (the 4 x 8 packing unit of Alg. 1) all
// operands are loaded first (8 weight and 4 * kVecs input registers: for the 8 x 8
// tile, with its 16 accumulators, all 32), then the 32 * kVecs FMAs run, so an
// in-order core (Cortex-A53) does not wait on a load feeding the next FMA.
// Accumulates in locals and builds the result at the end (see conv1x1_pixels).
template <int kVecs>
__attribute__((always_inline)) inline Acc<kVecs> conv1x1_tile(int k, const float* __restrict w,
                                                              const float* __restrict x) {
  constexpr int kPixels = 4 * kVecs;
  Col c0, c1{};
  col_init(c0, w + k * kBlockOut);
  if constexpr (kVecs == 2) c1 = c0;
  int c = 0;
  for (; c + 4 <= k; c += 4) {
    const Chan ch0 = load_chan<kVecs>(w, x);
    const Chan ch1 = load_chan<kVecs>(w + kBlockOut, x + kPixels);
    const Chan ch2 = load_chan<kVecs>(w + 2 * kBlockOut, x + 2 * kPixels);
    const Chan ch3 = load_chan<kVecs>(w + 3 * kBlockOut, x + 3 * kPixels);
    fma_chan<kVecs>(ch0, c0, c1);
    fma_chan<kVecs>(ch1, c0, c1);
    fma_chan<kVecs>(ch2, c0, c1);
    fma_chan<kVecs>(ch3, c0, c1);
    w += 4 * kBlockOut;
    x += 4 * kPixels;
  }
  for (; c < k; ++c) {
    fma_chan<kVecs>(load_chan<kVecs>(w, x), c0, c1);
    w += kBlockOut;
    x += kPixels;
  }
  return Acc<kVecs>{c0, c1};
}

// The last 1..3 pixels of a map (after the 8- and 4-pixel tiles): the 8 output
// channels are the vector lanes and each pixel's 4 channels give the lanes to
// multiply by, so a remainder costs 2 FMAs per channel and pixel instead of a whole
// 8 x 4 tile of zero pixels, and tiny maps (1 x 1 ones included) need no wider tile.
// The pixels are packed pixel-major here: x[r * k + c].
struct Pix {
  float32x4_t lo, hi;  // output channels 0..3, 4..7
};

template <int kPix>
struct AccPix {
  static_assert(kPix >= 1 && kPix <= 3, "1..3 pixels");
  Pix p0, p1, p2;  // p1, p2 unused below kPix 2, 3
};

// The weights of 4 input channels: wC_lo/hi = channel C, output channels 0..3/4..7.
struct Quad {
  float32x4_t w0lo, w0hi, w1lo, w1hi, w2lo, w2hi, w3lo, w3hi;
};

inline void pix_fma4(Pix& p, float32x4_t x, const Quad& q) {
  p.lo = vfmaq_laneq_f32(p.lo, q.w0lo, x, 0);
  p.hi = vfmaq_laneq_f32(p.hi, q.w0hi, x, 0);
  p.lo = vfmaq_laneq_f32(p.lo, q.w1lo, x, 1);
  p.hi = vfmaq_laneq_f32(p.hi, q.w1hi, x, 1);
  p.lo = vfmaq_laneq_f32(p.lo, q.w2lo, x, 2);
  p.hi = vfmaq_laneq_f32(p.hi, q.w2hi, x, 2);
  p.lo = vfmaq_laneq_f32(p.lo, q.w3lo, x, 3);
  p.hi = vfmaq_laneq_f32(p.hi, q.w3hi, x, 3);
}

inline void pix_fma1(Pix& p, float x, float32x4_t wlo, float32x4_t whi) {
  p.lo = vfmaq_n_f32(p.lo, wlo, x);
  p.hi = vfmaq_n_f32(p.hi, whi, x);
}

// Accumulates in locals and builds the result at the end: GCC keeps a struct that is
// assigned as a whole (p0 = p1 = p2) in memory and stores it on every iteration.
template <int kPix>
__attribute__((always_inline)) inline AccPix<kPix> conv1x1_pixels(int k, const float* __restrict w,
                                                                  const float* __restrict x) {
  Pix p0{vld1q_f32(w + k * kBlockOut), vld1q_f32(w + k * kBlockOut + 4)};
  Pix p1 = p0, p2 = p0;
  int c = 0;
  for (; c + 4 <= k; c += 4) {
    const Quad q{vld1q_f32(w),      vld1q_f32(w + 4),  vld1q_f32(w + 8),  vld1q_f32(w + 12),
                 vld1q_f32(w + 16), vld1q_f32(w + 20), vld1q_f32(w + 24), vld1q_f32(w + 28)};
    pix_fma4(p0, vld1q_f32(x + c), q);
    if constexpr (kPix > 1) pix_fma4(p1, vld1q_f32(x + k + c), q);
    if constexpr (kPix > 2) pix_fma4(p2, vld1q_f32(x + 2 * k + c), q);
    w += 4 * kBlockOut;
  }
  for (; c < k; ++c) {
    const float32x4_t wlo = vld1q_f32(w), whi = vld1q_f32(w + 4);
    pix_fma1(p0, x[c], wlo, whi);
    if constexpr (kPix > 1) pix_fma1(p1, x[k + c], wlo, whi);
    if constexpr (kPix > 2) pix_fma1(p2, x[2 * k + c], wlo, whi);
    w += kBlockOut;
  }
  return AccPix<kPix>{p0, p1, p2};
}

}  // namespace kestrel::kernels::arm::conv1x1
