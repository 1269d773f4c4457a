// The tile driver of the NEON convolutions that run as one GEMM over a pack4 operand
// (f32_conv1x1_pack4_8x8_neon, f32_conv_im2col_pack4_neon): output = weights x X + bias,
// X being kb blocks of 4 rows of `pixels` pack4 vectors (the input itself, its
// stride-2 copy or an im2col matrix), computed by the 8 x 8 tiles of
// f32_conv1x1_pack4_8x8_neon.h with the activation fused on their registers and stored
// pack4 or planar.
//
// Pixels in 8-pixel tiles and one last tile of the 1..7 left. Output channels in blocks
// of 8 (two pack4 blocks), the last one 4 wide when at most 4 remain.
//
// Threads: work items are (output-channel block, run of pixel tiles), blocks inner,
// split in one contiguous range per thread (schedule static): where the weights
// outweigh the input a run is every tile, so that a thread keeps its blocks' weights
// in cache. Every output value comes from one tile computed by one thread in a fixed
// order (bias, then the K rows in order), whatever tile it is in, so the result
// depends neither on the thread count nor on how the pixels are cut into tiles.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "arm/f32_conv1x1_pack4_8x8_neon.h"
#include "arm/f32_half_blocks_neon.h"
#include "kernels/kernel_context.h"

namespace kestrel::kernels::arm::conv_pack4 {
// Internal linkage, a copy per kernel, as when this was the 1x1 kernel's own code:
// shared (external linkage) GCC inlined and allocated registers differently, 7 more
// instructions for each tile of the last pixels of a map.
namespace {

using namespace conv1x1_pack4;

constexpr int kLanes = 4;
// Input bytes of a run of tiles (a work item), so that in run-major order a run stays
// in L1 while every weight block passes over it.
constexpr size_t kRunInputBytes = 16384;

inline size_t out_blocks(int out_c) { return (static_cast<size_t>(out_c) + kBlockOut - 1) / kBlockOut; }
// The last weight block holds 4 output channels (one half) when at most 4 remain.
inline bool narrow_last(int out_c) { return out_c % kBlockOut != 0 && out_c % kBlockOut <= kLanes; }
inline size_t block_floats(size_t kb, int halves) { return kb * kLanes * kLanes * halves + kBiasFloats / 2 * halves; }

// Floats of the weights of out_c channels over kb blocks of 4 rows, with their biases.
inline size_t packed_floats(size_t kb, int out_c) {
  const size_t full = out_blocks(out_c) - (narrow_last(out_c) ? 1 : 0);
  return full * block_floats(kb, 2) + (narrow_last(out_c) ? block_floats(kb, 1) : 0);
}

// Block b (at b * block_floats(kb, 2)) holds w[k * 4H + o] = weight_at(8b + o, k) for
// the K = 4 kb rows (zero past out_c, so that every block runs the same tiles), then
// its bias broadcast to [H][8 pixels][4].
template <class WeightAt>
void pack_blocks(int out_c, size_t kb, WeightAt&& weight_at, const float* bias, float* packed) {
  const size_t k = kb * kLanes;
  for (size_t b = 0; b < out_blocks(out_c); ++b) {
    const int halves = b + 1 == out_blocks(out_c) && narrow_last(out_c) ? 1 : 2;
    const int width = kLanes * halves;
    float* dst = packed + b * block_floats(kb, 2);
    for (int o = 0; o < width; ++o) {
      const size_t oc = b * kBlockOut + o;
      const bool real = oc < static_cast<size_t>(out_c);
      for (size_t c = 0; c < k; ++c) dst[c * width + o] = real ? weight_at(oc, c) : 0.f;
      const float bv = real && bias ? bias[oc] : 0.f;
      float* bdst = dst + k * width + (o / kLanes) * kTilePixels * kLanes + o % kLanes;
      for (int p = 0; p < kTilePixels; ++p) bdst[p * kLanes] = bv;
    }
  }
}

// A half-weight twin's block b (f32_half_blocks_neon.h): its weights as halves, then
// its bias; blocks half_layout(kb, 2).stored_floats() apart.
inline half_blocks::Layout half_layout(size_t kb, int halves) {
  return {false, kb * kLanes * kLanes * halves, static_cast<size_t>(halves), kTilePixels};
}
inline size_t half_packed_floats(size_t kb, int out_c) {
  const size_t full = out_blocks(out_c) - (narrow_last(out_c) ? 1 : 0);
  return full * half_layout(kb, 2).stored_floats() + (narrow_last(out_c) ? half_layout(kb, 1).stored_floats() : 0);
}

// pack_blocks' blocks, each stored with its weights as halves (values that are halves).
template <class WeightAt>
void pack_half_blocks(int out_c, size_t kb, WeightAt&& weight_at, const float* bias, float* packed) {
  std::vector<float> block(block_floats(kb, 2));
  for (size_t b = 0; b < out_blocks(out_c); ++b) {
    const int n = std::min<int>(kBlockOut, out_c - static_cast<int>(b) * kBlockOut);
    pack_blocks(
        n, kb, [&](size_t oc, size_t c) { return weight_at(b * kBlockOut + oc, c); },
        bias ? bias + b * kBlockOut : nullptr, block.data());
    half_layout(kb, narrow_last(n) ? 1 : 2).narrow(block.data(), packed + b * half_layout(kb, 2).stored_floats());
  }
}

// Per-thread scratch of a half-weight twin over out_c channels and kb row blocks.
inline size_t half_room_bytes(size_t kb, int out_c) {
  return half_blocks::room_bytes(out_blocks(out_c), block_floats(kb, 2));
}

// 4x4 transpose: c.k = lane k of r0..r3.
struct Quad {
  float32x4_t c0, c1, c2, c3;
};
inline Quad transpose(float32x4_t r0, float32x4_t r1, float32x4_t r2, float32x4_t r3) {
  const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)), t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
  const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)), t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
  return Quad{vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)), vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)),
              vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)), vreinterpretq_f32_f64(vtrn2q_f64(t1, t3))};
}

