// General convolution on NEON: im2col into per-thread scratch, then the packed 8 x 12
// SGEMM microkernel (f32_gemm_8x12_neon.h) with bias + activation fused into its
// store. Covers every geometry the specialised kernels leave: any kernel size,
// stride, dilation, padding and grouping (the 3-channel stem included).
//
// Layouts
//   packed weights  [group][panel][K][8] (K = in_c/group * kh * kw, kk = (ic*kh+ky)*kw+kx,
//                   8 output channels of the group per panel, missing ones zero),
//                   then the bias as [group][panel][8] (zero-padded, so a panel's 8
//                   bias loads stay in bounds)
//   im2col tile     [K][12]: column j is output pixel p0 + j of the flattened plane;
//                   a block of up to kMaxBlockTiles tiles lies tile after tile.
// A 1x1 stride-1 unpadded convolution is its own im2col matrix (rows = channels,
// ldb = cstep) and skips the copy, except for a last partial tile, which is copied
// (zero-padded) so that no read goes past a channel's values: inputs from
// Mat::external may have no slack after them.
//
// Threading: work items are (group, block of pixel tiles, chunk of output-channel
// panels); each item im2cols its block once and runs every panel of its chunk over
// it. The K reduction is never split, and each output is one fma chain over kk in
// order, so the result is bit-identical for every thread count and partition.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_8x12_neon.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm {
namespace {

using gemm::Act;
using gemm::Epilogue;
using gemm::kMr;
using gemm::kNr;

// im2col floats per thread that a block aims for (128 KiB, about an A72's L2 share
// per core); a block has at least one tile whatever K is.
constexpr size_t kBlockFloats = 32768;
constexpr size_t kMaxBlockTiles = 8;
// Geometries whose single-tile im2col would exceed this many bytes per thread are
// left to the reference (no real network comes near: 512 * 9 channels need 216 KiB).
constexpr size_t kMaxScratchBytes = size_t(64) << 20;

struct Plan {
  int in_per_group, out_per_group, panels;
  size_t k;            // reduction length
  size_t pixels;       // out_h * out_w
  size_t tiles;        // pixel tiles of kNr
  size_t block_tiles;  // most tiles one im2col block holds
  bool direct;         // B is the input itself
};

Plan plan_of(const ConvGeometry& g) {
  Plan p;
  p.in_per_group = g.in_c / g.group;
  p.out_per_group = g.out_c / g.group;
  p.panels = (p.out_per_group + kMr - 1) / kMr;
  p.k = static_cast<size_t>(p.in_per_group) * g.kh * g.kw;
  p.pixels = static_cast<size_t>(g.out_h) * g.out_w;
  p.tiles = (p.pixels + kNr - 1) / kNr;
  p.block_tiles = std::clamp<size_t>(kBlockFloats / (p.k * kNr), 1, kMaxBlockTiles);
  p.direct = g.is_pointwise();
  return p;
}

size_t weight_floats(const Plan& p, int group) { return static_cast<size_t>(group) * p.panels * p.k * kMr; }

bool supports(const ConvGeometry& g) {
  if (g.in_c <= 0 || g.out_c <= 0 || g.in_h <= 0 || g.in_w <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  if (g.kh <= 0 || g.kw <= 0 || g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0) return false;
  if (g.group <= 0 || g.in_c % g.group != 0 || g.out_c % g.group != 0) return false;
  if (g.pad_top < 0 || g.pad_left < 0) return false;
  // The 3x3 depthwise kernel owns these.
  if (g.is_depthwise() && g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && g.sh <= 2 && g.sw <= 2) return false;
  const Plan p = plan_of(g);
  if (p.k > kMaxScratchBytes / (sizeof(float) * kNr)) return false;
  // Bounds group * panels * 8 * K (no overflow: K < 2^21 here); packed Mats hold < 2^31 floats.
  return (static_cast<size_t>(g.out_c) + static_cast<size_t>(kMr) * g.group) * p.k < (size_t(1) << 30);
}

size_t packed_floats(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return weight_floats(p, g.group) + static_cast<size_t>(g.group) * p.panels * kMr;
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const Plan p = plan_of(g);
  float* pb = packed + weight_floats(p, g.group);
  for (int gi = 0; gi < g.group; ++gi) {
    for (int panel = 0; panel < p.panels; ++panel) {
      float* dst = packed + (static_cast<size_t>(gi) * p.panels + panel) * p.k * kMr;
      for (int r = 0; r < kMr; ++r) {
        const int o = panel * kMr + r;
        const bool real = o < p.out_per_group;
        const int oc = gi * p.out_per_group + o;
        const float* src = weight + static_cast<size_t>(oc) * p.k;
        for (size_t kk = 0; kk < p.k; ++kk) dst[kk * kMr + r] = real ? src[kk] : 0.f;
        *pb++ = real && bias ? bias[oc] : 0.f;
      }
    }
  }
}

size_t workspace_bytes(const ConvGeometry&) { return 0; }

size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return (p.direct ? 1 : p.block_tiles) * kNr * p.k * sizeof(float);
}

// Writes the im2col tiles of output pixels [p_begin, p_begin + ncols) of one group
// (its first input channel at in) into dst, [tile][K][kNr], zero-filling padding taps
// and the unused columns of the last tile.
void im2col_block(const ConvGeometry& g, const Plan& pl, const float* in, size_t in_cstep, size_t p_begin,
                  size_t ncols, float* dst) {
  const size_t end = p_begin + ncols;
  for (size_t p = p_begin; p < end;) {
    // A run of columns in one output row and one tile.
    const size_t c = p - p_begin, col = c % kNr;
    const int oy = static_cast<int>(p / g.out_w), ox = static_cast<int>(p % g.out_w);
    const int n = static_cast<int>(std::min({static_cast<size_t>(g.out_w - ox), end - p, kNr - col}));
    float* d = dst + (c / kNr) * pl.k * kNr + col;
    const int iy_base = oy * g.sh - g.pad_top, ix_base = ox * g.sw - g.pad_left;
    for (int ic = 0; ic < pl.in_per_group; ++ic) {
      const float* chan = in + ic * in_cstep;
      for (int ky = 0; ky < g.kh; ++ky) {
        const int iy = iy_base + ky * g.dh;
        if (iy < 0 || iy >= g.in_h) {
          for (int kx = 0; kx < g.kw; ++kx, d += kNr) std::fill(d, d + n, 0.f);
          continue;
        }
        const float* row = chan + static_cast<size_t>(iy) * g.in_w;
        for (int kx = 0; kx < g.kw; ++kx, d += kNr) {
          // Columns j of this run read ix = ix0 + j * sw; [j0, j1) are inside the row.
          const int ix0 = ix_base + kx * g.dw;
          const int j0 = std::min(n, ix0 >= 0 ? 0 : (-ix0 + g.sw - 1) / g.sw);
          const int j1 = std::max(j0, std::min(n, ix0 >= g.in_w ? 0 : (g.in_w - ix0 + g.sw - 1) / g.sw));
          int j = 0;
          for (; j < j0; ++j) d[j] = 0.f;
          if (g.sw == 1) {
            if (j1 > j0) std::memcpy(d + j0, row + ix0 + j0, sizeof(float) * (j1 - j0));
            j = j1;
          } else {
            for (; j < j1; ++j) d[j] = row[ix0 + j * g.sw];
          }
          for (; j < n; ++j) d[j] = 0.f;
        }
      }
    }
    p += n;
  }
  const size_t tail = ncols % kNr;
  if (tail != 0) {
    float* d = dst + (ncols / kNr) * pl.k * kNr;
    for (size_t kk = 0; kk < pl.k; ++kk) std::fill(d + kk * kNr + tail, d + (kk + 1) * kNr, 0.f);
  }
}

// The partial last tile of a directly read input, copied into [K][kNr] with zero
// columns after its n pixels.
void copy_tail(const float* in, size_t in_cstep, size_t k, int n, float* dst) {
  for (size_t kk = 0; kk < k; ++kk, dst += kNr) {
    std::memcpy(dst, in + kk * in_cstep, sizeof(float) * n);
    std::fill(dst + n, dst + kNr, 0.f);
  }
}

// The microkernel's store: bias + activation, rows < mr and columns < nr only.
template <Act kAct>
struct ConvStore {
  const Epilogue<kAct>& epi;
  const float* bias;
  float* out;
  size_t ldc;
  int mr, nr;

