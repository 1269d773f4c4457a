// bf16 1x1 convolution on AVX512-BF16 (Precision::kBf16, the layers bf16_pointwise()
// names): 32 output channels (2 vectors) x 12 pixels per register tile, over the input
// channels in pairs. vdpbf16ps adds w[2q + 1] * x[2q + 1], then w[2q] * x[2q], into each
// fp32 lane, so one instruction does two multiply-adds a lane, twice the fp32 FMA rate
// on this hardware (bench/bf16/RESULTS.md).
//
// Layouts
//   packed weights  [panel][K / 2][32] dwords, each the bf16 pair (w[2q], w[2q + 1]) of
//                   one output channel (the low half w[2q]), then the bias as fp32
//                   [panel][32]; missing channels and an odd K's last half are zero
//   pixel groups    the input rounded to bf16 pairs: groups of 12 pixels, each
//                   [K / 2][12] dwords, the last [K / 2][rest]; the whole map's in
//                   thread 0's scratch, or a chunk of them in each thread's (streamed)
// Threads convert a share of the groups each, then split the (panel, group) pairs; a
// large map's chunks are converted and used by one thread each (run_streamed).
// Every output is the same chain whatever the thread count: conv_reference_bf16's.
#include <omp.h>

#include <algorithm>

#include "kernels/conv_kernels.h"
#include "x86/dot_plan_x86.h"
#include "x86/f32_gemm_x86.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

using V = F32x16;
constexpr int W = V::kWidth, MV = 2, MR = MV * W, NP = 12;
// Pixel groups beyond this many bytes are left to the fp32 kernels.
constexpr size_t kMaxGroupBytes = size_t(64) << 20;

using Plan = DotPlan<2, MR, NP>;

Plan plan_of(const ConvGeometry& g) { return Plan(g); }

bool supports(const ConvGeometry& g) {
  if (!g.bf16 || !bf16_pointwise(g) || g.out_c <= 0 || !g.packs_within(W)) return false;
  if ((g.in_pack != 1 && g.in_c % W != 0) || (g.out_pack != 1 && g.out_c % W != 0)) return false;
  const Plan p = plan_of(g);
  return p.kd * p.pixels <= kMaxGroupBytes / sizeof(uint32_t) &&
         static_cast<size_t>(p.panels) * (p.kd + 1) * MR < (size_t(1) << 30);
}

size_t packed_floats(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return static_cast<size_t>(p.panels) * (p.kd + 1) * MR;  // the pairs, then the bias
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const Plan p = plan_of(g);
  uint32_t* pairs = reinterpret_cast<uint32_t*>(packed);
  float* pb = packed + static_cast<size_t>(p.panels) * p.kd * MR;
  for (int panel = 0; panel < p.panels; ++panel) {
    for (int r = 0; r < MR; ++r) {
      const int o = panel * MR + r;
      const float* src = o < g.out_c ? weight + static_cast<size_t>(o) * p.k : nullptr;
      for (size_t q = 0; q < p.kd; ++q) {
        const uint32_t lo = src ? to_bf16(src[2 * q]) : 0;
        const uint32_t hi = src && 2 * q + 1 < p.k ? to_bf16(src[2 * q + 1]) : 0;
        pairs[(static_cast<size_t>(panel) * p.kd + q) * MR + r] = lo | (hi << 16);
      }
      *pb++ = src && bias ? bias[o] : 0.f;
    }
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// Where pixel j of group gi lies for pair q: groups are [kp][np], np = NP or the rest.
KESTREL_X86_INLINE uint32_t* group_at(uint32_t* groups, const Plan& p, size_t gi) { return groups + gi * NP * p.kd; }
// Groups a chunk holds: kChunkBytes of pairs (a quarter of the smallest L2 we target), at
// least one group.
constexpr size_t kChunkBytes = size_t(256) << 10;
KESTREL_X86_INLINE size_t chunk_groups(const Plan& p) { return std::max<size_t>(1, kChunkBytes / (NP * p.kd * 4)); }
// Maps of this many chunks or more are streamed (run_streamed).
constexpr size_t kStreamMinChunks = 8;
KESTREL_X86_INLINE bool streamed(const Plan& p) { return p.group_count() >= kStreamMinChunks * chunk_groups(p); }

// Per-thread scratch is there in every caller (the fused layers' bands included): a
// chunk for each thread where the map is streamed, else the whole map's groups in thread
// 0's (the others' room goes unused).
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return (streamed(p) ? chunk_groups(p) * NP : p.pixels) * p.kd * sizeof(uint32_t);
}

// Groups [g0, g1) of a planar input into `groups`, which holds groups from `base` on:
// rows 2q and 2q + 1 of the range's pixels for each q in turn, rounded by vcvtne2ps2bf16
// and interleaved into a dword a pixel. Callers pass a chunk at most (chunk_groups), so
// its groups stay in L2 while their pairs fill them; pair by pair over a whole large map
// wrote each line in 48-byte pieces a map apart (bench/bf16/RESULTS.md).
void convert_planar(const Plan& p, const float* in, size_t cstep, size_t g0, size_t g1, uint32_t* groups,
                    size_t base) {
  for (size_t q = 0; q < p.kd; ++q) {
    const float* r0 = in + 2 * q * cstep;
    const bool odd_last = 2 * q + 1 >= p.k;
    for (size_t gi = g0; gi < g1; ++gi) {
      const int np = p.group_pixels(gi);
      const __mmask16 m = V::lanes(np);
      const __m512 a = _mm512_maskz_loadu_ps(m, r0 + gi * NP);
      const __m512 b = odd_last ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, r0 + cstep + gi * NP);
      // The masked forms throughout: GCC 12's unmasked ones start from an undefined
      // pass-through and draw -Wmaybe-uninitialized (x86_vec.h).
      const __m512bh ab = _mm512_cvtne2ps_pbh(b, a);  // a's 16 halves, then b's
      const __m512i v = reinterpret_cast<const __m512i&>(ab);
      const __m512i lo = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm512_maskz_extracti64x4_epi64(0xFF, v, 0));
      const __m512i hi = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm512_maskz_extracti64x4_epi64(0xFF, v, 1));
      const __m512i pairs = _mm512_or_si512(lo, _mm512_maskz_slli_epi32(0xFFFF, hi, 16));
      _mm512_mask_storeu_epi32(group_at(groups, p, gi - base) + q * np, m, pairs);
    }
  }
}