// n pixels of channel block j, input pixels first, first + step, ..., into dst as pack4
// vectors: from a blocked input (in_pack 4) one vector per pixel, from a planar one the
// 4 channels' values, -0.f past in_c (times a zero weight that adds -0, which leaves
// every sum as it is: +0 would turn a -0 sum into +0).
inline void gather_block_row(const float* in, size_t in_cstep, int in_pack, int in_c, size_t j, size_t first,
                             int step, int n, float* dst) {
  if (in_pack == kLanes) {
    const float* src = in + j * in_cstep + first * kLanes;
    for (int x = 0; x < n; ++x) vst1q_f32(dst + x * kLanes, vld1q_f32(src + x * step * kLanes));
    return;
  }
  const float* chan[kLanes];
  const int real = std::min<int>(kLanes, in_c - static_cast<int>(j) * kLanes);
  for (int i = 0; i < real; ++i) chan[i] = in + (j * kLanes + i) * in_cstep + first;
  int x = 0;
  if (real == kLanes && step == 1) {
    // 4 pixels of 4 channels at a time, transposed.
    for (; x + 4 <= n; x += 4) {
      const Quad q = transpose(vld1q_f32(chan[0] + x), vld1q_f32(chan[1] + x), vld1q_f32(chan[2] + x),
                               vld1q_f32(chan[3] + x));
      float* d = dst + x * kLanes;
      vst1q_f32(d, q.c0);
      vst1q_f32(d + 4, q.c1);
      vst1q_f32(d + 8, q.c2);
      vst1q_f32(d + 12, q.c3);
    }
  }
  for (; x < n; ++x) {
    for (int i = 0; i < kLanes; ++i) dst[x * kLanes + i] = i < real ? chan[i][x * step] : -0.f;
  }
}

