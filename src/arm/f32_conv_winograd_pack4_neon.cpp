// Dense 3x3 stride-1 convolution on NEON by Winograd, on 4-channel blocked (pack4)
// maps: F(6x6, 3x3) (64 products per 36 outputs) or F(4x4, 3x3) (36 per 16), whichever
// the cost model below finds cheaper for the map (6x6 tiles on 56x56 and 28x28 maps;
// 4x4 tiles where 6x6 ones would mostly cover padding, as on 14x14 and 7x7).
//
// Per chunk of tiles, three phases:
//   1. input transform: each (input channel block, tile) to V[xi][cb][tile][4], one
//      vector per pixel, so a tile's 4 channels transform together with no transposes;
//      taps outside the map read a zero vector;
//   2. the alpha^2 products M[xi] = U[xi] * V[xi]: each is a 1x1 convolution of the
//      tiles seen as pixels of a pack4 map, so it runs the asm tiles of the pack4 1x1
//      kernel (src/arm/f32_conv1x1_pack4_8x8_neon.h: 8 output channels x 8 tiles,
//      4 and 1 for the rest) into M[xi][ob][tile][4];
//   3. output transform of each (output block of 4, tile), bias and activation, and
//      the store of its pixels inside the map, pack4 (one vector per pixel) or planar.
// A planar input is first copied into the pack4 layout (conv_pack4::gather_block_row:
// missing channels of a last block as -0), so that planar and blocked maps give the
// same bits: the layout pass may block a layer's maps or not, and this kernel is
// chosen either way.
//
// Layouts
//   packed weights  U[xi][ob][c][8] = (G g G^T)[xi] of input channel c and output
//                   channel 8 ob + o (zero past in_c and out_c; the 1x1 pack4 tiles'
//                   weight block), then the bias, out_c rounded up to 8
//   workspace       [pack4 copy of a planar input] V: alpha^2 * kb * chunk * 4 floats,
//                   M: alpha^2 * 2 nob * chunk * 4 floats
// Tiles are numbered in raster order over ceil(out_h/m) x ceil(out_w/m).
//
// Threads: each phase splits its items (schedule static) among the threads, and every
// value comes from one fixed sequence of operations, so the result does not depend on
// the thread count.
#include <algorithm>
#include <cstddef>

#include "arm/arm_kernels.h"
#include "arm/f32_conv1x1_pack4_8x8_neon.h"
#include "arm/f32_conv_pack4_8x8_tiles_neon.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/f32_winograd43_transforms_neon.h"
#include "arm/f32_winograd63_transforms_neon.h"
#include "kernels/winograd_weights.h"

