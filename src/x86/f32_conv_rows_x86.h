// Convolution of few input channels (network stems: 3x3/s2 of MobileNet, 7x7/s2 of
// ResNet) on x86, straight from padded input rows, with no im2col. Written once over
// the vector traits and the MR x (NV * W) microkernel (f32_gemm_x86.h); instantiated
// by f32_conv_rows_8x48_avx512.cpp and f32_conv_rows_4x24_avx2.cpp.
//
// Why: with K = in_c * kh * kw of 27 (3x3x3) the im2col copy costs as much as the
// SGEMM, and at stride 2 it is a scalar gather; the SGEMM kernel ran MobileNet's stem at
// 21% of the FMA peak in the network.
//
// How: the input is first copied once into a shared workspace of padded rows, each
// split into its sw phases (stride 2: the even, then the odd positions), zeros where
// the padding is. Output pixel ox of a row reads tap kx at padded position
// ox * sw + kx, that is phase kx % sw, index ox + kx / sw: contiguous in ox. So row kk
// = (ic * kh + ky) * kw + kx of B, for the tile of output row oy starting at x0, is
// the phase row of padded input row oy * sh + ky, from x0 + kx / sw on: a base
// pointer per tile plus a per-kk offset computed once (gemm::OffsetRows).
//
// The weights are packed as for the SGEMM kernel ([panel][K][MR], kk in the same
// order), and each output is bias followed by the fma chain over kk in order, so the
// result equals the SGEMM kernel's bit for bit and does not depend on the threads.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "x86/f32_conv_sgemm_x86.h"

KESTREL_X86_NS_BEGIN
namespace conv_rows {

// Stems only: few input channels (the padded copy is then about the input's size) and
// a kernel of at least 3x3 (K from 9 to 4 * 11 * 11).
constexpr int kMaxInChannels = 4;
constexpr int kMaxKernel = 11;

struct Layout {
  int phases;             // sw
  int padded_h;           // rows: pad_top + in_h + the bottom padding the outputs reach
  size_t phase_len;       // floats per phase row (a multiple of 16)
  size_t row_len;         // phases * phase_len
  size_t channel_floats;  // padded_h * row_len
};

template <int NR>
Layout layout_of(const ConvGeometry& g) {
  Layout l;
  l.phases = g.sw;
  l.padded_h = std::max(g.pad_top + g.in_h, (g.out_h - 1) * g.sh + g.kh);
  // A tile reads NR columns from ox = x0 (the last tile's past out_w too) plus kx / sw.
  const size_t cols = (static_cast<size_t>(g.out_w) + NR - 1) / NR * NR + (g.kw - 1) / g.sw;
  l.phase_len = (cols + 15) / 16 * 16;
  l.row_len = l.phases * l.phase_len;
  l.channel_floats = static_cast<size_t>(l.padded_h) * l.row_len;
  return l;
}

template <int MR, int NR>
bool supports(const ConvGeometry& g) {
  if (!conv_gemm::supports_any<MR, NR>(g) || g.group != 1 || g.dh != 1 || g.dw != 1) return false;
  if (g.in_c > kMaxInChannels || g.kh < 3 || g.kw < 3 || g.kh > kMaxKernel || g.kw > kMaxKernel) return false;
  return (g.sw == 1 || g.sw == 2) && (g.sh == 1 || g.sh == 2);
}

template <int NR>
size_t workspace_bytes(const ConvGeometry& g) {
  const Layout l = layout_of<NR>(g);
  const size_t k = static_cast<size_t>(g.in_c) * g.kh * g.kw;
  return (l.channel_floats * g.in_c) * sizeof(float) + k * sizeof(ptrdiff_t) + 64;
}

// Padded input row y (padded coordinates) of channel c into its phase rows: position
// X = x * sw + phase holds input column X - pad_left, or 0 outside the input.
inline void fill_row(const ConvGeometry& g, const Layout& l, const float* chan, int y, float* dst) {
  const int iy = y - g.pad_top;
  if (iy < 0 || iy >= g.in_h) {
    std::fill(dst, dst + l.row_len, 0.f);
    return;
  }
  const float* src = chan + static_cast<size_t>(iy) * g.in_w;
  const long len = static_cast<long>(l.phase_len), s = l.phases;
  for (int ph = 0; ph < l.phases; ++ph) {
    float* d = dst + ph * l.phase_len;
    // x in [lo, hi) reads input column x * s + ph - pad_left inside the row: a branch-free
    // strided copy the compiler vectorizes; zeros on either side.
    const long first = ph - g.pad_left;  // input column of x = 0
    const long lo = std::min(len, first >= 0 ? 0 : (-first + s - 1) / s);
    const long hi = std::max(lo, std::min(len, (g.in_w - first + s - 1) / s));
    std::fill(d, d + lo, 0.f);
    const float* sp = src + first;
    if (s == 1) {
      std::memcpy(d + lo, sp + lo, sizeof(float) * (hi - lo));
    } else {
      for (long x = lo; x < hi; ++x) d[x] = sp[2 * x];
    }
    std::fill(d + hi, d + len, 0.f);
  }
}

// Fills the shared workspace: the padded phase rows of every input channel, then the
// offset of each k step (ic, ky, kx) from an output row's base; returns the offsets.
inline const ptrdiff_t* fill_rows(const ConvGeometry& g, const Layout& l, const float* in, size_t in_cstep,
                                  float* rows, int threads) {
  auto* off = reinterpret_cast<ptrdiff_t*>(rows + l.channel_floats * g.in_c);
  for (int ic = 0, kk = 0; ic < g.in_c; ++ic) {
    for (int ky = 0; ky < g.kh; ++ky) {
      for (int kx = 0; kx < g.kw; ++kx, ++kk) {
        off[kk] = static_cast<ptrdiff_t>(ic * l.channel_floats + ky * l.row_len + (kx % l.phases) * l.phase_len +
                                         kx / l.phases);
      }
    }
  }
  // Rows outer, channels inner: thread t fills about the t-th share of the rows, the
  // ones the t-th share of output rows reads (both loops split rows first), so they
  // are in its own cache.
  const long fill_items = static_cast<long>(g.in_c) * l.padded_h;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long item = 0; item < fill_items; ++item) {
    const int y = static_cast<int>(item / g.in_c), c = static_cast<int>(item % g.in_c);
    fill_row(g, l, in + c * in_cstep, y, rows + c * l.channel_floats + static_cast<size_t>(y) * l.row_len);
  }
  return off;
}

