// 3x3 depthwise convolution, stride 1 and 2, in fp16 arithmetic (ARMv8.2 FEAT_FP16) on
// 8-channel blocked maps of halves, in and out (ncnn's pack8 fp16 maps). A pixel of a
// block is one vector of its 8 channels, so every tap is one fmla .8h of a whole pixel
// vector by the tap's vector of 8 weights: no shifted views, no de-interleaving
// (stride 2 steps two vectors), no transposes.
//
// Judged by the instructions it executes, whose floor is one fmla per tap inside the
// map. A work item is one channel block and a band of output rows, cut into strips of 4
// output pixels (the last one 1..4); the assembly of f16_dwconv3x3_pack8_neonfp16.h
// walks a strip down the band, loading each input row of it once and keeping the 2 or
// 3 output rows it feeds in registers:
//   first   when pad_left is 1: column -1 is neither loaded nor multiplied;
//   middle  4-pixel strips read in place, all in one walk;
//   last    1..4 pixels, the column right of the row (pad 1) neither.
// A row above or below the map is skipped by the walk too. With one band a thread's
// blocks are consecutive: each of the three walks goes through all of them in one call.
// Geometries with a pad of 2 read a band's rows from padded copies instead (per-thread
// scratch), walked the same way, where the padding columns and a second padding row are
// zeros multiplied (which can only change the sign of a zero sum).
//
// Every output is its bias, then its taps inside the map in the order ky, kx, one fp16
// fma each, whatever strip or band computes it: conv_reference_f16's sum, so the results
// equal it bit for bit, at any thread count. The activations follow the reference's
// comparisons (the header says how).
#include "arm/f16_dwconv3x3_pack8_neonfp16.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "arm/arm_kernels.h"
#include "core/parallel.h"

#define KESTREL_DWH8_INLINE __attribute__((always_inline))

