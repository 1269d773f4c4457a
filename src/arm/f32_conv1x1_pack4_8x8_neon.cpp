// 1x1 convolution, no padding, one group, on 4-channel blocked (pack4) maps: the
// input's pixel vectors are read in place (stride 1, blocked input) and the 8 x 8
// tile's accumulators are stored as they are (src/arm/f32_conv1x1_pack4_8x8_neon.h).
// A stride-2 or planar input is first copied into the same pack4 layout in the
// shared workspace, a planar input's missing channels (past in_c, up to a whole
// block) as -0.f: times their zero weights that adds -0, which leaves every sum as it
// is (+0 would turn a -0 sum into +0), so the extra FMAs keep the planar kernel's
// bits. A planar output (the last layer before a planar reader) is transposed 4 x 4
// on the way out.
//
// Pixels are the out_h * out_w output positions in row-major order, in 8-pixel tiles
// and one last tile of the 1..7 left. Output channels are in blocks of 8 (two pack4
// blocks), the last one 4 wide when at most 4 remain.
//
// Threads: work items are (output-channel block, run of pixel tiles), blocks inner,
// split in one contiguous range per thread (schedule static): where the weights
// outweigh the input a run is every tile, so that a thread keeps its blocks' weights
// in cache. Every output value comes from one tile computed by one thread in a fixed
// order, so the result does not depend on the thread count.
#include "arm/f32_conv1x1_pack4_8x8_neon.h"

#include <algorithm>
#include <cstdint>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm {
namespace {

using namespace conv1x1_pack4;

constexpr int kLanes = 4;
// Input bytes of a run of tiles (a work item), so that in run-major order a run stays
// in L1 while every weight block passes over it.
constexpr size_t kRunInputBytes = 16384;

size_t in_blocks(const ConvGeometry& g) { return (static_cast<size_t>(g.in_c) + kLanes - 1) / kLanes; }
size_t out_blocks(const ConvGeometry& g) { return (static_cast<size_t>(g.out_c) + kBlockOut - 1) / kBlockOut; }
// The last weight block holds 4 output channels (one half) when at most 4 remain.
bool narrow_last(const ConvGeometry& g) { return g.out_c % kBlockOut != 0 && g.out_c % kBlockOut <= kLanes; }
size_t block_floats(size_t kb, int halves) { return kb * kLanes * kLanes * halves + kBiasFloats / 2 * halves; }

bool copies_input(const ConvGeometry& g) { return g.in_pack == 1 || g.sh != 1 || g.sw != 1; }

bool supports(const ConvGeometry& g) {
  const bool one_by_one = g.kh == 1 && g.kw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
  const bool strides = (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2);
  if (!one_by_one || !strides || g.in_c < 1 || g.out_c < 1 || g.in_h < 1 || g.in_w < 1) return false;
  const bool unpadded = g.pad_top == 0 && g.pad_left == 0 && g.out_h == (g.in_h - 1) / g.sh + 1 &&
                        g.out_w == (g.in_w - 1) / g.sw + 1;
  // Blocked operands only (whole blocks): a blocked input with either output, or a
  // planar input (copied into blocks) writing a blocked output.
  const bool in_ok = (g.in_pack == kLanes && g.in_c % kLanes == 0) || (g.in_pack == 1 && g.out_pack == kLanes);
  const bool out_ok = (g.out_pack == kLanes && g.out_c % kLanes == 0) || g.out_pack == 1;
  return unpadded && in_ok && out_ok;
}

size_t packed_floats(const ConvGeometry& g) {
  const size_t kb = in_blocks(g), full = out_blocks(g) - (narrow_last(g) ? 1 : 0);
  return full * block_floats(kb, 2) + (narrow_last(g) ? block_floats(kb, 1) : 0);
}

// Block b (at b * block_floats(kb, 2)) holds w[c * 4H + o] for output channel 8b + o,
// c over in_c rounded up to whole blocks (zero past in_c and out_c, so that every
// block runs the same tiles), then its bias broadcast to [H][8 pixels][4].
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const size_t k = static_cast<size_t>(g.in_c), kpad = in_blocks(g) * kLanes;
  for (size_t b = 0; b < out_blocks(g); ++b) {
    const int halves = b + 1 == out_blocks(g) && narrow_last(g) ? 1 : 2;
    const int width = kLanes * halves;
    float* dst = packed + b * block_floats(in_blocks(g), 2);
    for (int o = 0; o < width; ++o) {
      const size_t oc = b * kBlockOut + o;
      const bool real = oc < static_cast<size_t>(g.out_c);
      for (size_t c = 0; c < kpad; ++c) dst[c * width + o] = real && c < k ? weight[oc * k + c] : 0.f;
      const float bv = real && bias ? bias[oc] : 0.f;
      float* bdst = dst + kpad * width + (o / kLanes) * kTilePixels * kLanes + o % kLanes;
      for (int p = 0; p < kTilePixels; ++p) bdst[p * kLanes] = bv;
    }
  }
}

