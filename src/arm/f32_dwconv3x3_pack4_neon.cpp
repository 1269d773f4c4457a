// 3x3 depthwise convolution, stride 1 and 2, NEON, on 4-channel blocked maps (ncnn's
// pack4, ConvGeometry::in_pack = out_pack = 4). A pixel of a block is one vector of its
// 4 channels, so every tap is a whole vector times the tap's vector of 4 weights: no
// shifted views, no de-interleaving (stride 2 steps two vectors), no transposes.
//
// Its speed on ARM is judged by the instructions it executes (bench/arm/INSN_COUNTS.md),
// whose floor is 9 fmla per output vector. A work item is one channel block and a band
// of output rows. The band is cut into strips of 4 output pixels (the last one 1..4),
// and each strip is walked down the band by the assembly of f32_dwconv3x3_pack4_neon.h,
// which loads each input row of the strip once and keeps the 2 or 3 output rows it
// feeds in registers (and the 9 taps, loaded once per call: one call walks all the
// middle strips of a band):
//   first   when pad_left is 1: column -1 is a zero register, not read;
//   middle  4-pixel strips read in place;
//   last    1..4 pixels, the column right of the row (pad 1) a zero register.
// Rows above or below the map are the zero row (the shared workspace), read by the
// first or last row of the walk. So padding costs neither copies nor steps of its own.
// Geometries with pads of 2 read a band's rows from padded copies instead (per-thread
// scratch), walked the same way.
//
// Every output is bias, then taps ky = 0..2, kx = 0..2, one fma each (a tap on padding
// is an fma with zero), whatever strip computes it: the order of the planar kernel
// (f32_dwconv3x3_neon.h), so blocked and planar networks agree bit for bit, and the
// banding over threads changes nothing.
#include "arm/f32_dwconv3x3_pack4_neon.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "arm/f32_gemm_epilogue_neon.h"

#define KESTREL_DWP4_INLINE __attribute__((always_inline))

