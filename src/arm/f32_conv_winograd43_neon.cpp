// Dense 3x3 stride-1 convolution on NEON by Winograd F(4x4, 3x3): 36 multiplies per
// 4x4 output tile and channel pair instead of 144 (transforms in
// f32_winograd43_transforms_neon.h). Per block of 12 tiles a thread transforms the
// input tiles of every channel into V[xi][ic][12], runs the 36 products
// M[xi] = U[xi] * V[xi] with the 8 x 12 SGEMM microkernel (one GEMM column per tile),
// and transforms M back, bias + activation fused into the output store.
//
// Layouts
//   packed weights  U[xi][panel][ic][8] = (G g G^T)[xi] of output channel panel*8 + r,
//                   computed in double at Net load, missing channels zero; then the
//                   bias, out_c rounded up to panels * 8 (zero-padded)
//   per-thread      V: 36 * in_c * 12 floats, then M: 36 * 8 * 12 floats
// Tiles are numbered in raster order over ceil(out_h/4) x ceil(out_w/4); four
// consecutive tiles share a vector (lane u = tile u). Four tiles in one tile row whose
// 6 x 20 input window lies inside the map are read with vld4 straight from the input;
// the others are gathered with zero padding. No read passes a channel's last value.
//
// Threading: work items are (block of 12 tiles, chunk of output-channel panels); the
// in_c reduction of every product is one fma chain in a fixed order, so the result is
// bit-identical for every thread count and partition.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_8x12_neon.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/f32_winograd43_transforms_neon.h"
#include "kernels/winograd43_weights.h"