// --- work items ----------------------------------------------------------------------

// Work items over tiles of kPixels pixels x kChannels output channels (the 8 x 8 tiles
// here; the 12 x 7 ones of f32_conv1x1_pack4_12x7_neon.cpp too).
template <int kPixels, int kChannels>
struct TilePlan {
  size_t kb;         // blocks of 4 rows of X
  size_t pixels;     // output pixels
  size_t full;       // whole tiles
  int rest;          // pixels of the last tile (0: none)
  size_t tiles;      // full + (rest > 0)
  size_t nblocks;    // output-channel blocks
  size_t run_tiles;  // tiles per work item
  size_t runs;       // runs of tiles per block

  TilePlan(size_t kb_, size_t pixels_, size_t nblocks_)
      : kb(kb_),
        pixels(pixels_),
        full(pixels / kPixels),
        rest(static_cast<int>(pixels % kPixels)),
        tiles(full + (rest > 0)),
        nblocks(nblocks_) {
    // Stream the larger operand once and re-read the smaller one from cache. Where the
    // weights outweigh the input (deep layers on small maps) an item is a block over
    // every tile, its weights staying in L1; else an item is a run of tiles whose input
    // (kb * kPixels * 16 bytes) stays in L1 while the blocks, in the inner order of the
    // items, pass over it.
    const bool weight_major = nblocks * kChannels > pixels;
    run_tiles = weight_major
                    ? tiles
                    : std::clamp<size_t>(kRunInputBytes / (kb * kLanes * kPixels * sizeof(float)), 1, tiles);
    runs = (tiles + run_tiles - 1) / run_tiles;
  }
};

struct Plan : TilePlan<kTilePixels, kBlockOut> {
  Plan(size_t kb_, size_t pixels_, int out_c) : TilePlan(kb_, pixels_, out_blocks(out_c)) {}
};

struct Args {
  int out_c;
  const float* weights;  // a half-weight twin's: its stored blocks (half_layout)
  const float* x;  // X: row block j at x + j * xstep, pixel p's vector at + 4 p
  size_t xstep;
  float* out;      // pixel 0's output (pack4: of channel block 0; planar: of channel 0)
  size_t out_cstep;
  const KernelContext* ctx = nullptr;  // a half-weight twin's: each thread's room
};

// Four pixels' vectors of 4 channels into 4 planar rows (channel o at out + o * cstep).
inline void store_planar4(float* out, size_t cstep, float32x4_t r0, float32x4_t r1, float32x4_t r2,
                          float32x4_t r3) {
  const Quad q = transpose(r0, r1, r2, r3);
  vst1q_f32(out, q.c0);
  vst1q_f32(out + cstep, q.c1);
  vst1q_f32(out + 2 * cstep, q.c2);
  vst1q_f32(out + 3 * cstep, q.c3);
}

// The fused activation on the registers of a P-pixel tile.
template <int P, class Epi>
__attribute__((always_inline)) inline void activate(Acc8x8& a, const Epi& epi) {
  a.l0 = epi(a.l0);
  a.h0 = epi(a.h0);
  if constexpr (P > 1) {
    a.l1 = epi(a.l1), a.l2 = epi(a.l2), a.l3 = epi(a.l3);
    a.h1 = epi(a.h1), a.h2 = epi(a.h2), a.h3 = epi(a.h3);
  }
  if constexpr (P > 4) {
    a.l4 = epi(a.l4), a.l5 = epi(a.l5), a.l6 = epi(a.l6), a.l7 = epi(a.l7);
    a.h4 = epi(a.h4), a.h5 = epi(a.h5), a.h6 = epi(a.h6), a.h7 = epi(a.h7);
  }
}