namespace kestrel::kernels::arm {
namespace {

namespace p4 = conv1x1_pack4;

constexpr int kLanes = 4;
constexpr int kBlockOut = p4::kBlockOut;  // output channels per weight block
constexpr int kMaxInChannels = 1 << 14;
// V and M of a chunk of tiles stay within this, about an L2 (the GEMM reads V[xi] again
// for every output block): ResNet's 56x56 layers run in two chunks.
constexpr size_t kChunkBytes = size_t(2) << 20;
// Zeros: the GEMM's bias (the real one is added after the output transform) and the
// rows of an input tile outside the map (alpha <= 8 vectors).
alignas(16) const float kZeroBias[p4::kBiasFloats] = {};

struct Plan {
  int alpha, m;  // transform extent and outputs per tile side
  int tiles_w;
  size_t tiles;
  size_t kb;     // input channel blocks
  size_t nob;    // 8-channel output blocks (the GEMM's)
  size_t ob4;    // 4-channel blocks of M: 2 * nob
  size_t chunk;  // tiles per chunk
  size_t xi() const { return static_cast<size_t>(alpha) * alpha; }
};

Plan plan_with(const ConvGeometry& g, int m) {
  Plan p;
  p.m = m;
  p.alpha = m + 2;
  p.tiles_w = (g.out_w + m - 1) / m;
  p.tiles = static_cast<size_t>((g.out_h + m - 1) / m) * p.tiles_w;
  p.kb = (static_cast<size_t>(g.in_c) + kLanes - 1) / kLanes;
  p.nob = (static_cast<size_t>(g.out_c) + kBlockOut - 1) / kBlockOut;
  p.ob4 = 2 * p.nob;
  const size_t tile_bytes = p.xi() * (p.kb + p.ob4) * kLanes * sizeof(float);
  const size_t fit = std::max<size_t>(p4::kTilePixels, kChunkBytes / tile_bytes / p4::kTilePixels * p4::kTilePixels);
  p.chunk = std::min(p.tiles, fit);
  return p;
}

// Instructions per inference, roughly, from the loops below: a GEMM step (4 input
// channels, 8 output channels, 8 tiles) is 64 FMAs and 4 loads; a tile's input
// transform ~3.5 per element and channel block, its output transform ~3 per element
// and output block. Direct convolution (im2col into the same tiles) for comparison.
double winograd_cost(const Plan& p) {
  const double tiles = static_cast<double>(p.tiles), xi = static_cast<double>(p.xi());
  return xi * tiles * (p.kb * p.nob * 8.5 + p.kb * 3.5 + p.ob4 * 3.0);
}

double direct_cost(const ConvGeometry& g, const Plan& p) {
  const double pixels = static_cast<double>(g.out_h) * g.out_w;
  return pixels * 9 * p.kb * (p.nob * 8.5 + 2.0);
}

// F(6,3) where it costs less than F(4,3) by a margin (its transforms round more).
Plan plan_of(const ConvGeometry& g) {
  const Plan p4x4 = plan_with(g, 4), p6x6 = plan_with(g, 6);
  return winograd_cost(p6x6) < 0.95 * winograd_cost(p4x4) ? p6x6 : p4x4;
}

bool supports(const ConvGeometry& g) {
  if (g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1 || g.group != 1) return false;
  // Fewer channels leave the transforms unamortized.
  if (g.in_c < 8 || g.out_c < 4 || g.in_c > kMaxInChannels || g.out_c > (1 << 16)) return false;
  if (g.in_h <= 0 || g.in_w <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  if ((g.in_pack != 1 && g.in_pack != kLanes) || (g.out_pack != 1 && g.out_pack != kLanes)) return false;
  if ((g.in_pack == kLanes && g.in_c % kLanes) || (g.out_pack == kLanes && g.out_c % kLanes)) return false;
  const int pad_bottom = g.out_h + 2 - g.in_h - g.pad_top, pad_right = g.out_w + 2 - g.in_w - g.pad_left;
  for (int pad : {g.pad_top, g.pad_left, pad_bottom, pad_right}) {
    if (pad < 0 || pad > 2) return false;
  }
  const Plan p = plan_of(g);
  return winograd_cost(p) < direct_cost(g, p);
}

size_t weight_floats(const Plan& p) { return p.xi() * p.nob * p.kb * kLanes * kBlockOut; }

size_t packed_floats(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return weight_floats(p) + p.nob * kBlockOut;
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const Plan p = plan_of(g);
  std::fill(packed, packed + packed_floats(g), 0.f);
  const size_t kpad = p.kb * kLanes, xis = p.xi();
  float u[kWinograd63Alpha * kWinograd63Alpha];
  for (int oc = 0; oc < g.out_c; ++oc) {
    for (int ic = 0; ic < g.in_c; ++ic) {
      const float* k = weight + (static_cast<size_t>(oc) * g.in_c + ic) * 9;
      if (p.m == 6) {
        winograd63_weight_transform(k, u);
      } else {
        winograd43_weight_transform(k, u);
      }
      for (size_t xi = 0; xi < xis; ++xi) {
        packed[((xi * p.nob + oc / kBlockOut) * kpad + ic) * kBlockOut + oc % kBlockOut] = u[xi];
      }
    }
  }
  if (bias) std::copy(bias, bias + g.out_c, packed + weight_floats(p));
}

size_t copy_floats(const ConvGeometry& g, const Plan& p) {
  return g.in_pack == 1 ? p.kb * kLanes * static_cast<size_t>(g.in_h) * g.in_w : 0;
}

size_t workspace_bytes(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return (copy_floats(g, p) + p.xi() * (p.kb + p.ob4) * p.chunk * kLanes) * sizeof(float);
}

size_t no_workspace(const ConvGeometry&) { return 0; }

struct Args {
  const ConvGeometry* g;
  const Plan* p;
  const float* in;  // pack4: the input or its copy
  size_t in_cstep;
  float* v;
  float* m;
  size_t t0, nt;  // the chunk's tiles
};

// Phase 1 for channel block cb and tile t of the chunk.
template <class L>
void transform_input(const Args& a, size_t cb, size_t t) {
  const ConvGeometry& g = *a.g;
  const int tile = static_cast<int>(a.t0 + t);
  const int iy0 = tile / a.p->tiles_w * L::kOut - g.pad_top, ix0 = tile % a.p->tiles_w * L::kOut - g.pad_left;
  const float* base = a.in + cb * a.in_cstep;
  // Row pointers at the tile's column 0, which may lie left of the map (only columns
  // from c0 on are read); rows outside the map read zeros.
  const float* rows[L::kAlpha];
  for (int r = 0; r < L::kAlpha; ++r) {
    const int y = iy0 + r;
    rows[r] = y >= 0 && y < g.in_h ? base + (static_cast<ptrdiff_t>(y) * g.in_w + ix0) * kLanes : kZeroBias;
  }
  wino::input_tile<L>(rows, std::max(0, -ix0), std::min(L::kAlpha, g.in_w - ix0), a.v + (cb * a.nt + t) * kLanes,
                      a.p->kb * a.nt * kLanes);
}

// Phase 2 for product xi and output block ob over the chunk's tiles.
void multiply(const Args& a, size_t xi, size_t ob, const float* packed) {
  const Plan& p = *a.p;
  const size_t kb = p.kb, nt = a.nt, xstep = nt * kLanes;
  const float* w = packed + (xi * p.nob + ob) * kb * kLanes * kBlockOut;
  const float* x = a.v + xi * kb * nt * kLanes;
  float* lo = a.m + (xi * p.ob4 + 2 * ob) * nt * kLanes;
  float* hi = lo + nt * kLanes;
  const p4::Loop lp(kb, xstep);
  size_t t = 0;
  {
    // The tile and the stores move xt, lo and hi on to the next tile.
    const float* xt = x;
    float* lo_t = lo;
    float* hi_t = hi;
    for (; t + p4::kTilePixels <= nt; t += p4::kTilePixels) {
      p4::store8x8_pack4(p4::tile<8>(lp, w, xt, kZeroBias), lo_t, hi_t);
    }
  }
  for (; t + 4 <= nt; t += 4) {
    const float* xt = x + t * kLanes;
    const p4::Acc8x8 r = p4::tile<4>(lp, w, xt, kZeroBias);
    p4::store_run<4>(lo + t * kLanes, p4::Run{r.l0, r.l1, r.l2, r.l3, r.l0, r.l0, r.l0, r.l0});
    p4::store_run<4>(hi + t * kLanes, p4::Run{r.h0, r.h1, r.h2, r.h3, r.h0, r.h0, r.h0, r.h0});
  }
  for (; t < nt; ++t) {
    const float* xt = x + t * kLanes;
    const p4::Acc8x8 r = p4::tile<1>(lp, w, xt, kZeroBias);
    vst1q_f32(lo + t * kLanes, r.l0);
    vst1q_f32(hi + t * kLanes, r.h0);
  }
}

// Phase 3 for output block j (channels 4j..4j+3) and tile t of the chunk.
template <class L, int kOutPack, class Epi>
void transform_output(const Args& a, size_t j, size_t t, const float* bias, float* out, size_t out_cstep,
                      const Epi& epi) {
  constexpr int N = L::kOut;
  const ConvGeometry& g = *a.g;
  const int tile = static_cast<int>(a.t0 + t);
  const int oy0 = tile / a.p->tiles_w * N, ox0 = tile % a.p->tiles_w * N;
  const float* m = a.m + (j * a.nt + t) * kLanes;
  const size_t xi_stride = a.p->ob4 * a.nt * kLanes;
  const float32x4_t b = vld1q_f32(bias + j * kLanes);
  const int rows = std::min(N, g.out_h - oy0), cols = std::min(N, g.out_w - ox0);
  if constexpr (kOutPack == kLanes) {
    float* dst[N];
    for (int r = 0; r < N; ++r) dst[r] = out + j * out_cstep + (static_cast<size_t>(oy0 + std::min(r, rows - 1)) * g.out_w + ox0) * kLanes;
    if (rows == N && cols == N) {
      wino::output_tile<L>(m, xi_stride, [&](int r, int c, float32x4_t y) {
        vst1q_f32(dst[r] + c * kLanes, epi(vaddq_f32(y, b)));
      });
    } else {
      wino::output_tile<L>(m, xi_stride, [&](int r, int c, float32x4_t y) {
        if (r < rows && c < cols) vst1q_f32(dst[r] + c * kLanes, epi(vaddq_f32(y, b)));
      });
    }
    for (int r = 0; r < rows; ++r) epi.finish(dst[r], static_cast<size_t>(cols) * kLanes);
  } else {
    alignas(16) float buf[N][N][kLanes];
    wino::output_tile<L>(m, xi_stride, [&](int r, int c, float32x4_t y) { vst1q_f32(buf[r][c], epi(vaddq_f32(y, b))); });
    const int chans = std::min<int>(kLanes, g.out_c - static_cast<int>(j) * kLanes);
    for (int r = 0; r < rows; ++r) {
      for (int l = 0; l < chans; ++l) {
        float* dst = out + (j * kLanes + l) * out_cstep + static_cast<size_t>(oy0 + r) * g.out_w + ox0;
        for (int c = 0; c < cols; ++c) dst[c] = buf[r][c][l];
        epi.finish(dst, static_cast<size_t>(cols));
      }
    }
  }
}

template <class L, int kOutPack, class Epi>
void run_impl(const ConvGeometry& g, const Plan& p, const float* packed, const float* in, size_t in_cstep,
              float* out, size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  float* ws = static_cast<float*>(ctx.workspace);
  const size_t copy = copy_floats(g, p);
  Args a{&g, &p, in, in_cstep, ws + copy, ws + copy + p.xi() * p.kb * p.chunk * kLanes, 0, 0};
  const float* bias = packed + weight_floats(p);
  const size_t out_blocks = (static_cast<size_t>(g.out_c) + kLanes - 1) / kLanes;
  const int64_t copy_rows = copy ? static_cast<int64_t>(p.kb) * g.in_h : 0;
  if (copy) {
    a.in = ws;
    a.in_cstep = static_cast<size_t>(g.in_h) * g.in_w * kLanes;
  }
#pragma omp parallel num_threads(std::max(1, ctx.num_threads)) firstprivate(a)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < copy_rows; ++i) {
      const size_t j = static_cast<size_t>(i) / g.in_h;
      const int y = static_cast<int>(i % g.in_h);
      conv_pack4::gather_block_row(in, in_cstep, 1, g.in_c, j, static_cast<size_t>(y) * g.in_w, 1, g.in_w,
                                   ws + j * a.in_cstep + static_cast<size_t>(y) * g.in_w * kLanes);
    }
    for (size_t t0 = 0; t0 < p.tiles; t0 += p.chunk) {
      a.t0 = t0;
      a.nt = std::min(p.chunk, p.tiles - t0);
      const int64_t nt = static_cast<int64_t>(a.nt);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < static_cast<int64_t>(p.kb) * nt; ++i) transform_input<L>(a, i / nt, i % nt);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < static_cast<int64_t>(p.xi() * p.nob); ++i) {
        multiply(a, static_cast<size_t>(i) / p.nob, static_cast<size_t>(i) % p.nob, packed);
      }
#pragma omp for schedule(static)
      for (int64_t i = 0; i < static_cast<int64_t>(out_blocks) * nt; ++i) {
        transform_output<L, kOutPack>(a, i / nt, i % nt, bias, out, out_cstep, epi);
      }
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const Plan p = plan_of(g);
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    auto with_lines = [&](auto lines) {
      using L = decltype(lines);
      if (g.out_pack == kLanes) {
        run_impl<L, kLanes>(g, p, packed, in, in_cstep, out, out_cstep, ctx, epi);
      } else {
        run_impl<L, 1>(g, p, packed, in, in_cstep, out, out_cstep, ctx, epi);
      }
    };
    if (p.m == 6) {
      with_lines(wino63::Lines{});
    } else {
      with_lines(wino43::Lines{});
    }
  });
}

}  // namespace

const ConvKernel kF32ConvWinogradPack4_Neon = {
    "f32_conv_winograd_pack4_neon", Isa::kNeon, supports, packed_floats, pack, workspace_bytes, no_workspace, 1e-3, run,
    kLanes,
};

}  // namespace kestrel::kernels::arm
