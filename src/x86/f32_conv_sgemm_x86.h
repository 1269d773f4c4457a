// Convolution as SGEMM on x86, written once over the vector traits (x86_vec.h) and the
// MR x (NV * W) microkernel (f32_gemm_x86.h); instantiated by
// f32_conv_sgemm_*_{avx2,avx512}.cpp (any geometry, through im2col) and
// f32_conv1x1_*_{avx2,avx512}.cpp (1x1, read in place or subsampled); the channel-tile
// kernels' own parts are in f32_conv_ctile_x86.h.
//
// Layouts
//   packed weights  [group][panel][K][MR] (K = in_c/group * kh * kw, kk = (ic*kh+ky)*kw+kx,
//                   MR output channels of the group per panel, missing ones zero),
//                   then the bias as [group][panel][MR] (zero-padded)
//   im2col tile     [K][NR] (NR = NV * W): column j is output pixel p0 + j of the
//                   flattened plane; a block of tiles lies tile after tile in the
//                   thread's scratch, the unused columns of the last tile zero.
// A 1x1 stride-1 unpadded convolution is its own im2col matrix (rows = channels,
// ldb = cstep): full tiles read the input in place; the partial last tile is copied
// (zero-padded) into scratch so that no read goes past a channel's values (inputs
// from Mat::external may have no slack after them).
//
// Threading: work items are (group, block of pixel tiles, chunk of output-channel
// panels); an item im2cols its block once, then runs every panel of its chunk over
// the block's tiles (the panel's weights stay in L1, the block in L2). The K
// reduction is never split, so the result is bit-identical for every thread count.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "kernels/conv_kernels.h"
#include "x86/f32_gemm_x86.h"