// The same from a blocked input (W lanes): a pixel's W channels are W / 2 pairs, one
// vcvtneps2bf16 away (channel 2q in the low half).
void convert_blocked(const Plan& p, const float* in, size_t cstep, size_t g0, size_t g1, uint32_t* groups,
                     size_t base) {
  alignas(32) uint32_t pr[W / 2];
  const size_t nb = p.k / W, px0 = g0 * NP, px1 = std::min(p.pixels, g1 * NP);
  for (size_t blk = 0; blk < nb; ++blk) {
    const float* src = in + blk * cstep;
    for (size_t px = px0; px < px1; ++px) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + px * W));
      _mm256_store_si256(reinterpret_cast<__m256i*>(pr), reinterpret_cast<const __m256i&>(h));
      const size_t gi = px / NP;
      const int np = p.group_pixels(gi);
      uint32_t* d = group_at(groups, p, gi - base) + blk * (W / 2) * np + px % NP;
      for (int j = 0; j < W / 2; ++j) d[j * np] = pr[j];
    }
  }
}

template <class P>
void convert(const Plan& p, const float* in, size_t cstep, size_t g0, size_t g1, uint32_t* groups, size_t base) {
  if constexpr (P::kIn == 0) {
    convert_planar(p, in, cstep, g0, g1, groups, base);
  } else {
    convert_blocked(p, in, cstep, g0, g1, groups, base);
  }
}

// An MV x NPX tile over all pairs: x holds the pixels' pairs, xs dwords per pair.
template <int NPX, class Epi, class P>
__attribute__((noinline)) void tile(size_t kp, const uint32_t* __restrict a, const float* __restrict bias,
                                    const uint32_t* __restrict x, size_t xs, float* c, size_t ldc, int mr,
                                    const Epi& epi) {
  using R = V::reg;
  R acc[NPX][MV];
  static_for<MV>([&](auto v) {
    const R bv = V::loadu(bias + v * W);
    static_for<NPX>([&](auto j) { acc[j][v] = bv; });
  });
  for (size_t q = 0; q < kp; ++q, a += MR, x += xs) {
    __m512bh w[MV];
    static_for<MV>([&](auto v) { w[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + v * W)); });
    static_for<NPX>([&](auto j) {
      const __m512bh xv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(x[j])));
      static_for<MV>([&](auto v) { acc[j][v] = _mm512_dpbf16_ps(acc[j][v], w[v], xv); });
    });
  }
  gemm::store_ctile<V, MV, NPX, Epi, P>(acc, c, ldc, mr, epi);
}