namespace kestrel::kernels::arm {
namespace {

using gemm::Act;
using gemm::Epilogue;
using gemm::kMr;
using gemm::kNr;
using wino43::kAlpha;
using wino43::kOut;
using wino43::kXi;

constexpr int kBlockTiles = kNr;  // one GEMM column per tile
constexpr int kGroups = kBlockTiles / 4;
constexpr int kMaxInChannels = 4096;  // bounds V (7 MiB per thread at the limit)

struct Plan {
  int panels, tiles_w;
  size_t tiles, blocks;
};

Plan plan_of(const ConvGeometry& g) {
  Plan p;
  p.panels = (g.out_c + kMr - 1) / kMr;
  p.tiles_w = (g.out_w + kOut - 1) / kOut;
  p.tiles = static_cast<size_t>((g.out_h + kOut - 1) / kOut) * p.tiles_w;
  p.blocks = (p.tiles + kBlockTiles - 1) / kBlockTiles;
  return p;
}

size_t weight_floats(const ConvGeometry& g, const Plan& p) { return size_t(kXi) * p.panels * kMr * g.in_c; }

// Rough instruction counts per input channel and 8-channel panel, from the loops
// below: SGEMM does 9 k-steps of 24 fmla + 5 loads per 12 pixels plus ~20 per im2col
// row (shared by the panels); Winograd does 36 such steps per 12 tiles, ~576 for the
// input transform of 12 tiles (shared by the panels) and ~3840 for the output
// transform of a panel's 12 tiles (shared by the input channels). Winograd wins from
// about 8x8 outputs on: below that a 12-tile block is mostly empty columns.
bool winograd_pays(const ConvGeometry& g, const Plan& p) {
  const double panels = p.panels;
  const double sgemm_tiles = std::ceil(static_cast<double>(g.out_h) * g.out_w / kNr);
  const double sgemm = sgemm_tiles * (9 * 29 + 9 * 20 / panels);
  const double wino = static_cast<double>(p.blocks) * (kXi * 29 + 576 / panels + 3840.0 / g.in_c);
  return wino < sgemm;
}

bool supports(const ConvGeometry& g) {
  if (g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1 || g.group != 1) return false;
  // Fewer channels leave the transforms unamortized.
  if (g.in_c < 8 || g.out_c < 8 || g.in_c > kMaxInChannels || g.out_c > (1 << 16)) return false;
  if (g.in_h <= 0 || g.in_w <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  const int pad_bottom = g.out_h + 2 - g.in_h - g.pad_top, pad_right = g.out_w + 2 - g.in_w - g.pad_left;
  for (int pad : {g.pad_top, g.pad_left, pad_bottom, pad_right}) {
    if (pad < 0 || pad > 2) return false;
  }
  return winograd_pays(g, plan_of(g));
}

size_t packed_floats(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return weight_floats(g, p) + static_cast<size_t>(p.panels) * kMr;
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const Plan p = plan_of(g);
  std::fill(packed, packed + packed_floats(g), 0.f);
  float u[kXi];
  for (int oc = 0; oc < g.out_c; ++oc) {
    for (int ic = 0; ic < g.in_c; ++ic) {
      winograd43_weight_transform(weight + (static_cast<size_t>(oc) * g.in_c + ic) * 9, u);
      for (size_t xi = 0; xi < size_t(kXi); ++xi) {
        packed[((xi * p.panels + oc / kMr) * g.in_c + ic) * kMr + oc % kMr] = u[xi];
      }
    }
  }
  if (bias) std::copy(bias, bias + g.out_c, packed + weight_floats(g, p));
}

size_t workspace_bytes(const ConvGeometry&) { return 0; }

size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  return (size_t(kXi) * g.in_c * kNr + size_t(kXi) * kMr * kNr) * sizeof(float);
}

// Four consecutive tiles of a block: their positions and which fast paths apply.
struct TileGroup {
  int count = 0;        // real tiles (lanes past it are zero input, never stored)
  int ty[4] = {}, tx[4] = {};  // tile row and column
  bool one_row = false;  // 4 tiles side by side in one tile row
  bool inside = false;   // ... and the 6 x 20 window their loads read lies inside the map
};

TileGroup tile_group(const ConvGeometry& g, const Plan& p, size_t first, size_t end) {
  TileGroup t;
  for (size_t i = first; i < std::min(first + 4, end); ++i, ++t.count) {
    t.ty[t.count] = static_cast<int>(i / p.tiles_w);
    t.tx[t.count] = static_cast<int>(i % p.tiles_w);
  }
  t.one_row = t.count == 4 && t.ty[0] == t.ty[3];
  const int iy = t.ty[0] * kOut - g.pad_top, ix = t.tx[0] * kOut - g.pad_left;
  // vld4 reads 20 columns (18 used); all of them inside the row, so that no read
  // passes a channel's last value (inputs from Mat::external may have no slack).
  t.inside = t.one_row && iy >= 0 && iy + kAlpha <= g.in_h && ix >= 0 && ix + 20 <= g.in_w;
  return t;
}

// Row r of four side-by-side tiles, straight from the input: column c of tile u is
// p[r * stride + 4u + c], so two de-interleaving loads give all six columns.
struct StridedLoad {
  const float* p;
  size_t stride;
  __attribute__((always_inline)) void operator()(int r, float32x4_t d[kAlpha]) const {
    const float* q = p + r * stride;
    const float32x4x4_t lo = vld4q_f32(q), hi = vld4q_f32(q + 4);
    d[0] = lo.val[0];
    d[1] = lo.val[1];
    d[2] = lo.val[2];
    d[3] = lo.val[3];
    d[4] = hi.val[0];
    d[5] = hi.val[1];
  }
};

// Row r of tiles gathered into buf[(r * 6 + c) * 4 + u].
struct GatherLoad {
  const float* buf;
  __attribute__((always_inline)) void operator()(int r, float32x4_t d[kAlpha]) const {
    for (int c = 0; c < kAlpha; ++c) d[c] = vld1q_f32(buf + (r * kAlpha + c) * 4);
  }
};

void gather(const ConvGeometry& g, const TileGroup& t, const float* chan, float* buf) {
  std::fill(buf, buf + kXi * 4, 0.f);
  for (int u = 0; u < t.count; ++u) {
    const int iy0 = t.ty[u] * kOut - g.pad_top, ix0 = t.tx[u] * kOut - g.pad_left;
    for (int r = 0; r < kAlpha; ++r) {
      const int iy = iy0 + r;
      if (iy < 0 || iy >= g.in_h) continue;
      const float* row = chan + static_cast<size_t>(iy) * g.in_w;
      for (int c = std::max(0, -ix0); c < std::min(kAlpha, g.in_w - ix0); ++c) buf[(r * kAlpha + c) * 4 + u] = row[ix0 + c];
    }
  }
}

// V[xi][ic][12] for the block's tile groups.
void transform_input(const ConvGeometry& g, const TileGroup* groups, const float* in, size_t in_cstep, float* v) {
  const size_t xi_stride = static_cast<size_t>(g.in_c) * kNr;
  alignas(16) float buf[kXi * 4];
  for (int q = 0; q < kGroups; ++q) {
    const TileGroup& t = groups[q];
    for (int ic = 0; ic < g.in_c; ++ic) {
      const float* chan = in + ic * in_cstep;
      float* dst = v + static_cast<size_t>(ic) * kNr + 4 * q;
      if (t.inside) {
        const float* p = chan + static_cast<size_t>(t.ty[0] * kOut - g.pad_top) * g.in_w + (t.tx[0] * kOut - g.pad_left);
        wino43::input_tile4(StridedLoad{p, static_cast<size_t>(g.in_w)}, dst, xi_stride);
      } else {
        gather(g, t, chan, buf);
        wino43::input_tile4(GatherLoad{buf}, dst, xi_stride);
      }
    }
  }
}

// Output transform of one channel's tile group (products at m, xi stride kMr * kNr),
// bias + activation, and the store of its real pixels.
template <Act kAct>
void store_group(const ConvGeometry& g, const TileGroup& t, const float* m, float bias, const Epilogue<kAct>& epi,
                 float* out) {
  float32x4_t y[kOut][kOut];
  wino43::output_tile4(m, kMr * kNr, y);
  const float32x4_t b = vdupq_n_f32(bias);
  for (int a = 0; a < kOut; ++a) {
    float32x4x4_t row;
    row.val[0] = epi(vaddq_f32(y[a][0], b));
    row.val[1] = epi(vaddq_f32(y[a][1], b));
    row.val[2] = epi(vaddq_f32(y[a][2], b));
    row.val[3] = epi(vaddq_f32(y[a][3], b));
    // vst4 interleaves lanes: tile u's 4 pixels of this row land at 4u..4u+3.
    if (t.one_row && (t.tx[0] + 4) * kOut <= g.out_w && t.ty[0] * kOut + a < g.out_h) {
      float* p = out + static_cast<size_t>(t.ty[0] * kOut + a) * g.out_w + t.tx[0] * kOut;
      vst4q_f32(p, row);
      epi.finish(p, 4 * kOut);
      continue;
    }
    float buf[4 * kOut];
    vst4q_f32(buf, row);
    for (int u = 0; u < t.count; ++u) {
      const int oy = t.ty[u] * kOut + a, ox = t.tx[u] * kOut;
      if (oy >= g.out_h) continue;
      const int n = std::min(kOut, g.out_w - ox);
      float* p = out + static_cast<size_t>(oy) * g.out_w + ox;
      std::memcpy(p, buf + u * kOut, sizeof(float) * n);
      epi.finish(p, n);
    }
  }
}

template <Act kAct>
void run_impl(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epilogue<kAct>& epi) {
  const Plan pl = plan_of(g);
  const int threads = std::max(1, ctx.num_threads);
  // Few blocks (small maps): split the panels so that every thread gets work; each
  // chunk then transforms its block's input again.
  size_t chunks = std::min<size_t>(pl.panels, (threads + pl.blocks - 1) / pl.blocks);
  const size_t chunk_panels = (pl.panels + chunks - 1) / chunks;
  chunks = (pl.panels + chunk_panels - 1) / chunk_panels;
  const long items = static_cast<long>(pl.blocks * chunks);
  const float* bias_all = packed + weight_floats(g, pl);
  const size_t k = g.in_c;

#pragma omp parallel for num_threads(threads) schedule(static)
  for (long item = 0; item < items; ++item) {
    const size_t chunk = item % chunks, blk = item / chunks;
    float* v = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    float* m = v + kXi * k * kNr;
    const size_t first = blk * kBlockTiles, end = std::min(first + kBlockTiles, pl.tiles);
    TileGroup groups[kGroups];
    for (int q = 0; q < kGroups; ++q) groups[q] = tile_group(g, pl, first + 4 * q, end);
    transform_input(g, groups, in, in_cstep, v);
    const int panel_end = static_cast<int>(std::min<size_t>(pl.panels, (chunk + 1) * chunk_panels));
    for (int panel = static_cast<int>(chunk * chunk_panels); panel < panel_end; ++panel) {
      for (int xi = 0; xi < kXi; ++xi) {
        const float* a = packed + (static_cast<size_t>(xi) * pl.panels + panel) * k * kMr;
        gemm::f32_gemm_8x12_neon(k, a, v + xi * k * kNr, kNr, gemm::RawStore{m + xi * kMr * kNr, kNr});
      }
      const int mr = std::min(kMr, g.out_c - panel * kMr);
      for (int r = 0; r < mr; ++r) {
        const int oc = panel * kMr + r;
        for (int q = 0; q < kGroups; ++q) {
          if (groups[q].count == 0) break;
          store_group(g, groups[q], m + r * kNr + 4 * q, bias_all[oc], epi, out + oc * out_cstep);
        }
      }
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue(g.act, [&](const auto& epi) { run_impl(g, packed, in, in_cstep, out, out_cstep, ctx, epi); });
}

}  // namespace

const ConvKernel kF32ConvWinograd_Neon = {
    "f32_conv_winograd43_neon", Isa::kNeon, supports, packed_floats, pack, workspace_bytes,
    workspace_per_thread_bytes, 1e-3, run,
};

}  // namespace kestrel::kernels::arm