template <class V, int MR, int NV, class Epi>
void run_impl(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  constexpr int NR = NV * V::kWidth;
  const Layout l = layout_of<NR>(g);
  const conv_gemm::Plan pl = conv_gemm::plan_of<MR, NR>(g);
  const int threads = std::max(1, ctx.num_threads);
  float* rows = static_cast<float*>(ctx.workspace);
  const ptrdiff_t* off = fill_rows(g, l, in, in_cstep, rows, threads);
  // Work items: (output row, chunk of panels); all panels in one chunk when the rows
  // alone give every thread several items, so that a row's B stays in L1 across them.
  const int row_tiles = (g.out_w + NR - 1) / NR;
  const long rows_items = g.out_h;
  const int chunks = rows_items >= 4L * threads ? 1 : std::min(pl.panels, threads);
  const int chunk_panels = (pl.panels + chunks - 1) / chunks;
  const float* bias_all = packed + conv_gemm::weight_floats<MR>(pl, 1);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long item = 0; item < rows_items * chunks; ++item) {
    const int chunk = static_cast<int>(item / rows_items), oy = static_cast<int>(item % rows_items);
    const float* row_base = rows + static_cast<size_t>(oy) * g.sh * l.row_len;
    const int panel_end = std::min(pl.panels, (chunk + 1) * chunk_panels);
    for (int panel = chunk * chunk_panels; panel < panel_end; ++panel) {
      const float* a = packed + static_cast<size_t>(panel) * pl.k * MR;
      const int mr = std::min(MR, pl.out_per_group - panel * MR);
      float* out_p = out + static_cast<size_t>(panel) * MR * out_cstep + static_cast<size_t>(oy) * g.out_w;
      for (int t = 0; t < row_tiles; ++t) {
        const int x0 = t * NR, nr = std::min(NR, g.out_w - x0);
        gemm::any_tile<V, MR, NV>(pl.k, a, bias_all + panel * MR, gemm::OffsetRows{row_base + x0, off}, out_p + x0,
                                  out_cstep, mr, nr, epi);
      }
    }
  }
}