// A P-pixel tile's registers into buf ([2][8][4]).
template <int P>
__attribute__((always_inline)) inline void dump(const Acc8x8& a, float* buf) {
  store_run<P>(buf, Run{a.l0, a.l1, a.l2, a.l3, a.l4, a.l5, a.l6, a.l7});
  store_run<P>(buf + kTilePixels * kLanes, Run{a.h0, a.h1, a.h2, a.h3, a.h4, a.h5, a.h6, a.h7});
}

// Any tile computed into buf ([H][8][4]), written from there: n pixels of `rows`
// output channels at out (pack4: its first block of 4; planar: its first channel).
template <class Epi>
void store_from(float* buf, int n, int rows, int out_pack, float* out, size_t cstep, const Epi& epi) {
  for (int i = 0; i < (rows + kLanes - 1) / kLanes * kTilePixels; ++i) {
    vst1q_f32(buf + i * kLanes, epi(vld1q_f32(buf + i * kLanes)));
  }
  if (out_pack == kLanes) {
    for (int h = 0; h < rows / kLanes; ++h) {
      float* dst = out + h * cstep;
      std::copy(buf + h * kTilePixels * kLanes, buf + (h * kTilePixels + n) * kLanes, dst);
      epi.finish(dst, static_cast<size_t>(n) * kLanes);
    }
  } else {
    for (int o = 0; o < rows; ++o) {
      float* dst = out + o * cstep;
      const float* src = buf + (o / kLanes) * kTilePixels * kLanes + o % kLanes;
      for (int p = 0; p < n; ++p) dst[p] = src[p * kLanes];
      epi.finish(dst, static_cast<size_t>(n));
    }
  }
}

// An assembly tile (8 output channels x P pixels) to the output: pack4, its two runs
// of P vectors; planar, transposed when whole (P = 8 pixels of 8 channels), else
// through buf.
template <int P, int kOutPack, class Epi>
__attribute__((always_inline)) inline void store_tile(Acc8x8 a, int rows, float* out, size_t cstep, const Epi& epi,
                                                      float* buf) {
  if constexpr (kOutPack == kLanes) {
    activate<P>(a, epi);
    float* hi = out + cstep;
    if constexpr (P == kTilePixels) {
      float* lo = out;
      float* h = hi;
      store8x8_pack4(a, lo, h);
    } else {
      store_run<P>(out, Run{a.l0, a.l1, a.l2, a.l3, a.l4, a.l5, a.l6, a.l7});
      store_run<P>(hi, Run{a.h0, a.h1, a.h2, a.h3, a.h4, a.h5, a.h6, a.h7});
    }
    epi.finish(out, P * kLanes);
    epi.finish(hi, P * kLanes);
  } else if (P == kTilePixels && rows == kBlockOut) {
    activate<P>(a, epi);
    float* hi = out + kLanes * cstep;
    store_planar4(out, cstep, a.l0, a.l1, a.l2, a.l3);
    store_planar4(out + 4, cstep, a.l4, a.l5, a.l6, a.l7);
    store_planar4(hi, cstep, a.h0, a.h1, a.h2, a.h3);
    store_planar4(hi + 4, cstep, a.h4, a.h5, a.h6, a.h7);
    for (int o = 0; o < kBlockOut; ++o) epi.finish(out + o * cstep, kTilePixels);
  } else {
    dump<P>(a, buf);
    store_from(buf, P, rows, kOutPack, out, cstep, epi);
  }
}

template <int H>
void tile_any_n(int n, size_t kb, const float* w, const float* x, size_t xstep, const float* bias, float* buf) {
  switch (n) {
    case 1: tile_any<1, H>(kb, w, x, xstep, bias, buf); break;
    case 2: tile_any<2, H>(kb, w, x, xstep, bias, buf); break;
    case 3: tile_any<3, H>(kb, w, x, xstep, bias, buf); break;
    case 4: tile_any<4, H>(kb, w, x, xstep, bias, buf); break;
    case 5: tile_any<5, H>(kb, w, x, xstep, bias, buf); break;
    case 6: tile_any<6, H>(kb, w, x, xstep, bias, buf); break;
    case 7: tile_any<7, H>(kb, w, x, xstep, bias, buf); break;
    default: tile_any<8, H>(kb, w, x, xstep, bias, buf); break;
  }
}

