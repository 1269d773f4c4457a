// General dense convolution in fp16 arithmetic (ARMv8.2 FEAT_FP16) on 8-channel blocked
// maps of halves, in and out: any window (1x1 with padding or dilation included), stride,
// dilation and padding, one group, in_c and out_c multiples of 8. One GEMM over an
// im2col matrix, run by the 16 x 8 tiles of the fp16 1x1 kernel
// (f16_conv1x1_pack8_16x8_neonfp16.h) over K = in_c * kh * kw. MobileNet-SSD's extra
// layers (3x3 stride 2) and any kxk layer of a network run in fp16 take it.
//
// K order. conv_reference_f16 adds, from the bias, input channel by input channel, then
// kernel row, then column: k = (ic * kh + ky) * kw + kx (the weights' own order), and
// the results must be its bits. The 1x1 tile takes 8 consecutive K values from the lanes
// of one pixel vector (FMLA by element), but a pack8 map holds 8 channels of ONE tap in
// a vector: consecutive k are different taps of one channel. Two ways out:
// - keep the map's vectors and FMLA by element in K order (lane l for each tap, then
//   lane l + 1): the tile's 8 pixel registers would then hold 8 pixels x kh*kw taps,
//   far more than v0-v15, so every FMLA row reloads its pixel vectors, ~10 loads per 16
//   FMLA instead of 24 per 128, on every output channel panel;
// - transpose while gathering (this file): the im2col holds, per pixel, vectors of 8
//   consecutive k, and the tile runs unchanged. The transpose costs per K value and
//   pixel, once, whatever out_c: two 8x8 transposes (8 loads, 24 TRN, 8 stores each) per
//   64 values, 1.5 instructions a value with the addressing, against out_c / 8 FMLA a
//   value in the GEMM. MobileNet-SSD's conv14_2 (256 -> 512, 3x3 stride 2, 5x5 output):
//   4.29 M guest instructions (fp32 pack4 im2col: 8.09 M), the gather 0.11 M of them,
//   the zero-bordered copy 0.02 M, the FMLA 3.56 M (qemu cortex-a76, 1 thread).
// Stage 1 of a tile and input block: for each tap, the 8 pixels' channel vectors,
// transposed into one vector of 8 pixels per channel, stored at slot k - 8 j kh kw;
// stage 2: every 8 consecutive slots (8 k values x 8 pixels) transposed in place into
// the tile's 8 pixel vectors of those k values.
//
// Padding: a map that the windows overhang is first copied into a zero-bordered frame,
// so the gather has no bounds. Its zeros are multiplied where the reference skips the
// tap: w * 0 + acc equals acc except that -0 + +0 gives +0, so a zero result may differ
// from the reference's in sign (and an infinite weight would meet a 0; weights are
// finite). Everything else is bit for bit.
//
// Workspace (shared): [zero-bordered copy, if any][im2col of one chunk of 8-pixel tiles,
// at most about kChunkBytes]: the threads gather a chunk's tiles, then share its
// (output panel, tile) items. Every output is one tile call over the whole of K: the
// results do not depend on the thread count.
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

constexpr int kPanel = 16;                           // output channels per tile
constexpr int kPixels = 8;                           // pixels per tile
constexpr size_t kBlockHalves = kPixels * kLanes;    // one K block of a tile: 8 pixel vectors
constexpr size_t kChunkBytes = size_t(1) << 20;      // im2col of a chunk: within a big core's L2
constexpr int64_t kMaxHalves = int64_t(1) << 30;     // bound on every buffer (no int overflow)

size_t taps(const ConvGeometry& g) { return static_cast<size_t>(g.kh) * g.kw; }
size_t k_total(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) * taps(g); }
size_t pixels(const ConvGeometry& g) { return static_cast<size_t>(g.out_h) * g.out_w; }
size_t tiles(const ConvGeometry& g) { return (pixels(g) + kPixels - 1) / kPixels; }
size_t tile_halves(const ConvGeometry& g) { return k_total(g) * kPixels; }

// The map the gather reads: the input in place where every window lies inside it, else a
// zero-bordered copy of the rows and columns the windows reach.
struct Frame {
  int h, w;
  bool copy;
};