KESTREL_X86_NS_BEGIN
namespace conv_gemm {

// im2col floats per thread that a block aims for (384 KiB: a share of a 1-2 MiB L2);
// a block has at least one tile whatever K is.
constexpr size_t kBlockFloats = 96 * 1024;
// The same for a block read in place (1x1 stride 1; no copy): larger, so that the
// deep layers of small maps (MobileNet's 14x14x512, 7x7x1024) hold all their pixels in
// one block and stream each panel's weights once.
constexpr size_t kDirectBlockFloats = 128 * 1024;
constexpr size_t kMaxBlockTiles = 16;
// Tiles a thread's share of the pixels has at least for the spatial split (run_impl).
constexpr size_t kMinShareTiles = 4;
// Geometries whose single-tile im2col would exceed this many bytes per thread are
// left to the reference.
constexpr size_t kMaxScratchBytes = size_t(64) << 20;
// The channel tiles take 1x1 layers of a planar input up to this many pixels (14x14),
// and of a blocked one, read in place, up to kMaxBlockedPixels (prefers_channel_tiles).
constexpr size_t kMaxDirectPixels = 256;

struct Plan {
  int in_per_group, out_per_group, panels;
  size_t k;            // reduction length
  size_t pixels;       // out_h * out_w
  size_t tiles;        // pixel tiles of NR
  size_t block_tiles;  // most tiles one im2col block holds
  bool direct;         // B is the input itself
};

// The channel tiles of an im2col block run K in slices of kKSlice (the accumulators
// parked between slices, gemm::Resume) where K > 2 * kKSlice, so that a panel's slice
// of weights (32 KiB with AVX-512) stays in L1 across the block's tiles and the block's
// slice in L2; and then (kOneBlock) a map of at most kOneBlockPixels pixels im2cols all
// of them into one block, within kMaxScratchBytes, so that the weights stream once.
// ResNet-18's 7x7x512 3x3 layers (K = 4608) took 2.9 ms at one thread cut into blocks
// of one 48-pixel tile (all 9.4 MB of weights streamed for the 48 pixels and again for
// the 49th), 3.3 in one block without slices (the block, a panel and the next one
// overflowed L2), and 2.0 with both (Intel Xeon, 2026-11-25).
constexpr size_t kKSlice = 256;
constexpr size_t kOneBlockPixels = 256;

inline bool slices_k(size_t k) { return k > 2 * kKSlice; }

template <int MR, int NR, bool kOneBlock = false>
Plan plan_of(const ConvGeometry& g) {
  Plan p;
  p.in_per_group = g.in_c / g.group;
  p.out_per_group = g.out_c / g.group;
  p.panels = (p.out_per_group + MR - 1) / MR;
  p.k = static_cast<size_t>(p.in_per_group) * g.kh * g.kw;
  p.pixels = static_cast<size_t>(g.out_h) * g.out_w;
  p.tiles = (p.pixels + NR - 1) / NR;
  p.direct = g.is_pointwise();
  p.block_tiles = std::clamp<size_t>((p.direct ? kDirectBlockFloats : kBlockFloats) / (p.k * NR), 1, kMaxBlockTiles);
  if (kOneBlock && !p.direct && slices_k(p.k) && p.pixels <= kOneBlockPixels &&
      p.tiles * NR <= kMaxScratchBytes / sizeof(float) / p.k) {
    p.block_tiles = std::max(p.block_tiles, p.tiles);
  }
  return p;
}

// The packed weights' 4-byte units: floats, or (A = uint16_t, a half-weight kernel) two
// IEEE halves each, rounded up to a 64-byte line so that the bias floats after them
// start on one.
template <int MR, class A = float>
size_t weight_floats(const Plan& p, int group) {
  const size_t n = static_cast<size_t>(group) * p.panels * p.k * MR;
  if constexpr (std::is_same_v<A, float>) {
    return n;
  } else {
    static_assert(std::is_same_v<A, uint16_t>, "weights are floats or IEEE halves");
    return half_units(n);
  }
}

// The weights at the start of a packing of `weight_floats<MR, A>` units.
template <class A>
const A* packed_weights(const float* packed) {
  return reinterpret_cast<const A*>(packed);
}

// Any valid geometry whose scratch and packed weights stay within bounds.
template <int MR, int NR>
bool supports_any(const ConvGeometry& g) {
  if (g.in_c <= 0 || g.out_c <= 0 || g.in_h <= 0 || g.in_w <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  if (g.kh <= 0 || g.kw <= 0 || g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0) return false;
  if (g.group <= 0 || g.in_c % g.group != 0 || g.out_c % g.group != 0) return false;
  if (g.pad_top < 0 || g.pad_left < 0) return false;
  const Plan p = plan_of<MR, NR>(g);
  if (p.k > kMaxScratchBytes / (sizeof(float) * NR)) return false;
  return (static_cast<size_t>(g.out_c) + static_cast<size_t>(MR) * g.group) * p.k < (size_t(1) << 30);
}

template <int MR, int NR, class A = float>
size_t packed_floats(const ConvGeometry& g) {
  const Plan p = plan_of<MR, NR>(g);
  return weight_floats<MR, A>(p, g.group) + static_cast<size_t>(g.group) * p.panels * MR;
}

// A = uint16_t stores the weights as halves: the layer offers such a kernel only
// weights that are halves already (ConvGeometry::half_weights), so nothing rounds.
template <int MR, int NR, class A = float>
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const Plan p = plan_of<MR, NR>(g);
  float* pb = packed + weight_floats<MR, A>(p, g.group);
  A* const all = reinterpret_cast<A*>(packed);
  auto to_a = [](float x) -> A {
    if constexpr (std::is_same_v<A, float>) {
      return x;
    } else {
      return float_to_half(x);
    }
  };
  for (int gi = 0; gi < g.group; ++gi) {
    for (int panel = 0; panel < p.panels; ++panel) {
      A* dst = all + (static_cast<size_t>(gi) * p.panels + panel) * p.k * MR;
      for (int r = 0; r < MR; ++r) {
        const int o = panel * MR + r;
        const bool real = o < p.out_per_group;
        const int oc = gi * p.out_per_group + o;
        const float* src = weight + static_cast<size_t>(oc) * p.k;
        for (size_t kk = 0; kk < p.k; ++kk) dst[kk * MR + r] = to_a(real ? src[kk] : 0.f);
        *pb++ = real && bias ? bias[oc] : 0.f;
      }
    }
  }
}

template <int MR, int NR, bool kOneBlock = false>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plan p = plan_of<MR, NR, kOneBlock>(g);
  return (p.direct ? 1 : p.block_tiles) * NR * p.k * sizeof(float);
}

inline size_t no_workspace(const ConvGeometry&) { return 0; }