// Wide blocks (8 channels) [b0, b1) over the same tiles to a pack4 output, the
// activation fused: for each block its `nfull` 8-pixel tiles from x, then a last tile
// of `rest` = 4 or 1 pixels (0: none). One function for a run of work items: called
// per item (or with the loop inside run_tiles) GCC spent ~60 instructions an item on
// setup and kept the loop's constants on the stack.
struct Blocks {
  const float* w;  // block b0's weights; its bias follows them, at kb * kStepWeights
  size_t wstep;    // floats from one block's weights to the next's
  const float* x;  // the first tile's input
  float* out;      // block b0's output at the first tile (its first vector of 4 channels)
  size_t cstep;    // floats from one output block of 4 channels to the next
  size_t nblocks, nfull;
  int rest;
};

template <Body kBody, class Epi>
__attribute__((noinline)) void run_blocks_pack4(const Loop& loop, const Blocks& blocks, const Epi& epi) {
  const Loop lp = loop;
  const Blocks bl = blocks;
  const float* w = bl.w;
  float* o = bl.out;
  for (size_t b = 0; b < bl.nblocks; ++b, w += bl.wstep, o += 2 * bl.cstep) {
    const float* bias = w + lp.kb * kStepWeights;
    // The tile and the stores move x, lo and hi on to the next tile.
    const float* x = bl.x;
    float* lo = o;
    float* hi = o + bl.cstep;
    for (size_t n = bl.nfull; n != 0; --n) {
      Acc8x8 acc = tile<8, kBody>(lp, w, x, bias);
      activate<kTilePixels>(acc, epi);
      float* const first = lo;
      store8x8_pack4(acc, lo, hi);
      epi.finish(first, kTilePixels * kLanes);
      epi.finish(first + bl.cstep, kTilePixels * kLanes);
    }
    if (bl.rest == 4) {
      Acc8x8 r = tile<4>(lp, w, x, bias);
      activate<4>(r, epi);
      store_run<4>(lo, Run{r.l0, r.l1, r.l2, r.l3, r.l0, r.l0, r.l0, r.l0});
      store_run<4>(hi, Run{r.h0, r.h1, r.h2, r.h3, r.h0, r.h0, r.h0, r.h0});
      epi.finish(lo, 4 * kLanes);
      epi.finish(hi, 4 * kLanes);
    } else if (bl.rest == 1) {
      Acc8x8 r = tile<1>(lp, w, x, bias);
      activate<1>(r, epi);
      vst1q_f32(lo, r.l0);
      vst1q_f32(hi, r.h0);
      epi.finish(lo, kLanes);
      epi.finish(hi, kLanes);
    }
  }
}

template <class Epi>
inline void run_blocks(const Loop& lp, const Blocks& bl, const Epi& epi) {
  if (lp.kb % kLongBodySteps == 0) {
    run_blocks_pack4<Body::kWhole32>(lp, bl, epi);
  } else if (lp.skip == 0) {
    run_blocks_pack4<Body::kWhole16>(lp, bl, epi);
  } else if (lp.skip == kBodySteps / 2) {
    run_blocks_pack4<Body::kHalf>(lp, bl, epi);
  } else {
    run_blocks_pack4<Body::kEntered>(lp, bl, epi);
  }
}