size_t workspace_bytes(const ConvGeometry& g) {
  if (!copies_input(g)) return 0;
  return in_blocks(g) * kLanes * static_cast<size_t>(g.out_h) * g.out_w * sizeof(float);
}
size_t no_workspace(const ConvGeometry&) { return 0; }

// --- the input copy (stride 2, planar input) -----------------------------------------

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

// Row oy of channel block j into dst, pixel-major: from a blocked input one vector per
// pixel, from a planar one 4 channels' values (-0.f past in_c) per pixel.
void copy_row(const ConvGeometry& g, const float* in, size_t in_cstep, size_t j, int oy, float* dst) {
  const size_t row = static_cast<size_t>(oy) * g.sh * g.in_w;
  if (g.in_pack == kLanes) {
    const float* src = in + j * in_cstep + row * kLanes;
    for (int ox = 0; ox < g.out_w; ++ox) vst1q_f32(dst + ox * kLanes, vld1q_f32(src + ox * g.sw * kLanes));
    return;
  }
  const float* chan[kLanes];
  const int real = std::min<int>(kLanes, g.in_c - static_cast<int>(j) * kLanes);
  for (int i = 0; i < real; ++i) chan[i] = in + (j * kLanes + i) * in_cstep + row;
  int ox = 0;
  if (real == kLanes && g.sw == 1) {
    // 4 pixels of 4 channels at a time, transposed.
    for (; ox + 4 <= g.out_w; ox += 4) {
      const Quad q = transpose(vld1q_f32(chan[0] + ox), vld1q_f32(chan[1] + ox), vld1q_f32(chan[2] + ox),
                               vld1q_f32(chan[3] + ox));
      float* d = dst + ox * kLanes;
      vst1q_f32(d, q.c0);
      vst1q_f32(d + 4, q.c1);
      vst1q_f32(d + 8, q.c2);
      vst1q_f32(d + 12, q.c3);
    }
  }
  for (; ox < g.out_w; ++ox) {
    for (int i = 0; i < kLanes; ++i) dst[ox * kLanes + i] = i < real ? chan[i][ox * g.sw] : -0.f;
  }
}

// --- work items ----------------------------------------------------------------------

struct Plan {
  size_t kb;         // input channel blocks
  size_t pixels;     // output pixels
  size_t full;       // 8-pixel tiles
  int rest;          // pixels of the last tile (0: none)
  size_t tiles;      // full + (rest > 0)
  size_t nblocks;    // output-channel blocks
  size_t run_tiles;  // tiles per work item
  size_t runs;       // runs of tiles per block

  explicit Plan(const ConvGeometry& g)
      : kb(in_blocks(g)),
        pixels(static_cast<size_t>(g.out_h) * g.out_w),
        full(pixels / kTilePixels),
        rest(static_cast<int>(pixels % kTilePixels)),
        tiles(full + (rest > 0)),
        nblocks(out_blocks(g)) {
    // Stream the larger operand once and re-read the smaller one from cache. Where the
    // weights outweigh the input (deep layers on small maps) an item is a block over
    // every tile, its weights (8 * kb * 16 bytes) staying in L1; else an item is a run
    // of tiles whose input (kb * 128 bytes a tile) stays in L1 while the blocks, in
    // the inner order of the items, pass over it.
    const bool weight_major = nblocks * kBlockOut > pixels;
    run_tiles = weight_major
                    ? tiles
                    : std::clamp<size_t>(kRunInputBytes / (kb * kLanes * kTilePixels * sizeof(float)), 1, tiles);
    runs = (tiles + run_tiles - 1) / run_tiles;
  }
};