Frame frame(const ConvGeometry& g) {
  const int h = (g.out_h - 1) * g.sh + (g.kh - 1) * g.dh + 1, w = (g.out_w - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const bool copy = g.pad_top > 0 || g.pad_left > 0 || h > g.in_h || w > g.in_w;
  return copy ? Frame{h, w, true} : Frame{g.in_h, g.in_w, false};
}

// Halves between the copy's blocks (whole 64-byte lines).
size_t copy_step(const Frame& f) { return (static_cast<size_t>(f.h) * f.w * kLanes + 31) / 32 * 32; }
size_t copy_halves(const ConvGeometry& g) {
  const Frame f = frame(g);
  return f.copy ? copy_step(f) * (g.in_c / kLanes) : 0;
}

size_t chunk_tiles(const ConvGeometry& g) {
  return std::min(tiles(g), std::max<size_t>(kChunkBytes / (tile_halves(g) * sizeof(half)), 1));
}

bool shape_ok(const ConvGeometry& g) {
  if (g.group != 1 || g.in_c < kLanes || g.in_c % kLanes != 0 || g.out_c < kLanes || g.out_c % kLanes != 0) {
    return false;
  }
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.pad_top < 0 || g.pad_left < 0) {
    return false;
  }
  if (g.in_h < 1 || g.in_w < 1 || g.out_h < 1 || g.out_w < 1) return false;
  // The frame, K, the packed weights and one tile stay below 2^30 halves, each product
  // checked before it is multiplied again (no int64 overflow on any int geometry).
  const int64_t fh = int64_t(g.out_h - 1) * g.sh + int64_t(g.kh - 1) * g.dh + 1;
  const int64_t fw = int64_t(g.out_w - 1) * g.sw + int64_t(g.kw - 1) * g.dw + 1;
  const int64_t nt = int64_t(g.kh) * g.kw;
  if (fh >= kMaxHalves || fw >= kMaxHalves || fh * fw >= kMaxHalves || fh * fw * g.in_c >= kMaxHalves) return false;
  if (nt >= kMaxHalves || nt * g.in_c >= kMaxHalves / kPixels) return false;
  return (int64_t(g.out_c) + kPanel) * (nt * g.in_c + 1) < kMaxHalves && int64_t(g.out_h) * g.out_w < kMaxHalves;
}

bool supports(const ConvGeometry& g) {
  const bool act = fuses(g.act);  // every activation type (the rarer ones through a table)
  return g.f16 && act && g.in_pack == kLanes && g.out_pack == kLanes && shape_ok(g);
}

// The 1x1 kernel's panels over K in the weights' own order: per panel its bias (16 halves,
// 8 for a last panel of 8 channels), then per k its 16 (8) weights.
size_t panel_halves(int rows, size_t k) { return static_cast<size_t>(rows) * (1 + k); }

size_t packed_floats(const ConvGeometry& g) {
  const int full = g.out_c / kPanel, rest = g.out_c % kPanel;
  return (full * panel_halves(kPanel, k_total(g)) + (rest ? panel_halves(rest, k_total(g)) : 0) + 1) / 2;
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  build_epilogue(g.act);
  half* p = reinterpret_cast<half*>(packed);
  const size_t k = k_total(g);
  for (int oc0 = 0; oc0 < g.out_c; oc0 += kPanel) {
    const int rows = std::min(kPanel, g.out_c - oc0);
    for (int r = 0; r < rows; ++r) *p++ = static_cast<half>(bias ? bias[oc0 + r] : 0.f);
    for (size_t i = 0; i < k; ++i) {
      for (int r = 0; r < rows; ++r) *p++ = static_cast<half>(weight[static_cast<size_t>(oc0 + r) * k + i]);
    }
  }
}

size_t workspace_bytes(const ConvGeometry& g) {
  return (copy_halves(g) + chunk_tiles(g) * tile_halves(g)) * sizeof(half);
}
size_t no_workspace(const ConvGeometry&) { return 0; }

// Row r of block j of the zero-bordered frame.
void copy_row(const ConvGeometry& g, const Frame& f, const half* in, size_t in_step, int j, int r, half* copy) {
  half* dst = copy + j * copy_step(f) + static_cast<size_t>(r) * f.w * kLanes;
  const int iy = r - g.pad_top;
  const int x0 = std::min(g.pad_left, f.w), x1 = std::min(g.pad_left + g.in_w, f.w);
  if (iy < 0 || iy >= g.in_h || x1 <= x0) {
    std::memset(dst, 0, static_cast<size_t>(f.w) * kLanes * sizeof(half));
    return;
  }
  std::memset(dst, 0, static_cast<size_t>(x0) * kLanes * sizeof(half));
  std::memcpy(dst + x0 * kLanes, in + j * in_step + static_cast<size_t>(iy) * g.in_w * kLanes,
              static_cast<size_t>(x1 - x0) * kLanes * sizeof(half));
  std::memset(dst + x1 * kLanes, 0, static_cast<size_t>(f.w - x1) * kLanes * sizeof(half));
}