// Tiles [t0, t1) of output-channel blocks [b0, b1). A block of 8 channels runs the
// assembly tiles (8 pixels, and a last 4 or 1), the activation fused on their
// registers; a last block of 4 channels and other pixel counts run tile_any through a
// buffer. The blocks loop here, not in the caller: a planar output's work items are
// single tiles where K is long (SSD's heads: 1 tile, 8 blocks), and a call per block
// cost ~150 instructions of set-up a tile.
template <int kOutPack, class Epi>
__attribute__((noinline)) void run_tiles(const Args& a, const Plan& pl, size_t b0, size_t b1, size_t t0, size_t t1,
                                         const Epi& epi) {
  // Locals, not a's and pl's members: the assembly's memory clobber would have GCC
  // load those again for every tile.
  const size_t full = pl.full, out_cstep = a.out_cstep;
  const int rest = pl.rest;
  const Loop lp(pl.kb, a.xstep);
  const float* in = a.x;
  constexpr size_t kOutPx = kOutPack == kLanes ? kLanes : 1;
  alignas(16) float buf[2 * kTilePixels * kLanes];
  for (size_t b = b0; b < b1; ++b) {
    const int rows = static_cast<int>(std::min<size_t>(kBlockOut, a.out_c - b * kBlockOut));
    const int halves = rows > kLanes ? 2 : 1;
    const float* w = a.weights + b * block_floats(pl.kb, 2);
    const float* bias = w + pl.kb * kLanes * kLanes * halves;
    // The block's first output channel (pack4: its first block of 4).
    float* out = a.out + b * (kBlockOut / kOutPx) * out_cstep;
    const bool asm_tiles = halves == 2;
    const size_t fast_end = asm_tiles ? std::max(t0, std::min(t1, full)) : t0;
    if constexpr (kOutPack == kLanes) {
      if (fast_end > t0) {
        const size_t first = t0 * kTilePixels * kLanes;
        run_blocks(lp, Blocks{w, 0, in + first, out + first, out_cstep, 1, fast_end - t0, 0}, epi);
      }
    } else {
      const float* x = in + t0 * kTilePixels * kLanes;
      for (size_t t = t0; t < fast_end; ++t) {
        store_tile<8, kOutPack>(tile<8>(lp, w, x, bias), rows, out + t * kTilePixels * kOutPx, out_cstep, epi, buf);
      }
    }
    for (size_t t = fast_end; t < t1; ++t) {
      const int n = t < full ? kTilePixels : rest;
      const float* xt = in + t * kTilePixels * kLanes;
      float* o = out + t * kTilePixels * kOutPx;
      if (asm_tiles && n == 4) {
        store_tile<4, kOutPack>(tile<4>(lp, w, xt, bias), rows, o, out_cstep, epi, buf);
      } else if (asm_tiles && n == 1) {
        store_tile<1, kOutPack>(tile<1>(lp, w, xt, bias), rows, o, out_cstep, epi, buf);
      } else {
        if (halves == 2) {
          tile_any_n<2>(n, pl.kb, w, xt, a.xstep, bias, buf);
        } else {
          tile_any_n<1>(n, pl.kb, w, xt, a.xstep, bias, buf);
        }
        store_from(buf, n, rows, kOutPack, o, out_cstep, epi);
      }
    }
  }
}

// Blocks [b0, b1) over tiles [t0, t1). Wide blocks to a pack4 output go to run_blocks
// together; the rest (a narrow last block, a planar output, a last tile of 2, 3, 5, 6
// or 7 pixels) to run_tiles.
template <int kOutPack, class Epi>
__attribute__((always_inline)) inline void run_span(const Args& a, const Plan& pl, const Loop& lp, size_t b0,
                                                    size_t b1, size_t t0, size_t t1, const Epi& epi) {
  const size_t full = pl.full, kb = pl.kb;
  const size_t wide = out_blocks(a.out_c) - (narrow_last(a.out_c) ? 1 : 0);
  const bool asm_rest = pl.rest == 0 || pl.rest == 1 || pl.rest == 4;
  const bool has_rest = t1 > full;
  const size_t fast_blocks = kOutPack == kLanes && b0 < wide ? std::min(b1, wide) - b0 : 0;
  if (fast_blocks > 0) {
    const size_t first = t0 * kTilePixels * kLanes;
    const size_t wstep = block_floats(kb, 2);
    const Blocks bl{a.weights + b0 * wstep, wstep, a.x + first, a.out + b0 * 2 * a.out_cstep + first,
                    a.out_cstep, fast_blocks, std::min(t1, full) - t0, has_rest && asm_rest ? pl.rest : 0};
    run_blocks(lp, bl, epi);
    if (has_rest && !asm_rest) {
      run_tiles<kOutPack>(a, pl, b0, b0 + fast_blocks, full, t1, epi);
    }
  }
  if (b0 + fast_blocks < b1) run_tiles<kOutPack>(a, pl, b0 + fast_blocks, b1, t0, t1, epi);
}

