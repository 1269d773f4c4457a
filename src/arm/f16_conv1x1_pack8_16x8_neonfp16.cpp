// 1x1 convolution (one group, no padding, stride 1 or 2) in fp16 arithmetic (ARMv8.2
// FEAT_FP16) from 8-channel blocked maps of halves (ncnn's pack8 fp16 maps) to pack8
// halves, or to planar halves for any channel count (the Net keeps maps whose channels
// 8 does not divide planar: SSD's 63- and 126-channel heads).
//
// Tile: 16 output channels x 8 pixels = 16 accumulators of 8 halves. Per input block of
// 8 channels: 8 pixel vectors (each holds the block's 8 channels of one pixel) and 16
// weight vectors (8 output channels at one input channel each), then 128 FMLA by
// element: acc[o][p] += w[o][k] * x[p].h[k]. Loads per FMA: 24 vectors for 128 FMAs, 26
// of 32 registers. A last block of 8 output channels and a last tile of fewer pixels run
// the same code with fewer accumulators (templates, no branches in the loop).
//
// Planar output: the panels are padded with zero weights to whole 8-channel blocks, the
// tiles compute as for pack8, and only the store differs: each block's 8 pixel vectors
// are transposed into 8 channel rows, of which the real channels' pixels are written.
//
// Each output starts from its bias and adds one fused multiply-add per input channel
// in order, in fp16 (as ncnn's fp16 kernels accumulate): conv_reference_f16's order, so
// the results equal it bit for bit. A stride of 2 only changes where a pixel's vector is
// read from.
//
// Compiled with -march=armv8.2-a+fp16 (CMakeLists.txt: *_neonfp16.cpp); the registry
// lists it as an f16 kernel, run only where the CPU has fp16 arithmetic.
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "arm/arm_kernels.h"
#include "arm/f16_conv_pack8_epilogue.h"
#include "core/parallel.h"
#include "layers/activation.h"