// The im2col of one tile: K blocks of 8 pixel vectors, vector p of block b holding pixel
// p's values for k = 8b .. 8b + 7. Pixels [p0, p0 + np) of the output; the lanes of a
// short tile repeat its last pixel. `src`: the frame (fw pixel vectors a row, blocks
// `step` halves apart).
void im2col_tile(const ConvGeometry& g, const half* src, size_t step, int fw, size_t p0, int np, half* dst) {
  size_t at[kPixels];
  for (int p = 0; p < kPixels; ++p) {
    const size_t q = p0 + std::min(p, np - 1), oy = q / g.out_w, ox = q % g.out_w;
    at[p] = (oy * g.sh * fw + ox * g.sw) * kLanes;
  }
  const size_t nt = taps(g);
  for (int j = 0; j < g.in_c / kLanes; ++j, src += step, dst += nt * kBlockHalves) {
    // Stage 1: slot c * taps + t (k - 8 j taps) gets channel 8 j + c of the 8 pixels at tap t.
    size_t t = 0;
    for (int ky = 0; ky < g.kh; ++ky) {
      for (int kx = 0; kx < g.kw; ++kx, ++t) {
        const half* s = src + (static_cast<size_t>(ky) * g.dh * fw + static_cast<size_t>(kx) * g.dw) * kLanes;
        float16x8_t r[kPixels];
        for (int p = 0; p < kPixels; ++p) r[p] = vld1q_f16(s + at[p]);
        transpose8x8(r);
        for (int c = 0; c < kLanes; ++c) vst1q_f16(dst + (c * nt + t) * kLanes, r[c]);
      }
    }
    // Stage 2: 8 slots (8 consecutive k x 8 pixels) -> 8 pixel vectors of those k.
    for (size_t b = 0; b < nt; ++b) {
      half* blk = dst + b * kBlockHalves;
      float16x8_t r[kPixels];
      for (int i = 0; i < kPixels; ++i) r[i] = vld1q_f16(blk + i * kLanes);
      transpose8x8(r);
      for (int i = 0; i < kPixels; ++i) vst1q_f16(blk + i * kLanes, r[i]);
    }
  }
}

template <class Epi>
void run_with(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  const half* x = reinterpret_cast<const half*>(in);
  const ToPack8<Epi> to{reinterpret_cast<half*>(out), out_cstep * 2, epi};  // cstep counts 4-byte units
  const Frame f = frame(g);
  half* copy = static_cast<half*>(ctx.workspace);
  half* cols = copy + copy_halves(g);
  const half* src = f.copy ? copy : x;
  const size_t src_step = f.copy ? copy_step(f) : in_cstep * 2;
  const int64_t copy_rows = f.copy ? int64_t(g.in_c / kLanes) * f.h : 0;
  const size_t total = pixels(g), ntiles = tiles(g), chunk = chunk_tiles(g), th = tile_halves(g);
  const int kb = static_cast<int>(k_total(g) / kLanes);
  const int64_t panels = (g.out_c + kPanel - 1) / kPanel;
  const half* w0 = reinterpret_cast<const half*>(packed);
  parallel_region(ctx.num_threads, [&] {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < copy_rows; ++i) {
      copy_row(g, f, x, in_cstep * 2, static_cast<int>(i / f.h), static_cast<int>(i % f.h), copy);
    }
    // Every thread walks the same chunks: each loop's end is the team's barrier.
    for (size_t t0 = 0; t0 < ntiles; t0 += chunk) {
      const int64_t nt = static_cast<int64_t>(std::min(chunk, ntiles - t0));
#pragma omp for schedule(static)
      for (int64_t t = 0; t < nt; ++t) {
        const size_t p0 = (t0 + t) * kPixels;
        const int np = static_cast<int>(std::min<size_t>(kPixels, total - p0));
        im2col_tile(g, src, src_step, f.w, p0, np, cols + t * th);
      }
      // Panel-major: a thread's run of items reuses one panel's weights.
#pragma omp for schedule(static)
      for (int64_t item = 0; item < panels * nt; ++item) {
        const int64_t panel = item / nt, t = item % nt;
        const int oc0 = static_cast<int>(panel) * kPanel, rows = std::min(kPanel, g.out_c - oc0);
        const half* w = w0 + panel * panel_halves(kPanel, k_total(g));
        const size_t p0 = (t0 + t) * kPixels;
        const int np = static_cast<int>(std::min<size_t>(kPixels, total - p0));
        const half* xt = cols + t * th;
        const ToPack8<Epi> yt = to.at(oc0, static_cast<int>(p0), rows);
        if (rows == kPanel && np == kPixels) {
          tile_16x8(xt, kBlockHalves, kb, w, yt);
          continue;
        }
        const half* xp[kPixels];
        for (int p = 0; p < kPixels; ++p) xp[p] = xt + p * kLanes;
        const auto counts = std::make_integer_sequence<int, kPixels>();
        if (rows == kPanel) {
          tile_any<2>(np, xp, kBlockHalves, kb, w, yt, counts);
        } else {
          tile_any<1>(np, xp, kBlockHalves, kb, w, yt, counts);
        }
      }
    }
  });
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  with_epilogue(g.act, [&](const auto& epi) { run_with(g, packed, in, in_cstep, out, out_cstep, ctx, epi); });
}

}  // namespace

const ConvKernel kF16ConvIm2colPack8_Neon = {
    "f16_conv_im2col_pack8_neonfp16", Isa::kNeon, supports, packed_floats, pack, workspace_bytes, no_workspace, 0.0,
    run, kLanes, /*f16=*/true,
};

}  // namespace kestrel::kernels::arm