// Work items [i0, i1) of `pl`: item i is block i % nblocks over run i / nblocks, so a
// range is runs of consecutive blocks over the same tiles.
template <int kOutPack, class Epi>
void run_range(const Args& a, const Plan& pl, size_t i0, size_t i1, const Epi& epi) {
  const size_t nblocks = pl.nblocks, run = pl.run_tiles, tiles = pl.tiles;
  const Loop lp(pl.kb, a.xstep);
  for (size_t i = i0; i < i1;) {
    const size_t b0 = i % nblocks, t0 = i / nblocks * run;
    const size_t b1 = std::min(nblocks, b0 + (i1 - i));
    run_span<kOutPack>(a, pl, lp, b0, b1, t0, std::min(tiles, t0 + run), epi);
    i += b1 - b0;
  }
}

// The same items for a half-weight twin: its blocks widened into the thread's room a
// room at a time (half_blocks::for_items), the fp32 tiles reading them there.
template <int kOutPack, class Epi>
void run_range_halves(const Args& a, const Plan& pl, size_t i0, size_t i1, const Epi& epi) {
  constexpr size_t kOutPx = kOutPack == kLanes ? kLanes : 1;
  const size_t stride = block_floats(pl.kb, 2), stored = half_layout(pl.kb, 2).stored_floats();
  const size_t nblocks = pl.nblocks;
  float* room = static_cast<float*>(a.ctx->scratch_of(omp_get_thread_num()));
  const Loop lp(pl.kb, a.xstep);
  half_blocks::for_items(
      nblocks, i0, i1, stride, room,
      [&](size_t b, float* dst) {
        const bool narrow = b + 1 == nblocks && narrow_last(a.out_c);
        half_layout(pl.kb, narrow ? 1 : 2).widen(a.weights + b * stored, dst);
      },
      [&](size_t b0, size_t lo, size_t hi, size_t r) {
        Args w = a;
        w.out_c = a.out_c - static_cast<int>(b0) * kBlockOut;
        w.weights = room;
        w.out = a.out + b0 * (kBlockOut / kOutPx) * a.out_cstep;
        const size_t t0 = r * pl.run_tiles;
        run_span<kOutPack>(w, pl, lp, lo, hi, t0, std::min(pl.tiles, t0 + pl.run_tiles), epi);
      });
}

// Every work item of `pl`, shared among the threads of the enclosing parallel region
// in one contiguous range per thread (an orphaned `omp for`: its end is the team's
// barrier). A: the weights' type (uint16_t: a half-weight twin's).
template <int kOutPack, class A = float, class Epi>
void run_items(const Args& a, const Plan& pl, const Epi& epi) {
  const size_t items = pl.nblocks * pl.runs;
  const int nt = omp_get_num_threads();
#pragma omp for schedule(static)
  for (int c = 0; c < nt; ++c) {
    const size_t i0 = items * c / nt, i1 = items * (c + 1) / nt;
    if constexpr (std::is_same_v<A, float>) {
      run_range<kOutPack>(a, pl, i0, i1, epi);
    } else {
      run_range_halves<kOutPack>(a, pl, i0, i1, epi);
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels::arm::conv_pack4