namespace kestrel::kernels::arm {
namespace {

using namespace conv1x1_pack8_f16;

constexpr int kPanel = 16;  // output channels per tile
constexpr int kPixels = 8;  // pixels per tile

bool supports(const ConvGeometry& g) {
  const bool one_by_one = g.kh == 1 && g.kw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
  const bool strides = (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2);
  const bool unpadded = g.pad_top == 0 && g.pad_left == 0 && g.out_h == (g.in_h - 1) / g.sh + 1 &&
                        g.out_w == (g.in_w - 1) / g.sw + 1;
  const bool act = fuses(g.act);  // every activation type (the rarer ones through a table)
  const bool out = (g.out_pack == kLanes && g.out_c % kLanes == 0) || (g.out_pack == 1 && g.out_c >= 1);
  return g.f16 && one_by_one && strides && unpadded && act && g.in_pack == kLanes && out && g.in_c % kLanes == 0 &&
         g.in_h >= 1 && g.in_w >= 1;
}

// A panel's channels from oc0 padded to whole blocks: 16, or 8 for a last panel of at
// most 8 channels.
int padded_rows(const ConvGeometry& g, int oc0) {
  return (std::min(kPanel, g.out_c - oc0) + kLanes - 1) / kLanes * kLanes;
}

// Halves of one panel: its bias, then per input channel the panel's weights, `rows` of
// each (zero past the real channels).
size_t panel_halves(int rows, int k) { return static_cast<size_t>(rows) * (1 + static_cast<size_t>(k)); }

size_t packed_halves(const ConvGeometry& g) {
  const int full = g.out_c / kPanel, rest = g.out_c % kPanel;
  return full * panel_halves(kPanel, g.in_c) + (rest ? panel_halves(padded_rows(g, full * kPanel), g.in_c) : 0);
}

size_t packed_floats(const ConvGeometry& g) { return (packed_halves(g) + 1) / 2; }

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  build_epilogue(g.act);
  half* p = reinterpret_cast<half*>(packed);
  for (int oc0 = 0; oc0 < g.out_c; oc0 += kPanel) {
    const int real = std::min(kPanel, g.out_c - oc0), rows = padded_rows(g, oc0);
    for (int r = 0; r < rows; ++r) *p++ = static_cast<half>(bias && r < real ? bias[oc0 + r] : 0.f);
    for (int k = 0; k < g.in_c; ++k) {
      for (int r = 0; r < rows; ++r) {
        *p++ = static_cast<half>(r < real ? weight[static_cast<size_t>(oc0 + r) * g.in_c + k] : 0.f);
      }
    }
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// `out` (ToPack8 or ToPlanar over the whole output) placed at each tile.
// The tiles of one panel from tile t0 on, `count` of them.
template <class Out>
void run_panel(const ConvGeometry& g, const half* x, size_t xstep, const half* w, int oc0, int t0, int count,
               const Out& out) {
  const int kb = g.in_c / kLanes;
  const int pixels = g.out_h * g.out_w;
  const int real = std::min(kPanel, g.out_c - oc0);
  // Stride 1: a tile's pixels are consecutive vectors, whatever rows they span.
  const bool contiguous = g.sh == 1 && g.sw == 1;
  for (int t = t0; t < t0 + count; ++t) {
    const int p0 = t * kPixels, np = std::min(kPixels, pixels - p0);
    const Out yt = out.at(oc0, p0, real);
    if (np == kPixels && contiguous) {
      if (real > kLanes) {
        tile_16x8(x + static_cast<size_t>(p0) * kLanes, xstep, kb, w, yt);
      } else {
        tile_8x8(x + static_cast<size_t>(p0) * kLanes, xstep, kb, w, yt);
      }
      continue;
    }
    const half* xp[kPixels];
    int oy = p0 / g.out_w, ox = p0 % g.out_w;
    for (int p = 0; p < np; ++p) {
      xp[p] = x + (static_cast<size_t>(oy) * g.sh * g.in_w + static_cast<size_t>(ox) * g.sw) * kLanes;
      if (++ox == g.out_w) ox = 0, ++oy;
    }
    const auto counts = std::make_integer_sequence<int, kPixels>();
    if (real > kLanes) {  // a panel of 16 (the last one padded)
      tile_any<2>(np, xp, xstep, kb, w, yt, counts);
    } else {
      tile_any<1>(np, xp, xstep, kb, w, yt, counts);
    }
  }
}

// `out` (ToPack8 or ToPlanar over the whole output) placed at each tile. A work item is
// a run of up to kRun tiles of one panel: with few input channels (MoveNet's 16 and 24)
// a tile's FMLAs are few, and a call per tile (its closure, divisions and saved
// registers) cost a quarter of the layer's instructions.
template <class Out>
void run_tiles(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, int num_threads,
               const Out& out) {
  constexpr int kRun = 4;
  const half* x = reinterpret_cast<const half*>(in);
  const size_t xstep = in_cstep * 2;  // cstep counts 4-byte units
  const int pixels = g.out_h * g.out_w;
  const int tiles = (pixels + kPixels - 1) / kPixels;
  const int runs = (tiles + kRun - 1) / kRun;
  const int panels = (g.out_c + kPanel - 1) / kPanel;
  const half* w0 = reinterpret_cast<const half*>(packed);
  parallel_for(num_threads, static_cast<int64_t>(panels) * runs, [&](int64_t item) {
    const int panel = static_cast<int>(item / runs), t0 = static_cast<int>(item % runs) * kRun;
    const half* w = w0 + static_cast<size_t>(panel) * panel_halves(kPanel, g.in_c);
    run_panel(g, x, xstep, w, panel * kPanel, t0, std::min(kRun, tiles - t0), out);
  });
}

template <class Epi>
void run_with(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, int num_threads, const Epi& epi) {
  half* y = reinterpret_cast<half*>(out);
  const size_t ystep = out_cstep * 2;
  if (g.out_pack == kLanes) {
    run_tiles(g, packed, in, in_cstep, num_threads, ToPack8<Epi>{y, ystep, epi});
  } else {
    run_tiles(g, packed, in, in_cstep, num_threads, ToPlanar<Epi>{y, ystep, 0, epi});
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  with_epilogue(g.act, [&](const auto& epi) { run_with(g, packed, in, in_cstep, out, out_cstep, ctx.num_threads, epi); });
}

}  // namespace

const ConvKernel kF16Conv1x1Pack8_Neon = {
    "f16_conv1x1_pack8_16x8_neonfp16", Isa::kNeon, supports, packed_floats, pack, no_workspace, no_workspace, 0.0, run,
    kLanes, /*f16=*/true,
};

}  // namespace kestrel::kernels::arm