template <class V, int MR, int NV>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
    run_impl<V, MR, NV>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
  });
}

// A blocked output (out_pack W, conv_kernels.h) from the same padded rows, through
// channel tiles (gemm::ctile): MV vectors of output channels x NP pixels, so that a
// pixel's accumulators are one stored vector of a W-channel block. The pixel tiles
// above would have to transpose their [channel][pixel] registers on the way out.
// MobileNet's 112x112 depthwise and 1x1 layers after the stem then read their blocked
// maps in place. Each output is bias followed by the same fma chain over kk as
// run_impl's, so the two kernels agree bit for bit.
template <class V, int MV, int NP>
bool supports_blocked(const ConvGeometry& g) {
  constexpr int W = V::kWidth;
  return g.in_pack == 1 && g.out_pack == W && g.out_c % W == 0 && supports<MV * W, NP>(g);
}

template <class V, int MV, int NP>
void run_blocked(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                 size_t out_cstep, const KernelContext& ctx) {
  constexpr int W = V::kWidth, MR = MV * W;
  const Layout l = layout_of<NP>(g);  // the channel tiles read no column past out_w
  const conv_gemm::Plan pl = conv_gemm::plan_of<MR, MR>(g);
  const int threads = std::max(1, ctx.num_threads);
  float* rows = static_cast<float*>(ctx.workspace);
  const ptrdiff_t* off = fill_rows(g, l, in, in_cstep, rows, threads);
  const float* bias_all = packed + conv_gemm::weight_floats<MR>(pl, 1);
  gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
    using Epi = std::decay_t<decltype(epi)>;
    // Rows outer, as the fill split them.
    const long items = static_cast<long>(g.out_h) * pl.panels;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long item = 0; item < items; ++item) {
      const int oy = static_cast<int>(item / pl.panels), panel = static_cast<int>(item % pl.panels);
      const gemm::OffsetRows b{rows + static_cast<size_t>(oy) * g.sh * l.row_len, off};
      float* c = out + static_cast<size_t>(panel) * MV * out_cstep + static_cast<size_t>(oy) * g.out_w * W;
      gemm::any_ctile<V, MV, NP, Epi, gemm::Packs<0, W>>(pl.k, packed + static_cast<size_t>(panel) * pl.k * MR,
                                                         bias_all + panel * MR, b, c, out_cstep,
                                                         std::min(MR, pl.out_per_group - panel * MR), g.out_w,
                                                         nullptr, epi);
    }
  });
}

// The entry of the blocked-output kernel (MV vectors x NP pixels): chosen only where
// the Net keeps the stem's output blocked (net_layout.cpp); planar outputs stay with
// the pixel tiles.
template <class V, int MV, int NP>
constexpr ConvKernel blocked_kernel(const char* name, Isa isa) {
  constexpr int MR = MV * V::kWidth;
  return {name,
          isa,
          supports_blocked<V, MV, NP>,
          conv_gemm::packed_floats<MR, MR>,
          conv_gemm::pack<MR, MR>,
          workspace_bytes<NP>,
          conv_gemm::no_workspace,
          1e-4,
          run_blocked<V, MV, NP>,
          V::kWidth};
}

// The entry of a row kernel with an MR x NV-vector tile; an ISA's translation unit
// names only its tile.
template <class V, int MR, int NV>
constexpr ConvKernel kernel(const char* name, Isa isa) {
  constexpr int NR = NV * V::kWidth;
  return {name,
          isa,
          supports<MR, NR>,
          conv_gemm::packed_floats<MR, NR>,
          conv_gemm::pack<MR, NR>,
          workspace_bytes<NR>,
          conv_gemm::no_workspace,
          1e-4,
          run<V, MR, NV>};
}

}  // namespace conv_rows
KESTREL_X86_NS_END