struct Args {
  const ConvGeometry* g;
  const float* weights;
  const float* in;  // the input, or its copy
  size_t in_cstep;
  float* out;
  size_t out_cstep;
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
      store8x8_pack4(a, out, hi);
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

// Tiles [t0, t1) of output-channel block b. A block of 8 channels runs the assembly
// tiles (8 pixels, and a last 4 or 1), the activation fused on their registers; a
// last block of 4 channels and other pixel counts run tile_any through a buffer.
template <int kOutPack, class Epi>
__attribute__((noinline)) void run_tiles(const Args& a, const Plan& pl, size_t b, size_t t0, size_t t1,
                                         const Epi& epi) {
  // Locals, not a's and pl's members: the assembly's memory clobber would have GCC
  // load those again for every tile.
  const size_t kb = pl.kb, full = pl.full, in_cstep = a.in_cstep, out_cstep = a.out_cstep;
  const int rest = pl.rest;
  const int rows = static_cast<int>(std::min<size_t>(kBlockOut, a.g->out_c - b * kBlockOut));
  const int halves = rows > kLanes ? 2 : 1;
  const float* w = a.weights + b * block_floats(kb, 2);
  const float* bias = w + kb * kLanes * kLanes * halves;
  const float* in = a.in;
  constexpr size_t kOutPx = kOutPack == kLanes ? kLanes : 1;
  // The block's first output channel (pack4: its first block of 4).
  float* out = a.out + b * (kBlockOut / kOutPx) * out_cstep;
  alignas(16) float buf[2 * kTilePixels * kLanes];
  const bool asm_tiles = halves == 2;
  const size_t fast_end = asm_tiles ? std::min(t1, full) : t0;
  for (size_t t = t0; t < fast_end; ++t) {
    const Acc8x8 acc = tile<8>(kb, w, in + t * kTilePixels * kLanes, in_cstep, bias);
    store_tile<8, kOutPack>(acc, rows, out + t * kTilePixels * kOutPx, out_cstep, epi, buf);
  }
  for (size_t t = fast_end; t < t1; ++t) {
    const int n = t < full ? kTilePixels : rest;
    const float* x = in + t * kTilePixels * kLanes;
    float* o = out + t * kTilePixels * kOutPx;
    if (asm_tiles && n == 4) {
      store_tile<4, kOutPack>(tile<4>(kb, w, x, in_cstep, bias), rows, o, out_cstep, epi, buf);
    } else if (asm_tiles && n == 1) {
      store_tile<1, kOutPack>(tile<1>(kb, w, x, in_cstep, bias), rows, o, out_cstep, epi, buf);
    } else {
      if (halves == 2) {
        tile_any_n<2>(n, kb, w, x, in_cstep, bias, buf);
      } else {
        tile_any_n<1>(n, kb, w, x, in_cstep, bias, buf);
      }
      store_from(buf, n, rows, kOutPack, o, out_cstep, epi);
    }
  }
}

template <int kOutPack, class Epi>
void run_items(const Args& a, const Plan& pl, int num_threads, const Epi& epi, float* copy) {
  const ConvGeometry& g = *a.g;
  const int64_t items = static_cast<int64_t>(pl.nblocks * pl.runs);
  const int64_t copy_rows = copy ? static_cast<int64_t>(pl.kb) * g.out_h : 0;
#pragma omp parallel num_threads(num_threads)
  {
    // The copy's rows (channel block, output row), then the items.
#pragma omp for schedule(static)
    for (int64_t i = 0; i < copy_rows; ++i) {
      const size_t j = static_cast<size_t>(i) / g.out_h;
      const int oy = static_cast<int>(i % g.out_h);
      copy_row(g, a.in, a.in_cstep, j, oy,
               copy + j * pl.pixels * kLanes + static_cast<size_t>(oy) * g.out_w * kLanes);
    }
    Args c = a;
    if (copy) {
      c.in = copy;
      c.in_cstep = pl.pixels * kLanes;
    }
#pragma omp for schedule(static)
    for (int64_t i = 0; i < items; ++i) {
      const size_t b = static_cast<size_t>(i) % pl.nblocks, t0 = static_cast<size_t>(i) / pl.nblocks * pl.run_tiles;
      run_tiles<kOutPack>(c, pl, b, t0, std::min(pl.tiles, t0 + pl.run_tiles), epi);
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const Plan pl(g);
  const Args a{&g, packed, in, in_cstep, out, out_cstep};
  float* copy = copies_input(g) ? static_cast<float*>(ctx.workspace) : nullptr;
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    if (g.out_pack == kLanes) {
      run_items<kLanes>(a, pl, ctx.num_threads, epi, copy);
    } else {
      run_items<1>(a, pl, ctx.num_threads, epi, copy);
    }
  });
}

}  // namespace

const ConvKernel kF32Conv1x1Pack4_Neon = {
    "f32_conv1x1_pack4_8x8_neon", Isa::kNeon, supports, packed_floats, pack, workspace_bytes, no_workspace, 1e-4, run,
    kLanes,
};

}  // namespace kestrel::kernels::arm