// Writes the im2col tiles of output pixels [p_begin, p_begin + ncols) of one group
// (its first input channel at in) into dst, [tile][K][NR], zero-filling padding taps
// and the unused columns of the last tile.
template <int NR>
void im2col_block(const ConvGeometry& g, const Plan& pl, const float* in, size_t in_cstep, size_t p_begin,
                  size_t ncols, float* dst) {
  const size_t end = p_begin + ncols;
  for (size_t p = p_begin; p < end;) {
    // A run of columns in one output row and one tile.
    const size_t c = p - p_begin, col = c % NR;
    const int oy = static_cast<int>(p / g.out_w), ox = static_cast<int>(p % g.out_w);
    const int n = static_cast<int>(std::min({static_cast<size_t>(g.out_w - ox), end - p, NR - col}));
    float* d = dst + (c / NR) * pl.k * NR + col;
    const int iy_base = oy * g.sh - g.pad_top, ix_base = ox * g.sw - g.pad_left;
    for (int ic = 0; ic < pl.in_per_group; ++ic) {
      const float* chan = in + ic * in_cstep;
      for (int ky = 0; ky < g.kh; ++ky) {
        const int iy = iy_base + ky * g.dh;
        if (iy < 0 || iy >= g.in_h) {
          for (int kx = 0; kx < g.kw; ++kx, d += NR) std::fill(d, d + n, 0.f);
          continue;
        }
        const float* row = chan + static_cast<size_t>(iy) * g.in_w;
        for (int kx = 0; kx < g.kw; ++kx, d += NR) {
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
            const float* s = row + ix0;
            const int sw = g.sw;
            for (; j < j1; ++j) d[j] = s[j * sw];
          }
          for (; j < n; ++j) d[j] = 0.f;
        }
      }
    }
    p += n;
  }
  const size_t tail = ncols % NR;
  if (tail != 0) {
    float* d = dst + (ncols / NR) * pl.k * NR;
    for (size_t kk = 0; kk < pl.k; ++kk) std::fill(d + kk * NR + tail, d + (kk + 1) * NR, 0.f);
  }
}

// The partial last tile of a directly read input, copied into [K][NR] with zero
// columns after its n pixels.
template <int NR>
void copy_tail(const float* in, size_t in_cstep, size_t k, int n, float* dst) {
  for (size_t kk = 0; kk < k; ++kk, dst += NR) {
    std::memcpy(dst, in + kk * in_cstep, sizeof(float) * n);
    std::fill(dst + n, dst + NR, 0.f);
  }
}

// Register tiles with pixels along the vectors: MR output channels x NV vectors.
template <class V_, int MR_, int NV>
struct PixelTiles {
  using A = float;  // weights are broadcast one by one: floats only
  using V = V_;
  static constexpr int MR = MR_, NR = NV * V::kWidth;
  // Broadcasts nothing from B: a partial tile of a directly read input is copied.
  static constexpr bool kReadsPartialInPlace = false;
  // Never given a slice of K (run_impl slices only for the channel tiles).
  template <class Epi>
  static KESTREL_X86_INLINE void run(size_t k, const float* a, const float* bias, const float* b, size_t ldb, float* c,
                                     size_t ldc, int mr, int nr, const A*, const Epi& epi, const gemm::Resume&) {
    gemm::any_tile<V, MR, NV>(k, a, bias, gemm::StridedRows{b, ldb}, c, ldc, mr, nr, epi);
  }
};

// Register tiles with output channels along the vectors: MV vectors x NP pixels,
// over im2col tiles of NV vectors' worth of pixels (the same blocks as PixelTiles).
template <class V_, int MV, int NP, int NV, class A_ = float>
struct ChannelTiles {
  using A = A_;  // weights: floats or halves (widened a panel slice at a time)
  using V = V_;
  static constexpr int MR = MV * V::kWidth, NR = NV * V::kWidth;
  // Broadcasts read only the tile's own pixels, so a partial tile reads in place.
  static constexpr bool kReadsPartialInPlace = true;
  template <class Epi>
  static KESTREL_X86_INLINE void run(size_t k, const float* a, const float* bias, const float* b, size_t ldb,
                                     float* c, size_t ldc, int mr, int nr, const A* next_panel, const Epi& epi,
                                     const gemm::Resume& rs) {
    gemm::any_ctile<V, MV, NP, Epi, gemm::PlanarPacks, gemm::StridedRows, A>(k, a, bias, gemm::StridedRows{b, ldb}, c,
                                                                             ldc, mr, nr, next_panel, epi, rs);
  }
};