  __attribute__((always_inline)) void operator()(int r, const gemm::Row& v) const {
    if (r >= mr) return;
    const float32x4_t b = vdupq_n_f32(bias[r]);
    const float32x4_t y0 = epi(vaddq_f32(v.c0, b)), y1 = epi(vaddq_f32(v.c1, b)), y2 = epi(vaddq_f32(v.c2, b));
    float* p = out + static_cast<size_t>(r) * ldc;
    if (nr == kNr) {
      vst1q_f32(p, y0);
      vst1q_f32(p + 4, y1);
      vst1q_f32(p + 8, y2);
    } else {
      float tmp[kNr];
      vst1q_f32(tmp, y0);
      vst1q_f32(tmp + 4, y1);
      vst1q_f32(tmp + 8, y2);
      std::memcpy(p, tmp, sizeof(float) * nr);
    }
    epi.finish(p, nr);
  }
};

template <Act kAct>
void run_impl(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epilogue<kAct>& epi) {
  const Plan pl = plan_of(g);
  const int threads = std::max(1, ctx.num_threads);
  // Smaller blocks when there are few tiles, so that every thread gets one; then
  // split the panels if groups x blocks still leave threads idle.
  const size_t block_tiles = std::clamp<size_t>((pl.tiles + threads - 1) / threads, 1, pl.block_tiles);
  const size_t blocks = (pl.tiles + block_tiles - 1) / block_tiles;
  const size_t base_items = static_cast<size_t>(g.group) * blocks;
  size_t chunks = std::min<size_t>(pl.panels, (threads + base_items - 1) / base_items);
  const size_t chunk_panels = (pl.panels + chunks - 1) / chunks;
  chunks = (pl.panels + chunk_panels - 1) / chunk_panels;
  const long items = static_cast<long>(base_items * chunks);
  const float* bias_all = packed + weight_floats(pl, g.group);

#pragma omp parallel for num_threads(threads) schedule(static)
  for (long item = 0; item < items; ++item) {
    const size_t chunk = item % chunks, rest = item / chunks;
    const size_t blk = rest % blocks;
    const int gi = static_cast<int>(rest / blocks);
    const size_t tile0 = blk * block_tiles, ntiles = std::min(block_tiles, pl.tiles - tile0);
    const size_t p0 = tile0 * kNr, ncols = std::min(ntiles * kNr, pl.pixels - p0);
    const float* in_g = in + static_cast<size_t>(gi) * pl.in_per_group * in_cstep;
    float* cols = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    const bool direct_tail = pl.direct && ncols % kNr != 0;
    if (!pl.direct) im2col_block(g, pl, in_g, in_cstep, p0, ncols, cols);
    if (direct_tail) copy_tail(in_g + p0 + ncols / kNr * kNr, in_cstep, pl.k, static_cast<int>(ncols % kNr), cols);
    const int panel_end = static_cast<int>(std::min<size_t>(pl.panels, (chunk + 1) * chunk_panels));
    for (int panel = static_cast<int>(chunk * chunk_panels); panel < panel_end; ++panel) {
      const size_t gp = static_cast<size_t>(gi) * pl.panels + panel;
      const float* a = packed + gp * pl.k * kMr;
      const int mr = std::min(kMr, pl.out_per_group - panel * kMr);
      float* out_p = out + (static_cast<size_t>(gi) * pl.out_per_group + panel * kMr) * out_cstep;
      for (size_t t = 0; t < ntiles; ++t) {
        const size_t pt = p0 + t * kNr;
        const int nr = static_cast<int>(std::min<size_t>(kNr, pl.pixels - pt));
        const bool from_input = pl.direct && nr == kNr;
        const float* b = from_input ? in_g + pt : pl.direct ? cols : cols + t * pl.k * kNr;
        const size_t ldb = from_input ? in_cstep : kNr;
        gemm::f32_gemm_8x12_neon(pl.k, a, b, ldb,
                                 ConvStore<kAct>{epi, bias_all + gp * kMr, out_p + pt, out_cstep, mr, nr});
      }
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue(g.act, [&](const auto& epi) { run_impl(g, packed, in, in_cstep, out, out_cstep, ctx, epi); });
}

}  // namespace

const ConvKernel kF32ConvSgemm_Neon = {
    "f32_conv_sgemm_8x12_neon", Isa::kNeon, supports, packed_floats, pack, workspace_bytes,
    workspace_per_thread_bytes, 1e-4, run,
};

}  // namespace kestrel::kernels::arm
