// The channel-tile half of the x86 convolutions (f32_conv_32x12_avx512.cpp,
// f32_conv_16x6_avx2.cpp): MV vectors of output channels x NP pixels per register tile
// (gemm::ctile), for maps with few pixels, over the plan, packing and im2col of
// f32_conv_sgemm_x86.h. A 1x1 stride-1 input is read as pixel groups (copied, or in
// place where it is blocked); the others go through run_impl's im2col blocks.
#pragma once
#include "x86/f32_conv_sgemm_x86.h"

KESTREL_X86_NS_BEGIN
namespace conv_gemm {

// A directly read input for the channel tiles (1x1 stride 1 on maps of at most
// kMaxDirectPixels pixels, so all of them form one block) is first copied into groups
// of NP pixels, each [K][NP], the last one [K][rest]: a tile's broadcasts then read one
// contiguous stream instead of K rows a channel step apart. MobileNet v1's 14x14x512
// 1x1 layers took 0.64 ms reading the rows in place and 0.60 from the groups at one
// thread (kestrel-microbench), 0.42 and 0.35 at two in the network (Intel Xeon,
// AVX-512, 2026-11-25); its 7x7x1024 one 0.69 and 0.62 at one thread. Copies rows
// [k0, k1) of the K.
template <class V, int NP>
void pack_pixel_groups(const float* in, size_t in_cstep, size_t k, size_t k0, size_t k1, size_t pixels, float* dst) {
  constexpr int W = V::kWidth;
  const size_t full = pixels / NP;
  const int rest = static_cast<int>(pixels % NP);
  auto copy = [](const float* s, float* d, int n) __attribute__((always_inline)) {
    int j = 0;
    for (; j + W <= n; j += W) V::storeu(d + j, V::loadu(s + j));
    if (j < n) V::store_partial(d + j, V::load_partial(s + j, n - j), n - j);
  };
  for (size_t kk = k0; kk < k1; ++kk) {
    const float* row = in + kk * in_cstep;
    for (size_t gi = 0; gi < full; ++gi) copy(row + gi * NP, dst + (gi * k + kk) * NP, NP);
    if (rest) copy(row + full * NP, dst + full * NP * k + kk * rest, rest);
  }
}

// Whether the channel tiles copy the input into pixel groups (within kMaxScratchBytes).
template <int MR>
bool packs_pixel_groups(const ConvGeometry& g) {
  if (g.group != 1 || !g.is_pointwise()) return false;
  const Plan pl = plan_of<MR, MR>(g);
  return pl.pixels <= kMaxScratchBytes / sizeof(float) / pl.k;
}

// A blocked input of more than kMaxDirectPixels pixels is read in place at every
// thread count (run_channels_direct); the others are copied into pixel groups of this
// many floats in thread 0's scratch.
inline size_t pixel_group_floats(const ConvGeometry& g, const Plan& pl) {
  return g.in_pack != 1 && pl.pixels > kMaxDirectPixels ? 0 : pl.pixels * pl.k;
}

// The same copy from a blocked input (W-channel blocks [kb0, kb1) of K): each group
// [K / W][its pixels][W], so that a tile reads B with the blocked step pattern.
template <class V, int NP>
void pack_block_groups(const float* in, size_t in_cstep, size_t k, size_t kb0, size_t kb1, size_t pixels,
                       float* dst) {
  constexpr int W = V::kWidth;
  const size_t full = pixels / NP, rest = pixels % NP;
  for (size_t kb = kb0; kb < kb1; ++kb) {
    const float* src = in + kb * in_cstep;
    for (size_t gi = 0; gi < full; ++gi) {
      std::memcpy(dst + gi * NP * k + kb * NP * W, src + gi * NP * W, sizeof(float) * NP * W);
    }
    if (rest) std::memcpy(dst + full * NP * k + kb * rest * W, src + full * NP * W, sizeof(float) * rest * W);
  }
}

// P: the operands' layouts (gemm::Packs). One thread reads a blocked input in place:
// its pixel groups are already runs of W-channel pixel vectors. Several threads copy it
// into groups as they copy a planar one, each a share of the channel blocks: read in
// place, every line of it ended up in both cores' caches, and the depthwise layer that
// writes it next (MobileNet's) waited on invalidating them: 0.135 ms at 2 threads against
// 0.042 at one (14x14x512, AMD EPYC).
template <class V, int MV, int NP, class P, class A, class Epi>
void run_channels_direct(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                         size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  constexpr int W = V::kWidth, MR = MV * W;
  const Plan pl = plan_of<MR, MR>(g);
  const size_t full = pl.pixels / NP;
  const int rest = static_cast<int>(pl.pixels % NP);
  const A* weights = packed_weights<A>(packed);
  const float* bias_all = packed + weight_floats<MR, A>(pl, 1);
  const int threads = std::max(1, ctx.num_threads);
  // A blocked map of more than 14x14 pixels is read in place at any thread count, each
  // thread its own pixel groups for every panel, so that no line of it is read by both
  // cores: its copy into groups (1.6 MB at 56x56x128) took MobileNet v1's 56x56 1x1
  // layers from 0.58 to 0.77 ms at 2 threads.
  const bool by_pixels = P::kIn != 0 && threads > 1 && pl.pixels > kMaxDirectPixels;
  const bool in_place = P::kIn != 0 && (threads == 1 || by_pixels);
  // The threads copy a share of the rows each into thread 0's scratch (one copy, not
  // one per thread: at 2 threads a copy per thread cost what the groups gained), then
  // split the tiles.
  float* groups = static_cast<float*>(ctx.scratch_of(0));
  const size_t groups_floats = pixel_group_floats(g, pl);
  // B of pixel group gi from k step k0 on, and the distance between its k rows (planar
  // groups) or channel blocks (blocked input). A group of np pixels starts at gi * NP
  // * K in the copy, [K][np] (planar) or [K / W][np][W] (blocked).
  auto group_b = [&](size_t gi, size_t k0, size_t* ldb) -> const float* {
    const size_t np = gi < full ? NP : static_cast<size_t>(rest);
    if (in_place) {
      *ldb = in_cstep;
      return in + (k0 / W) * in_cstep + gi * NP * W;
    }
    *ldb = P::kIn ? np * W : np;
    return groups + gi * NP * pl.k + k0 * np;
  };
  // C of panel `panel` at pixel group gi, and the distance between its rows / blocks.
  const size_t ldc = out_cstep;
  const size_t out_px = P::kOut ? W : 1;
#pragma omp parallel num_threads(threads)
  {
    const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
    if constexpr (P::kIn == 0) {
      pack_pixel_groups<V, NP>(in, in_cstep, pl.k, pl.k * t / n, pl.k * (t + 1) / n, pl.pixels, groups);
    } else if (!in_place) {
      const size_t nb = pl.k / W;
      pack_block_groups<V, NP>(in, in_cstep, pl.k, nb * t / n, nb * (t + 1) / n, pl.pixels, groups);
    }
#pragma omp barrier
    // K in slices where it is long (kKSlice), the accumulators parked in the thread's
    // own scratch after the groups' room: [pixel][MR]; then a half-weight kernel's
    // widened panel slice.
    const size_t kslice = slices_k(pl.k) ? kKSlice : pl.k;
    float* parked = static_cast<float*>(ctx.scratch_of(static_cast<int>(t))) + groups_floats;
    float* wide = parked + (slices_k(pl.k) ? pl.pixels * MR : 0);
    // Groups [g0, g1) of one panel, `next` the weights of the panel the thread runs next.
    const size_t ngroups = full + (rest ? 1 : 0);
    auto run_groups = [&](int panel, size_t g0, size_t g1, const A* next) {
      const A* a = weights + static_cast<size_t>(panel) * pl.k * MR;
      const float* bias = bias_all + static_cast<size_t>(panel) * MR;
      const int mr = std::min(MR, pl.out_per_group - panel * MR);
      float* c = out + static_cast<size_t>(panel) * (P::kOut ? MV : MR) * out_cstep;  // its first row / block
      for (size_t k0 = 0; k0 < pl.k; k0 += kslice) {
        const size_t kn = std::min(kslice, pl.k - k0);
        const gemm::Resume rs{k0 > 0 ? parked : nullptr, k0 + kn < pl.k ? parked : nullptr};
        // The first groups bring the next panel's weights (this slice of them) towards
        // L2, a 64-byte line per k step, so spread over kPrefetchTiles groups.
        const char* next_slice = next ? reinterpret_cast<const char*>(next + k0 * MR) : nullptr;
        const float* af = gemm::panel_floats<V>(a + k0 * MR, kn * MR, wide);
        for (size_t gi = g0; gi < std::min(g1, full); ++gi) {
          size_t ldb = 0;
          const float* b = group_b(gi, k0, &ldb);
          const size_t nth = gi - g0;
          if (next && nth < static_cast<size_t>(gemm::kPrefetchTiles<V, MV, A>)) {
            gemm::ctile<V, MV, NP, true, Epi, P>(kn, af, bias, gemm::StridedRows{b, ldb}, c + gi * NP * out_px, ldc, mr,
                                                 next_slice + nth * kn * 64, epi, rs.at(gi * NP * MR));
          } else {
            gemm::ctile<V, MV, NP, false, Epi, P>(kn, af, bias, gemm::StridedRows{b, ldb}, c + gi * NP * out_px, ldc,
                                                  mr, nullptr, epi, rs.at(gi * NP * MR));
          }
        }
        if (rest && g1 == ngroups) {
          size_t ldb = 0;
          const float* b = group_b(full, k0, &ldb);
          gemm::any_ctile<V, MV, NP, Epi, P>(kn, af, bias, gemm::StridedRows{b, ldb}, c + full * NP * out_px, ldc, mr,
                                             rest, nullptr, epi, rs.at(full * NP * MR));
        }
      }
    };
    if (by_pixels) {
      const size_t g0 = ngroups * t / n, g1 = ngroups * (t + 1) / n;
      for (int panel = 0; panel < pl.panels; ++panel) {
        run_groups(panel, g0, g1, panel + 1 < pl.panels ? weights + static_cast<size_t>(panel + 1) * pl.k * MR : nullptr);
      }
    } else {
      // Thread t's share of the (panel, group) pairs, panel by panel: whole panels split
      // unevenly where they are few (MobileNet v2's 14x14 576 -> 96 layer: 3 panels, 2
      // for one thread and 1 for the other, took 0.112 ms at 2 threads).
      const size_t pairs = static_cast<size_t>(pl.panels) * ngroups, end = pairs * (t + 1) / n;
      for (size_t i = pairs * t / n; i < end;) {
        const int panel = static_cast<int>(i / ngroups);
        const size_t g0 = i % ngroups, g1 = std::min(ngroups, g0 + (end - i));
        i += g1 - g0;
        run_groups(panel, g0, g1, i < end ? weights + static_cast<size_t>(panel + 1) * pl.k * MR : nullptr);
      }
    }
  }
}

template <class V, int MV, int NP, int NV, class A>
void run_channels(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                  size_t out_cstep, const KernelContext& ctx) {
  constexpr int W = V::kWidth;
  gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
    if (!packs_pixel_groups<MV * W>(g)) {
      run_impl<ChannelTiles<V, MV, NP, NV, A>>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else if (g.in_pack == 1 && g.out_pack == 1) {
      run_channels_direct<V, MV, NP, gemm::Packs<0, 0>, A>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else if (g.in_pack == 1) {
      run_channels_direct<V, MV, NP, gemm::Packs<0, W>, A>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else if (g.out_pack == 1) {
      run_channels_direct<V, MV, NP, gemm::Packs<W, 0>, A>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else {
      run_channels_direct<V, MV, NP, gemm::Packs<W, W>, A>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    }
  });
}

// Thread 0's holds the pixel groups (run_channels_direct), the others' room for them
// goes unused (per-thread scratch, unlike the shared workspace, is there in every
// caller, the fused layers' bands included); then each thread's parked accumulators,
// and a half-weight kernel's widened panel slice (A = uint16_t).
template <int MR, int NR, class A = float>
size_t channel_workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plan pl = plan_of<MR, NR, true>(g);
  const size_t wide = std::is_same_v<A, float> ? 0 : (slices_k(pl.k) ? kKSlice : pl.k) * MR;
  if (packs_pixel_groups<MR>(g)) {
    const Plan pg = plan_of<MR, NR>(g);
    return (pixel_group_floats(g, pg) + (slices_k(pg.k) ? pg.pixels * MR : 0) + wide) * sizeof(float);
  }
  const size_t parked = !pl.direct && slices_k(pl.k) ? static_cast<size_t>(pl.panels) * pl.block_tiles * NR * MR : 0;
  return workspace_per_thread_bytes<MR, NR, true>(g) + (parked + wide) * sizeof(float);
}

// Which orientation a geometry prefers, from a cycle model of the register tiles:
// a tile step of m broadcasts and n vector loads feeding m * n FMAs takes
// max(m * n, m + n) / 2 cycles (2 FMA and 2 load ports), summed over the tiles that
// cover the pixels, per panel, plus about a cycle per output to write the channel tiles
// out through their buffer (spread over the K steps). A blocked output of a blocked
// input (which reaches the model only above 56x56) takes each pixel's accumulators as
// they are, with no such term (MobileNet v1's 112x112 1x1 layer). From a planar input
// the term stays for blocked outputs too: without it EfficientNet-B0's and MobileNet
// v3's 7x7 1x1 layers took channel tiles writing blocks and ran 5-15% slower (AMD EPYC,
// bench/ab).
inline double tile_step_cycles(int m, int n) { return std::max(m * n, m + n) / 2.0; }

template <int W, int MRp, int NVp, int MV, int NP>
bool prefers_channel_tiles(const ConvGeometry& g) {
  const double px = static_cast<double>(g.out_h) * g.out_w;
  // A blocked input is read in place, with no copy into pixel groups: there the channel
  // tiles matched the pixel tiles on MobileNet v1's 28x28 and 56x56 layers, and the maps
  // around them stay blocked (the depthwise layers read them in place too). Larger
  // blocked maps go by the model.
  constexpr double kMaxBlockedPixels = 3136;  // 56x56 and less
  if (g.is_pointwise() && g.in_pack != 1 && px <= kMaxBlockedPixels) return true;
  if (g.is_pointwise() && g.in_pack == 1 && px > static_cast<double>(kMaxDirectPixels)) return false;
  const double oc = g.out_c / g.group;
  const double k = static_cast<double>(g.in_c / g.group) * g.kh * g.kw;
  const long p = static_cast<long>(px), nr = NVp * W, tail_vecs = (p % nr + W - 1) / W;
  const double pixel = std::ceil(oc / MRp) * (static_cast<double>(p / nr) * tile_step_cycles(MRp, NVp) +
                                               (tail_vecs ? tile_step_cycles(MRp, static_cast<int>(tail_vecs)) : 0));
  const double channel = std::ceil(oc / (MV * W)) * (static_cast<double>(p / NP) * tile_step_cycles(NP, MV) +
                                                       static_cast<double>(p % NP / 4) * tile_step_cycles(4, MV) +
                                                       static_cast<double>(p % 4) * tile_step_cycles(1, MV)) +
                         (g.out_pack == 1 || g.in_pack == 1 ? oc * px / k : 0);
  return channel < 1.1 * pixel;
}

// Blocked operands (W lanes) only on the pixel-group path, whose channel counts (and so
// its K slices and partial panels) are whole blocks.
template <int W, int MR>
bool blocked_ok(const ConvGeometry& g) {
  if (g.planar()) return true;
  return g.packs_within(W) && g.in_c % W == 0 && g.out_c % W == 0 && packs_pixel_groups<MR>(g);
}

// The channel-tile kernels take the geometries of the pixel-tile ones (MRp x NVp
// vectors) that prefer channel tiles.
// A half-weight kernel (A = uint16_t) takes only geometries whose weights are halves.
template <int W, int MRp, int NVp, int MV, int NP, int NV, class A = float>
bool supports_1x1_channels(const ConvGeometry& g) {
  if (std::is_same_v<A, uint16_t> && !g.half_weights) return false;
  return supports_1x1<MV * W, NV * W>(g) && prefers_channel_tiles<W, MRp, NVp, MV, NP>(g) &&
         blocked_ok<W, MV * W>(g);
}

template <int W, int MRp, int NVp, int MV, int NP, int NV, class A = float>
bool supports_general_channels(const ConvGeometry& g) {
  if (std::is_same_v<A, uint16_t> && !g.half_weights) return false;
  return supports_general<MV * W, NV * W>(g) && prefers_channel_tiles<W, MRp, NVp, MV, NP>(g) &&
         blocked_ok<W, MV * W>(g);
}

// The entry of a channel-tile kernel (MV vectors x NP pixels over NV-vector im2col
// tiles), claiming what it takes from the pixel-tile kernels MRp x NVp: 1x1 only, or
// any geometry. An ISA's translation unit names only its tile. A = uint16_t: the
// half-weight twin (ConvKernel::half_weights), its weights kept as halves.
template <class V, int MV, int NP, int NV, int MRp, int NVp, class A = float>
constexpr ConvKernel channel_kernel(const char* name, Isa isa, bool one_by_one) {
  constexpr int W = V::kWidth, MR = MV * W, NR = NV * W;
  return {name,
          isa,
          one_by_one ? supports_1x1_channels<W, MRp, NVp, MV, NP, NV, A>
                     : supports_general_channels<W, MRp, NVp, MV, NP, NV, A>,
          packed_floats<MR, NR, A>,
          pack<MR, NR, A>,
          no_workspace,
          channel_workspace_per_thread_bytes<MR, NR, A>,
          1e-4,
          run_channels<V, MV, NP, NV, A>,
          W,
          false,
          std::is_same_v<A, uint16_t>};
}

}  // namespace conv_gemm
KESTREL_X86_NS_END