template <class T, class Epi>
void run_impl(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  constexpr int MR = T::MR, NR = T::NR;
  const Plan pl = plan_of<MR, NR, T::kReadsPartialInPlace>(g);
  const int threads = std::max(1, ctx.num_threads);
  // Work items: blocks of pixel tiles x chunks of panels, a few per thread so that
  // static scheduling balances them. Few tiles (7x7, 14x14 maps: 2 to 5 tiles, the
  // last one short) are not split among threads at all, the panels are: a 48 + 1
  // pixel split left one of 2 threads idle. An im2col block splits into fewer chunks
  // than a directly read one, since every chunk builds its block's im2col again.
  const bool few_tiles = threads > 1 && pl.tiles < static_cast<size_t>(4 * threads) && pl.tiles <= pl.block_tiles;
  // Otherwise, with several threads, thread t takes the t-th share of the map's pixels
  // (not cut on the tile grid, so that the shares are about equal) with every
  // output channel, in blocks of whole tiles: the rows that the depthwise kernels'
  // thread t reads next (they split by rows too), so maps stay in the cache of the
  // core that wrote them. Splitting output channels instead had every thread read the
  // whole input, half of it from the other core: MobileNet v1's depthwise layers then
  // did not scale at 2 threads, and with the two cores on different CCDs the network
  // took 8.5 ms instead of 8.1.
  // Only where a thread's share of the map outweighs the weights (at least as many
  // pixels as output channels: every thread reads all the weights, so they must be the
  // smaller operand) and keeps a few tiles. MobileNet-SSD's 19x19 and 10x10 layers,
  // 512-1024 channels, ran up to 1.7x slower split by pixels at 2 threads on the 16-CPU
  // Xeon, and MobileNet v1's 28x28 layers at 16 threads.
  const size_t share_pixels = pl.pixels / static_cast<size_t>(threads);
  const bool spatial = threads > 1 && !few_tiles && share_pixels >= static_cast<size_t>(pl.out_per_group) &&
                       share_pixels >= kMinShareTiles * NR;
  // Where thread t's share starts: rounded to a multiple of 16 pixels (a 64-byte line of
  // every output channel, whose rows start on a line), so that no line is written by
  // two threads. Cut anywhere, the shared lines of the 28x28 layers ping-ponged between
  // the cores: 28x28x256 -> 256 took 0.36 ms at 2 threads against 0.31 (Intel Xeon).
  auto cut = [&](size_t t) {
    return t >= static_cast<size_t>(threads) ? pl.pixels : std::min(pl.pixels, (pl.pixels * t / threads + 8) / 16 * 16);
  };
  size_t share_tiles = 1;  // of the largest share
  for (int t = 0; t < threads; ++t) share_tiles = std::max(share_tiles, (cut(t + 1) - cut(t) + NR - 1) / NR);
  const size_t thread_blocks = (share_tiles + pl.block_tiles - 1) / pl.block_tiles;
  const size_t block_tiles =
      few_tiles ? pl.tiles
      : spatial ? (share_tiles + thread_blocks - 1) / thread_blocks
                : std::clamp<size_t>((pl.tiles + threads - 1) / threads, 1, pl.block_tiles);
  const size_t blocks = spatial ? thread_blocks * threads : (pl.tiles + block_tiles - 1) / block_tiles;
  // Pixels [p0, p0 + ncols) of block b.
  auto block_range = [&](size_t b, size_t* p0, size_t* ncols) {
    size_t begin = b * block_tiles * NR, end = pl.pixels;
    if (spatial) {
      const size_t t = b / thread_blocks, share0 = cut(t);
      end = cut(t + 1);
      begin = share0 + (b % thread_blocks) * block_tiles * NR;
    }
    *p0 = std::min(begin, end);
    *ncols = std::min(block_tiles * NR, end - *p0);
  };
  const size_t base_items = static_cast<size_t>(g.group) * blocks;
  const size_t want = threads == 1 || spatial ? 1 : (pl.direct ? 4 : 2) * static_cast<size_t>(threads);
  size_t chunks = std::min<size_t>(pl.panels, (want + base_items - 1) / base_items);
  const size_t chunk_panels = (pl.panels + chunks - 1) / chunks;
  chunks = (pl.panels + chunk_panels - 1) / chunk_panels;
  const long items = static_cast<long>(base_items * chunks);
  using A = typename T::A;
  const float* bias_all = packed + weight_floats<MR, A>(pl, g.group);
  // K in slices (channel tiles of an im2col block only; see kKSlice), the accumulators
  // of a thread's item parked after its block in the scratch: [panel][pixel][MR].
  const bool sliced = T::kReadsPartialInPlace && !pl.direct && slices_k(pl.k);
  const size_t kslice = sliced ? kKSlice : pl.k;

#pragma omp parallel num_threads(threads)
  {
    // The (group, block) whose im2col the thread's scratch holds: a thread's next item
    // is often the same block for other panels (few tiles, split by panels).
    size_t cached = static_cast<size_t>(-1);
#pragma omp for schedule(static)
    for (long item = 0; item < items; ++item) {
      // Chunk-major, so that a thread's contiguous share of items covers every block
      // (short last blocks included) for its panels.
      const size_t chunk = item / base_items, rest = item % base_items;
      const size_t blk = rest % blocks;
      const int gi = static_cast<int>(rest / blocks);
      size_t p0 = 0, ncols = 0;
      block_range(blk, &p0, &ncols);
      if (ncols == 0) continue;
      const size_t ntiles = (ncols + NR - 1) / NR, p_end = p0 + ncols;
      const float* in_g = in + static_cast<size_t>(gi) * pl.in_per_group * in_cstep;
      float* cols = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
      float* parked = sliced ? cols + block_tiles * NR * pl.k : nullptr;
      // A half-weight kernel's widened panel slice (channel_workspace_per_thread_bytes).
      float* wide = cols + (pl.direct ? 1 : pl.block_tiles) * NR * pl.k +
                    (sliced ? static_cast<size_t>(pl.panels) * pl.block_tiles * NR * MR : 0);
      const bool direct_tail = pl.direct && ncols % NR != 0 && !T::kReadsPartialInPlace;
      if (!pl.direct && cached != rest) {
        im2col_block<NR>(g, pl, in_g, in_cstep, p0, ncols, cols);
        cached = rest;
      }
      if (direct_tail) copy_tail<NR>(in_g + p0 + ncols / NR * NR, in_cstep, pl.k, static_cast<int>(ncols % NR), cols);
      const int panel0 = static_cast<int>(chunk * chunk_panels);
      const int panel_end = static_cast<int>(std::min<size_t>(pl.panels, (chunk + 1) * chunk_panels));
      for (size_t k0 = 0; k0 < pl.k; k0 += kslice) {
        const size_t kn = std::min(kslice, pl.k - k0);
        for (int panel = panel0; panel < panel_end; ++panel) {
          const size_t gp = static_cast<size_t>(gi) * pl.panels + panel;
          const A* a = packed_weights<A>(packed) + gp * pl.k * MR;
          const int mr = std::min(MR, pl.out_per_group - panel * MR);
          float* out_p = out + (static_cast<size_t>(gi) * pl.out_per_group + panel * MR) * out_cstep;
          float* park = sliced ? parked + static_cast<size_t>(panel - panel0) * block_tiles * NR * MR : nullptr;
          const gemm::Resume rs{k0 > 0 ? park : nullptr, k0 + kn < pl.k ? park : nullptr};
          const float* af = gemm::panel_floats<typename T::V>(a + k0 * MR, kn * MR, wide);
          for (size_t t = 0; t < ntiles; ++t) {
            const size_t pt = p0 + t * NR;
            const int nr = static_cast<int>(std::min<size_t>(NR, p_end - pt));
            const bool from_input = pl.direct && (nr == NR || T::kReadsPartialInPlace);
            const float* b = from_input ? in_g + pt : pl.direct ? cols : cols + (t * pl.k + k0) * NR;
            const size_t ldb = from_input ? in_cstep : NR;
            // The block's first tile brings the next panel's weights (their slice)
            // towards L2.
            const A* next = t == 0 && panel + 1 < panel_end ? a + (pl.k + k0) * MR : nullptr;
            T::run(kn, af, bias_all + gp * MR, b, ldb, out_p + pt, out_cstep, mr, nr, next, epi,
                   rs.at(t * NR * MR));
          }
        }
      }
    }
  }
}

template <class V, int MR, int NV>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
    run_impl<PixelTiles<V, MR, NV>>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
  });
}

// --- the two kernels' geometry sets ---------------------------------------------------

// 1x1, one group, no padding, dilation 1, stride 1 or 2 on each axis.
template <int MR, int NR>
bool supports_1x1(const ConvGeometry& g) {
  const bool one_by_one = g.kh == 1 && g.kw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
  const bool strides = (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2);
  if (!one_by_one || !strides || !supports_any<MR, NR>(g)) return false;
  return g.pad_top == 0 && g.pad_left == 0 && g.out_h == (g.in_h - 1) / g.sh + 1 &&
         g.out_w == (g.in_w - 1) / g.sw + 1;
}

// Everything but the 3x3 depthwise convolutions of stride <= 2 (their own kernel's).
template <int MR, int NR>
bool supports_general(const ConvGeometry& g) {
  if (g.is_depthwise() && g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && g.sh <= 2 && g.sw <= 2) return false;
  return supports_any<MR, NR>(g);
}

}  // namespace conv_gemm
KESTREL_X86_NS_END