namespace kestrel::kernels::arm {
namespace {

using dwconv3x3_pack8_f16::Act;
using dwconv3x3_pack8_f16::Walk;
using dwconv3x3_pack8_f16::Store;
using half = __fp16;

constexpr int kLanes = 8;
// Per channel block: 9 tap vectors, the bias 4 times (one ld1 starts 4 accumulators),
// zeros up to 256 bytes (each block on cache lines of its own).
constexpr int kBlockHalves = 128;
constexpr int kBiasAt = 9 * kLanes;
constexpr int kStrip = 4;  // output pixels of a strip
constexpr ptrdiff_t kPixelBytes = kLanes * sizeof(half);

// Padding after the last input row/column that `out` outputs of stride s read.
int pad_end(int in, int out, int s, int pad_begin) { return (out - 1) * s + 3 - in - pad_begin; }

// How the bands are read: in place (padding of at most 1 on each side), or from padded
// copies of their rows.
struct Plan {
  // pad_left: the columns of padding before the rows the walks read (0 with copies).
  int s = 1, in_h = 0, pad_top = 0, pad_left = 0;
  // Strips of a row: the first through edge() when it reads padding or is the only one
  // and narrower (first_key: its variant, else 0), then middle ones up to middle_end,
  // then the last through edge() (last_key, else 0) when it reads padding or has fewer
  // than 4 pixels.
  int strips = 0, first_key = 0, middle_end = 0, last_key = 0;
  bool copies = false;
  int copy_left = 0;
  // In pixels: a row the walks read (a copy's, padded, with copies), a source row, an
  // output row.
  ptrdiff_t in_row = 0, src_row = 0, out_row = 0;
};

Plan make_plan(const ConvGeometry& g) {
  Plan p;
  p.s = g.sw;
  p.strips = (g.out_w + kStrip - 1) / kStrip;
  p.in_h = g.in_h;
  p.pad_top = g.pad_top;
  p.src_row = g.in_w;
  p.out_row = g.out_w;
  const int end_w = pad_end(g.in_w, g.out_w, g.sw, g.pad_left), end_h = pad_end(g.in_h, g.out_h, g.sh, g.pad_top);
  p.copies = g.pad_left > 1 || g.pad_top > 1 || end_w > 1 || end_h > 1;
  if (!p.copies) {
    p.pad_left = g.pad_left;
    p.in_row = p.src_row;
  } else {
    p.copy_left = g.pad_left;
    p.in_row = g.pad_left + g.in_w + std::max(end_w, 0);
  }
  // Edge variants by key n * 4 + zl * 2 + zr (edge()); a lone strip of 4 pixels without
  // padding is a middle one.
  const int last_n = g.out_w - kStrip * (p.strips - 1), zl = p.pad_left == 1, zr = !p.copies && end_w == 1;
  if (zl || (p.strips == 1 && (last_n != kStrip || zr))) {
    p.first_key = (p.strips == 1 ? last_n : kStrip) * 4 + zl * 2 + (p.strips == 1 ? zr : 0);
  }
  const bool last_edge = p.strips > 1 && (last_n != kStrip || zr);
  p.middle_end = p.strips - (last_edge ? 1 : 0);
  p.last_key = last_edge ? last_n * 4 + zr : 0;
  return p;
}

// The rows of a walk: the first, the second (the middle ones follow), the last.
struct Rows {
  const half* first;
  const half* rows;
  const half* last;
};

// Output rows [y0, y0 + m) read from padded copies of their input rows in scratch (whose
// padding columns stay zero). Out of line: the path of unusual pads.
__attribute__((noinline)) Rows copy_band(const Plan& p, const half* in, half* scratch, int y0, int m) {
  const int r0 = y0 * p.s - p.pad_top, n = (m - 1) * p.s + 3;
  const ptrdiff_t row = p.in_row * kLanes, src = p.src_row * kLanes;
  for (int r = 0; r < n; ++r) {
    half* dst = scratch + r * row + p.copy_left * kLanes;
    const int iy = r0 + r;
    if (iy >= 0 && iy < p.in_h) {
      std::copy(in + iy * src, in + (iy + 1) * src, dst);
    } else {
      std::fill(dst, dst + src, static_cast<half>(0.f));
    }
  }
  return {scratch, scratch + row, scratch + (n - 1) * row};
}

// The walk k over `blocks` blocks from the block of `w`, `out` and the rows r, its first
// strip's first loaded column `col` halves into the rows.
template <int S, int N, int ZL, int ZR, Store St>
inline KESTREL_DWH8_INLINE void strips(Walk k, const Rows& r, ptrdiff_t col, const half* w, half* out, int blocks,
                                       const Act& a) {
  k.w = w;
  k.pf = r.first + col;
  k.p = r.rows + col;
  k.pl = r.last + col;
  k.out = out;
  k.blocks = blocks;
  dwconv3x3_pack8_f16::walk<S, N, ZL, ZR, St>(k, a);
}

// A strip with padding or fewer than 4 pixels: its variant by key n * 4 + zl * 2 + zr
// (not 16: that strip is a middle one).
template <int S, Store St>
inline KESTREL_DWH8_INLINE void edge(int key, const Walk& k, const Rows& r, ptrdiff_t col, const half* w, half* out,
                                     int blocks, const Act& a) {
  switch (key) {
    case 4: return strips<S, 1, 0, 0, St>(k, r, col, w, out, blocks, a);
    case 5: return strips<S, 1, 0, 1, St>(k, r, col, w, out, blocks, a);
    case 6: return strips<S, 1, 1, 0, St>(k, r, col, w, out, blocks, a);
    case 7: return strips<S, 1, 1, 1, St>(k, r, col, w, out, blocks, a);
    case 8: return strips<S, 2, 0, 0, St>(k, r, col, w, out, blocks, a);
    case 9: return strips<S, 2, 0, 1, St>(k, r, col, w, out, blocks, a);
    case 10: return strips<S, 2, 1, 0, St>(k, r, col, w, out, blocks, a);
    case 11: return strips<S, 2, 1, 1, St>(k, r, col, w, out, blocks, a);
    case 12: return strips<S, 3, 0, 0, St>(k, r, col, w, out, blocks, a);
    case 13: return strips<S, 3, 0, 1, St>(k, r, col, w, out, blocks, a);
    case 14: return strips<S, 3, 1, 0, St>(k, r, col, w, out, blocks, a);
    case 15: return strips<S, 3, 1, 1, St>(k, r, col, w, out, blocks, a);
    case 17: return strips<S, 4, 0, 1, St>(k, r, col, w, out, blocks, a);
    case 18: return strips<S, 4, 1, 0, St>(k, r, col, w, out, blocks, a);
    default: return strips<S, 4, 1, 1, St>(k, r, col, w, out, blocks, a);
  }
}

// The walks of a band: its first strip, its middle ones, its last.
struct BandWalks {
  Walk first, middle, last;
};

// The strips of a band in `blocks` blocks, left to right: the first and last through
// edge() where they read padding or are narrower (Plan::first_key, last_key), the middle
// ones in one walk. Every walk goes through all the blocks.
template <int S, Store St>
inline KESTREL_DWH8_INLINE void band(const Plan& p, const BandWalks& bw, const Rows& r, const half* w, half* out,
                                     int blocks, const Act& a) {
  constexpr ptrdiff_t kInStep = kStrip * S * kLanes, kOutStep = kStrip * kLanes;
  const int s = p.first_key ? 1 : 0;
  if (s) edge<S, St>(p.first_key, bw.first, r, 0, w, out, blocks, a);
  if (s < p.middle_end) {
    strips<S, 4, 0, 0, St>(bw.middle, r, s * kInStep - p.pad_left * kLanes, w, out + s * kOutStep, blocks, a);
  }
  if (p.last_key) {
    edge<S, St>(p.last_key, bw.last, r, p.middle_end * kInStep - p.pad_left * kLanes, w, out + p.middle_end * kOutStep,
                blocks, a);
  }
}

// Per-thread scratch: padded copies of a band's input rows, at most all of them.
size_t copies_halves(const ConvGeometry& g, const Plan& p) {
  return p.copies ? static_cast<size_t>((g.out_h - 1) * g.sh + 3) * p.in_row * kLanes : 0;
}

// What the work items share: item i is channel block i / bands, band i % bands.
struct Items {
  const half* in;
  size_t in_cstep;  // halves
  half* out;
  size_t out_cstep;
  const half* packed;
  int bands, band_rows, out_h;
};

// Items [i0, i1), one thread's share: one call, so that the plan is loaded and the
// registers saved once per thread, not per item. With one band the share is a run of
// blocks of that band, walked by three calls (a 7x7 block is only 49 outputs); with
// copies (or several bands) one block at a time.
template <int S, Store St>
void run_items(const Plan& plan, const Items& items, half* copies, int i0, int i1, const Act& act) {
  const Plan p = plan;  // in registers: the stores may alias anything behind a reference
  const Items its = items;
  const Act a = act;
  const ptrdiff_t ib = p.in_row * kPixelBytes, ob = p.out_row * kPixelBytes;
  const ptrdiff_t in_block = its.in_cstep * sizeof(half), out_block = its.out_cstep * sizeof(half);
  // What depends on the band only: its rows (offsets in the block; whether the first and
  // last are padding, which the walks skip), its walks' steps.
  int cached = -1, y0 = 0, m = 0;
  ptrdiff_t first = 0, rows = 0, last = 0;
  bool first_zero = false, last_zero = false;
  BandWalks bw{};
  for (int i = i0; i < i1;) {
    const int j = i / its.bands, k = i - j * its.bands;
    const int blocks = its.bands == 1 && !p.copies ? i1 - i : 1;
    i += blocks;
    if (k != cached) {
      cached = k;
      y0 = k * its.band_rows;
      m = std::min(its.out_h - y0, its.band_rows);
      if (m <= 0) continue;
      const int r0 = y0 * p.s - p.pad_top, rl = r0 + (m - 1) * p.s + 2;
      first_zero = r0 < 0;
      last_zero = rl >= p.in_h;
      // (A row of padding is not read: its pointer may be any.)
      first = first_zero ? 0 : r0 * p.in_row * kLanes;
      rows = (r0 + 1) * p.in_row * kLanes;
      last = last_zero ? 0 : rl * p.in_row * kLanes;
      const int middle = p.middle_end - (p.first_key ? 1 : 0);
      using dwconv3x3_pack8_f16::walk_of;
      bw.first = walk_of<S>(m, 1, ib, ob, in_block, out_block, first_zero, last_zero);
      bw.middle = walk_of<S>(m, std::max(middle, 1), ib, ob, in_block, out_block, first_zero, last_zero);
      bw.last = bw.first;
    }
    if (m <= 0) continue;
    const half* in = its.in + j * its.in_cstep;
    const Rows r = p.copies ? copy_band(p, in, copies, y0, m)
                            : Rows{in + first, in + rows, in + last};
    band<S, St>(p, bw, r, its.packed + static_cast<size_t>(j) * kBlockHalves,
                its.out + j * its.out_cstep + y0 * p.out_row * kLanes, blocks, a);
  }
}

template <int S, Store St>
void run_blocked(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                 size_t out_cstep, const KernelContext& ctx, const Act& a) {
  const Plan p = make_plan(g);
  const int blocks = g.in_c / kLanes;
  // Row bands only where the channel blocks are too few to go round the threads (and one
  // band per block at one thread); the outputs do not depend on the banding.
  const int bands = std::clamp((2 * ctx.num_threads + blocks - 1) / blocks, 1, g.out_h);
  const Items items{reinterpret_cast<const half*>(in),
                    in_cstep * 2,  // cstep counts 4-byte units
                    reinterpret_cast<half*>(out),
                    out_cstep * 2,
                    reinterpret_cast<const half*>(packed),
                    bands,
                    (g.out_h + bands - 1) / bands,
                    g.out_h};
  const int n = blocks * bands;
  parallel_region(ctx.num_threads, [&] {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    half* copies = static_cast<half*>(ctx.scratch_of(t));
    std::fill(copies, copies + copies_halves(g, p), static_cast<half>(0.f));
    run_items<S, St>(p, items, copies, static_cast<int>(static_cast<long long>(n) * t / nt),
                     static_cast<int>(static_cast<long long>(n) * (t + 1) / nt), a);
  });
}

bool act_supported(const ActivationSpec& act) {
  using A = fb::ActivationType;
  if (act.type == A::Clip) {
    // FMIN(x, hi) is the reference's min except for hi = -0 (there FMIN(+0, -0) = -0).
    const half hi = static_cast<half>(act.beta);
    return !(hi == 0 && std::signbit(static_cast<float>(hi)));
  }
  return act.type == A::None || act.type == A::ReLU || act.type == A::LeakyReLU;
}

bool supports(const ConvGeometry& g) {
  if (!g.f16 || g.in_pack != kLanes || g.out_pack != kLanes || g.in_c % kLanes != 0) return false;
  if (!g.is_depthwise() || g.in_c < 1 || g.kh != 3 || g.kw != 3 || g.dh != 1 || g.dw != 1) return false;
  if (g.sh != g.sw || (g.sh != 1 && g.sh != 2)) return false;
  if (g.in_h < 1 || g.in_w < 1 || g.out_h < 1 || g.out_w < 1) return false;
  if (g.pad_top < 0 || g.pad_top > 2 || g.pad_left < 0 || g.pad_left > 2) return false;
  // Trailing padding up to 2, so that no output reads only padding (negative: trailing
  // input rows no output reads).
  const long long end_h = (static_cast<long long>(g.out_h) - 1) * g.sh + 3 - g.in_h - g.pad_top;
  const long long end_w = (static_cast<long long>(g.out_w) - 1) * g.sw + 3 - g.in_w - g.pad_left;
  return end_h <= 2 && end_w <= 2 && act_supported(g.act);
}

size_t packed_floats(const ConvGeometry& g) { return static_cast<size_t>(g.out_c / kLanes) * kBlockHalves / 2; }

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  half* p = reinterpret_cast<half*>(packed);
  std::fill(p, p + packed_floats(g) * 2, static_cast<half>(0.f));
  for (int c = 0; c < g.out_c; ++c) {
    half* dst = p + static_cast<size_t>(c / kLanes) * kBlockHalves + c % kLanes;
    for (int t = 0; t < 9; ++t) dst[t * kLanes] = static_cast<half>(weight[static_cast<size_t>(c) * 9 + t]);
    for (int i = 0; i < 4; ++i) dst[kBiasAt + i * kLanes] = static_cast<half>(bias ? bias[c] : 0.f);
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }
size_t thread_workspace_bytes(const ConvGeometry& g) { return copies_halves(g, make_plan(g)) * sizeof(half); }

template <Store St>
void run_stride(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                size_t out_cstep, const KernelContext& ctx, const Act& a) {
  if (g.sw == 1) {
    run_blocked<1, St>(g, packed, in, in_cstep, out, out_cstep, ctx, a);
  } else {
    run_blocked<2, St>(g, packed, in, in_cstep, out, out_cstep, ctx, a);
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const half alpha = static_cast<half>(g.act.alpha), beta = static_cast<half>(g.act.beta);
  // A NaN hi clips nothing (the reference's hi < x is false): FMIN with +inf does that.
  const half hi = std::isnan(static_cast<float>(beta)) ? static_cast<half>(INFINITY) : beta;
  const Act a{vdupq_n_f16(alpha), vdupq_n_f16(hi)};
  switch (g.act.type) {
    case fb::ActivationType::ReLU: return run_stride<Store::kRelu>(g, packed, in, in_cstep, out, out_cstep, ctx, a);
    case fb::ActivationType::Clip: return run_stride<Store::kClip>(g, packed, in, in_cstep, out, out_cstep, ctx, a);
    case fb::ActivationType::LeakyReLU:
      return run_stride<Store::kLeaky>(g, packed, in, in_cstep, out, out_cstep, ctx, a);
    default: return run_stride<Store::kLinear>(g, packed, in, in_cstep, out, out_cstep, ctx, a);
  }
}

}  // namespace

const ConvKernel kF16DwConv3x3Pack8_Neon = {
    "f16_dwconv3x3_pack8_neonfp16", Isa::kNeon, supports, packed_floats, pack, no_workspace, thread_workspace_bytes,
    0.0, run, kLanes, /*f16=*/true,
};

}  // namespace kestrel::kernels::arm

#undef KESTREL_DWH8_INLINE