namespace kestrel::kernels::arm {
namespace {

using dwconv3x3_pack4::Band;
using dwconv3x3_pack4::Store;
using dwconv3x3_pack4::Act;

constexpr int kLanes = 4;
// Per channel block: 9 tap vectors, the bias 4 times (one ld1 starts 4 accumulators),
// zeros up to 256 bytes (each block on cache lines of its own).
constexpr int kBlockFloats = 64;
constexpr int kBiasAt = 9 * kLanes;
constexpr int kStrip = 4;  // output pixels of a strip

// Padding after the last input row/column that `out` outputs of stride s read.
int pad_end(int in, int out, int s, int pad_begin) { return (out - 1) * s + 3 - in - pad_begin; }

// How the bands are read: in place (padding of at most 1 on each side), or from padded
// copies of their rows.
struct Plan {
  int s = 1, in_h = 0, pad_top = 0, pad_left = 0;
  // Strips of a row: the first through edge() when it reads padding or is the only
  // one and narrower (first_key: its variant, else 0), then middle ones up to
  // middle_end, then the last through edge() (last_key, else 0) when it reads padding
  // or has fewer than 4 pixels.
  int strips = 0, first_key = 0, middle_end = 0, last_key = 0;
  bool copies = false;
  int src_h = 0, copy_top = 0, copy_left = 0;
  // In floats: a row the walks read (a copy's, padded, with copies), a source row, an
  // output row.
  ptrdiff_t in_row = 0, src_row = 0, out_row = 0;
};

Plan make_plan(const ConvGeometry& g) {
  Plan p;
  p.s = g.sw;
  p.strips = (g.out_w + kStrip - 1) / kStrip;
  p.src_h = g.in_h;
  p.src_row = static_cast<ptrdiff_t>(g.in_w) * kLanes;
  p.out_row = static_cast<ptrdiff_t>(g.out_w) * kLanes;
  const int end_w = pad_end(g.in_w, g.out_w, g.sw, g.pad_left), end_h = pad_end(g.in_h, g.out_h, g.sh, g.pad_top);
  p.copies = g.pad_left > 1 || g.pad_top > 1 || end_w > 1 || end_h > 1;
  if (!p.copies) {
    p.in_h = g.in_h;
    p.pad_top = g.pad_top;
    p.pad_left = g.pad_left;
    p.in_row = p.src_row;
  } else {
    p.copy_top = g.pad_top;
    p.copy_left = g.pad_left;
    p.in_row = static_cast<ptrdiff_t>(g.pad_left + g.in_w + std::max(end_w, 0)) * kLanes;
  }
  // Edge variants by key n * 4 + zl * 2 + zr (edge()).
  const int last_n = g.out_w - kStrip * (p.strips - 1), zl = p.pad_left == 1, zr = !p.copies && end_w == 1;
  // (A lone strip of 4 pixels without padding is a middle one.)
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
  const float* first;
  const float* rows;
  const float* last;
};

// Output rows [y0, y0 + m) read from padded copies of their input rows in scratch
// (whose columns of padding stay zero). Out of line: the path of unusual pads.
__attribute__((noinline)) Rows copy_band(const Plan& p, const float* in, float* scratch, int y0, int m) {
  const int r0 = y0 * p.s - p.copy_top, n = (m - 1) * p.s + 3;
  for (int r = 0; r < n; ++r) {
    float* dst = scratch + r * p.in_row + p.copy_left * kLanes;
    const int iy = r0 + r;
    if (iy >= 0 && iy < p.src_h) {
      std::copy(in + iy * p.src_row, in + (iy + 1) * p.src_row, dst);
    } else {
      std::fill(dst, dst + p.src_row, 0.f);
    }
  }
  return {scratch, scratch + p.in_row, scratch + (n - 1) * p.in_row};
}

// `strips` strips of N pixels from the one whose first loaded column is `col` (floats).
template <int S, int N, int ZL, int ZR, Store St>
inline KESTREL_DWP4_INLINE void strips(const Band& b, const Rows& r, ptrdiff_t col, float* out, int n,
                                       const Act& a) {
  dwconv3x3_pack4::walk<S, N, ZL, ZR, St>(b, r.first + col, r.rows + col, r.last + col, out, n, a);
}

// A strip with padding or fewer than 4 pixels: its variant by key n * 4 + zl * 2 + zr
// (not 16: that strip is a middle one).
template <int S, Store St>
inline KESTREL_DWP4_INLINE void edge(int key, const Band& b, const Rows& r, ptrdiff_t col, float* out,
                                     const Act& a) {
  switch (key) {
    case 4: return strips<S, 1, 0, 0, St>(b, r, col, out, 1, a);
    case 5: return strips<S, 1, 0, 1, St>(b, r, col, out, 1, a);
    case 6: return strips<S, 1, 1, 0, St>(b, r, col, out, 1, a);
    case 7: return strips<S, 1, 1, 1, St>(b, r, col, out, 1, a);
    case 8: return strips<S, 2, 0, 0, St>(b, r, col, out, 1, a);
    case 9: return strips<S, 2, 0, 1, St>(b, r, col, out, 1, a);
    case 10: return strips<S, 2, 1, 0, St>(b, r, col, out, 1, a);
    case 11: return strips<S, 2, 1, 1, St>(b, r, col, out, 1, a);
    case 12: return strips<S, 3, 0, 0, St>(b, r, col, out, 1, a);
    case 13: return strips<S, 3, 0, 1, St>(b, r, col, out, 1, a);
    case 14: return strips<S, 3, 1, 0, St>(b, r, col, out, 1, a);
    case 15: return strips<S, 3, 1, 1, St>(b, r, col, out, 1, a);
    case 17: return strips<S, 4, 0, 1, St>(b, r, col, out, 1, a);
    case 18: return strips<S, 4, 1, 0, St>(b, r, col, out, 1, a);
    default: return strips<S, 4, 1, 1, St>(b, r, col, out, 1, a);
  }
}

// The strips of a band, left to right: the first and last through edge() where they
// read padding or are narrower (Plan::first_key, last_key), the middle ones in place,
// in one walk.
template <int S, Store St>
inline KESTREL_DWP4_INLINE void band(const Plan& p, const Band& b, const Rows& r, float* out, const Act& a) {
  constexpr ptrdiff_t kInStep = kStrip * S * kLanes, kOutStep = kStrip * kLanes;
  const int s = p.first_key ? 1 : 0;
  if (s) edge<S, St>(p.first_key, b, r, 0, out, a);
  if (s < p.middle_end) {
    strips<S, 4, 0, 0, St>(b, r, s * kInStep - p.pad_left * kLanes, out + s * kOutStep, p.middle_end - s, a);
  }
  if (p.last_key) {
    edge<S, St>(p.last_key, b, r, p.middle_end * kInStep - p.pad_left * kLanes, out + p.middle_end * kOutStep, a);
  }
}

template <class Ep>
constexpr Store store_of() {
  using gemm::Act;
  if constexpr (std::is_same_v<Ep, gemm::Epilogue<Act::kReLU>>) {
    return Store::kRelu;
  } else if constexpr (std::is_same_v<Ep, gemm::Epilogue<Act::kClip>>) {
    return Store::kClip;
  } else if constexpr (std::is_same_v<Ep, gemm::Epilogue<Act::kLeaky>>) {
    return Store::kLeaky;
  } else {
    return Store::kLinear;
  }
}

// An activation not fused into the store runs over each band once it is written (the
// bands store linear outputs, with the code of Act::kNone): `after`, else nullptr.
template <gemm::Act A>
gemm::Epilogue<A> fused_part(const gemm::Epilogue<A>& ep) {
  return ep;
}
gemm::Epilogue<gemm::Act::kNone> fused_part(const gemm::Epilogue<gemm::Act::kOther>& ep) {
  return gemm::Epilogue<gemm::Act::kNone>(*ep.spec);
}
template <gemm::Act A>
const ActivationSpec* after_part(const gemm::Epilogue<A>& ep) {
  return A == gemm::Act::kOther ? ep.spec : nullptr;
}

// Per-thread scratch: padded copies of a band's input rows, at most all of them.
size_t copies_floats(const ConvGeometry& g, const Plan& p) {
  return p.copies ? static_cast<size_t>((g.out_h - 1) * g.sh + 3) * p.in_row : 0;
}

// What the work items share: item i is channel block i / bands, band i % bands.
struct Items {
  const float* in;
  size_t in_cstep;
  float* out;
  size_t out_cstep;
  const float* packed;
  const float* zero;
  int bands, band_rows, out_h;
};

// Items [i0, i1), one thread's share: one call, so that saving registers and loading
// the plan are paid once per thread, not per item (a 7x7 block is only 49 outputs).
template <int S, class Fused>
void run_items(const Plan& plan, const Items& items, float* copies, int i0, int i1, const Fused& fused,
               const ActivationSpec* after) {
  constexpr Store kStore = store_of<Fused>();
  const Plan p = plan;  // in registers: the stores may alias anything behind a reference
  const Items its = items;
  const float32x4_t zero = vdupq_n_f32(0.f);
  const Act a{kStore == Store::kRelu ? zero : fused.alpha, kStore == Store::kClip ? fused.beta : zero};
  const ptrdiff_t ib = p.in_row * static_cast<ptrdiff_t>(sizeof(float));
  const ptrdiff_t ob = p.out_row * static_cast<ptrdiff_t>(sizeof(float));
  // What depends on the band only (the same for every block at one thread): its rows
  // (offsets in the block; first / last: -1 for the zero row), the walk's steps.
  int cached = -1, y0 = 0, m = 0;
  ptrdiff_t first = 0, rows = 0, last = 0;
  Band b{};
  for (int i = i0; i < i1; ++i) {
    const int j = i / its.bands, k = i - j * its.bands;
    if (k != cached) {
      cached = k;
      y0 = k * its.band_rows;
      m = std::min(its.out_h - y0, its.band_rows);
      if (m <= 0) continue;
      const int r0 = y0 * p.s - p.pad_top, rl = r0 + (m - 1) * p.s + 2;
      first = r0 < 0 ? -1 : r0 * p.in_row;
      rows = (r0 + 1) * p.in_row;
      last = rl >= p.in_h ? -1 : rl * p.in_row;
      b = dwconv3x3_pack4::band_of<S>(m, ib, ob);
    }
    if (m <= 0) continue;
    const float* in = its.in + j * its.in_cstep;
    const Rows r = p.copies ? copy_band(p, in, copies, y0, m)
                            : Rows{first < 0 ? its.zero : in + first, in + rows, last < 0 ? its.zero : in + last};
    float* out = its.out + j * its.out_cstep + y0 * p.out_row;
    b.w = its.packed + static_cast<size_t>(j) * kBlockFloats;
    band<S, kStore>(p, b, r, out, a);
    if (after) activate_inplace(out, static_cast<size_t>(m) * p.out_row, *after);
  }
}

template <int S, class Ep>
void run_blocked(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                 size_t out_cstep, const KernelContext& ctx, const Ep& ep) {
  const Plan p = make_plan(g);
  const int blocks = g.in_c / kLanes;
  // Row bands only where the channel blocks are too few to go round the threads (one
  // band per block at one thread); outputs do not depend on the banding.
  const int bands = std::clamp((2 * ctx.num_threads + blocks - 1) / blocks, 1, g.out_h);
  const Items items{in,    in_cstep, out, out_cstep, packed, static_cast<const float*>(ctx.workspace),
                    bands, (g.out_h + bands - 1) / bands, g.out_h};
  const int n = blocks * bands;
  parallel_region(ctx.num_threads, [&] {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    float* copies = static_cast<float*>(ctx.scratch_of(t));
    std::fill(copies, copies + copies_floats(g, p), 0.f);
    run_items<S>(p, items, copies, static_cast<int>(static_cast<long long>(n) * t / nt),
                 static_cast<int>(static_cast<long long>(n) * (t + 1) / nt), fused_part(ep), after_part(ep));
  });
}

bool supports(const ConvGeometry& g) {
  if (g.in_pack != kLanes || g.out_pack != kLanes || g.in_c % kLanes != 0) return false;
  if (!g.is_depthwise() || g.in_c < 1 || g.kh != 3 || g.kw != 3 || g.dh != 1 || g.dw != 1) return false;
  if (g.sh != g.sw || (g.sh != 1 && g.sh != 2)) return false;
  if (g.in_h < 1 || g.in_w < 1 || g.out_h < 1 || g.out_w < 1) return false;
  if (g.pad_top < 0 || g.pad_top > 2 || g.pad_left < 0 || g.pad_left > 2) return false;
  // Trailing padding up to 2, so that no output reads only padding (negative: trailing
  // input rows no output reads).
  const long long end_h = (static_cast<long long>(g.out_h) - 1) * g.sh + 3 - g.in_h - g.pad_top;
  const long long end_w = (static_cast<long long>(g.out_w) - 1) * g.sw + 3 - g.in_w - g.pad_left;
  return end_h <= 2 && end_w <= 2;
}

size_t packed_floats(const ConvGeometry& g) {
  return static_cast<size_t>((g.out_c + kLanes - 1) / kLanes) * kBlockFloats;
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  std::fill(packed, packed + packed_floats(g), 0.f);
  for (int c = 0; c < g.out_c; ++c) {
    float* dst = packed + static_cast<size_t>(c / kLanes) * kBlockFloats + c % kLanes;
    for (int t = 0; t < 9; ++t) dst[t * kLanes] = weight[static_cast<size_t>(c) * 9 + t];
    for (int i = 0; i < 4; ++i) dst[kBiasAt + i * kLanes] = bias ? bias[c] : 0.f;
  }
}

// The zero row: as wide as the rows the walks read in place.
size_t zero_floats(const ConvGeometry& g) { return static_cast<size_t>(g.in_w) * kLanes; }
size_t workspace_bytes(const ConvGeometry& g) { return zero_floats(g) * sizeof(float); }
size_t thread_workspace_bytes(const ConvGeometry& g) { return copies_floats(g, make_plan(g)) * sizeof(float); }

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  float* zero = static_cast<float*>(ctx.workspace);
  std::fill(zero, zero + zero_floats(g), 0.f);
  gemm::with_epilogue(g.act, [&](const auto& ep) {
    if (g.sw == 1) {
      run_blocked<1>(g, packed, in, in_cstep, out, out_cstep, ctx, ep);
    } else {
      run_blocked<2>(g, packed, in, in_cstep, out, out_cstep, ctx, ep);
    }
  });
}

}  // namespace

const ConvKernel kF32DwConv3x3Pack4_Neon = {
    "f32_dwconv3x3_pack4_neon", Isa::kNeon, supports, packed_floats, pack, workspace_bytes, thread_workspace_bytes,
    1e-4, run, kLanes,
};

}  // namespace kestrel::kernels::arm

#undef KESTREL_DWP4_INLINE