// One (panel, group) tile: group gi's pairs at x, into its pixels of the panel's outputs.
template <class P, class Epi>
void panel_group(const ConvGeometry& g, const Plan& p, const float* packed, int panel, size_t gi, const uint32_t* x,
                 float* out, size_t out_cstep, const Epi& epi) {
  const uint32_t* a = reinterpret_cast<const uint32_t*>(packed) + static_cast<size_t>(panel) * p.kd * MR;
  const float* bias = packed + static_cast<size_t>(p.panels) * p.kd * MR + static_cast<size_t>(panel) * MR;
  const int mr = std::min(MR, g.out_c - panel * MR);
  const size_t out_px = P::kOut ? W : 1;
  float* c = out + static_cast<size_t>(panel) * (P::kOut ? MV : MR) * out_cstep + gi * NP * out_px;
  const int np = p.group_pixels(gi);
  if (np == NP) {
    tile<NP, Epi, P>(p.kd, a, bias, x, NP, c, out_cstep, mr, epi);
    return;
  }
  int j = 0;
  for (; j + 4 <= np; j += 4) tile<4, Epi, P>(p.kd, a, bias, x + j, np, c + j * out_px, out_cstep, mr, epi);
  for (; j < np; ++j) tile<1, Epi, P>(p.kd, a, bias, x + j, np, c + j * out_px, out_cstep, mr, epi);
}

// A map of kStreamMinChunks chunks or more: each thread converts a chunk of its share of
// the groups into its own scratch and runs every panel over it there, so that the bf16
// input is written and read in L2 only and the map's DRAM traffic is the fp32 kernels'
// (CenterNet's 128x128 heads). Smaller maps are converted whole by all threads, who
// then split the (panel, group) pairs: enough work for every thread on 7x7 maps.
template <class P, class Epi>
void run_streamed(const ConvGeometry& g, const Plan& p, const float* packed, const float* in, size_t in_cstep,
                  float* out, size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  const size_t ngroups = p.group_count();
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
  {
    const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
    uint32_t* groups = static_cast<uint32_t*>(ctx.scratch_of(static_cast<int>(t)));
    const size_t end = ngroups * (t + 1) / n, cg = chunk_groups(p);
    for (size_t c0 = ngroups * t / n; c0 < end; c0 += cg) {
      const size_t c1 = std::min(end, c0 + cg);
      convert<P>(p, in, in_cstep, c0, c1, groups, c0);
      for (int panel = 0; panel < p.panels; ++panel) {
        for (size_t gi = c0; gi < c1; ++gi) {
          panel_group<P>(g, p, packed, panel, gi, group_at(groups, p, gi - c0), out, out_cstep, epi);
        }
      }
    }
  }
}

template <class P, class Epi>
void run_packs(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
               size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  const Plan p = plan_of(g);
  if (streamed(p)) {
    run_streamed<P>(g, p, packed, in, in_cstep, out, out_cstep, ctx, epi);
    return;
  }
  uint32_t* groups = static_cast<uint32_t*>(ctx.scratch_of(0));
  const size_t ngroups = p.group_count();
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
  {
    const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
    convert<P>(p, in, in_cstep, ngroups * t / n, ngroups * (t + 1) / n, groups, 0);
#pragma omp barrier
    // Thread t's share of the (panel, group) pairs, panel by panel: mostly the groups it
    // converted, where the map has more groups than panels.
    const size_t total = static_cast<size_t>(p.panels) * ngroups;
    for (size_t i = total * t / n, end = total * (t + 1) / n; i < end; ++i) {
      const size_t gi = i % ngroups;
      panel_group<P>(g, p, packed, static_cast<int>(i / ngroups), gi, group_at(groups, p, gi), out, out_cstep, epi);
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
    if (g.in_pack == 1 && g.out_pack == 1) {
      run_packs<gemm::Packs<0, 0>>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else if (g.in_pack == 1) {
      run_packs<gemm::Packs<0, W>>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else if (g.out_pack == 1) {
      run_packs<gemm::Packs<W, 0>>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else {
      run_packs<gemm::Packs<W, W>>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    }
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const ConvKernel kBf16Conv1x1_32x12_Avx512Bf16 = {
    "bf16_conv1x1_32x12_avx512bf16",
    Isa::kAvx512,
    supports,
    packed_floats,
    pack,
    no_workspace,
    workspace_per_thread_bytes,
    1e-2,  // against the fp32 reference; conv_reference_bf16 is matched bit for bit
    run,
    W,
    false,
    false,
    true,
};

}  // namespace kestrel::kernels::x86
