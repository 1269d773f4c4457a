// 3x3 depthwise convolution, stride 1 and 2, NEON, on 4-channel blocked maps (ncnn's
// pack4, ConvGeometry::in_pack = out_pack = 4). A pixel of a block is one vector of its
// 4 channels, so every tap is a whole vector times the tap's vector of 4 weights: no
// shifted views, no de-interleaving (stride 2 steps two vectors), no transposes.
//
// Its speed on ARM is judged by the instructions it executes (bench/arm/INSN_COUNTS.md),
// whose floor is 9 fmla per output vector. A work item is one channel block and a band
// of output rows; the 9 taps stay in registers for all of it. A row of outputs is cut
// into steps of 4 pixels (the interior ones in f32_dwconv3x3_pack4_neon.h, in
// assembly) computing kRows<S> output rows at once from the input rows they share:
//   first   x = 0..3, when pad_left is 1: column -1 is a zero register, not read;
//   middle  4-pixel steps read in place;
//   last    the last 1..4 pixels, the column right of the row (pad 1) a zero register.
// Rows above or below the map read a zero row (the shared workspace). So padding costs
// neither copies nor steps of its own. Geometries this plan does not fit (pads of 2,
// rows too short for a first step of 4 pixels) read their rows from padded copies
// instead, with the same steps (f32_dwconv3x3_neon.cpp's strips, but whole rows: these
// are small maps and unusual pads).
//
// Every output is bias, then taps ky = 0..2, kx = 0..2, one fma each (a tap on padding
// is an fma with zero), whatever step computes it: the order of the planar kernel
// (f32_dwconv3x3_neon.h), so blocked and planar networks agree bit for bit, and the
// banding over threads changes nothing.
//
// GCC's pre-allocation scheduler hoists the input loads of the intrinsics steps (edges,
// bands of fewer rows) above the fmas of the rows before, until accumulators, taps and
// inputs no longer fit in the 32 registers: without it MobileNet v1's depthwise layers
// ran 1-10% more instructions (cf. f32_conv1x1_8x8_neon.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif
#include "arm/f32_dwconv3x3_pack4_neon.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"

#define KESTREL_DWP4_INLINE __attribute__((always_inline))

namespace kestrel::kernels::arm {
namespace {

using dwconv3x3_pack4::Store;

constexpr int kLanes = 4;
// Per channel block: 9 tap vectors, the bias 4 times (one ld1 starts 4 accumulators),
// zeros up to 256 bytes (each block on cache lines of its own).
constexpr int kBlockFloats = 64;
constexpr int kBiasAt = 9 * kLanes;

// Output rows per step: those of the assembly loops (stride 1: 12 accumulators, 9
// taps and 6 input vectors; stride 2: 8, 9 and 9).
template <int S>
constexpr int kRows = dwconv3x3_pack4::kAsmRows<S>;
constexpr int input_rows(int s, int r) { return (r - 1) * s + 3; }
constexpr int kMaxIn = 5;  // input_rows of either stride's kRows

template <class F, int... I>
inline KESTREL_DWP4_INLINE void unroll_seq(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline KESTREL_DWP4_INLINE void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

// M consecutive pixel vectors with ceil(M / 4) loads (ld1 of up to 4 registers).
template <int M>
inline KESTREL_DWP4_INLINE void load_run(const float* p, float32x4_t* v) {
  unroll<(M + 3) / 4>([&](auto c) KESTREL_DWP4_INLINE {
    constexpr int i = 4 * decltype(c)::value, m = M - i < 4 ? M - i : 4;
    if constexpr (m == 4) {
      const float32x4x4_t t = vld1q_f32_x4(p + 4 * i);
      v[i] = t.val[0], v[i + 1] = t.val[1], v[i + 2] = t.val[2], v[i + 3] = t.val[3];
    } else if constexpr (m == 3) {
      const float32x4x3_t t = vld1q_f32_x3(p + 4 * i);
      v[i] = t.val[0], v[i + 1] = t.val[1], v[i + 2] = t.val[2];
    } else if constexpr (m == 2) {
      const float32x4x2_t t = vld1q_f32_x2(p + 4 * i);
      v[i] = t.val[0], v[i + 1] = t.val[1];
    } else {
      v[i] = vld1q_f32(p + 4 * i);
    }
  });
}

// ep(v[0..N-1]): stores GCC pairs into stp. (As a 4-register st1, GCC 12 mostly
// assembles the register tuple on the stack first.)
template <int N, class Ep>
inline KESTREL_DWP4_INLINE void store_run(float* p, const Ep& ep, const float32x4_t* v) {
  unroll<N>([&](auto n) KESTREL_DWP4_INLINE { vst1q_f32(p + n * kLanes, ep(v[n])); });
}

// The input rows and output rows of a band, each at its column / pixel 0.
struct Band {
  const float* rows[kMaxIn];
  float* out[kRows<1> > kRows<2> ? kRows<1> : kRows<2>];
};

// What a work item needs besides the band: the taps, the bias copies, the epilogue.
template <class Ep>
struct Weights {
  float32x4_t k[9];
  const float* bias4;
  const Ep& ep;
};

// One step: R output rows x N pixels from pixel x, whose first tap column is col (-1
// at the left edge) of the band's rows. Of its (N - 1) * S + 3 columns, the first ZL
// and the last ZR are padding: not read, a zero register instead. Each output row's
// accumulators start as loads of the bias copies (GCC pairs them into ldp; as one
// 4-register ld1 it adds register moves); the empty asm before each makes bias4
// opaque, so that GCC neither loads it once and copies it with moves nor hoists the
// loads out of a loop.
template <int S, int R, int N, int ZL, int ZR, class Ep>
inline KESTREL_DWP4_INLINE void step(const Band& b, ptrdiff_t col, ptrdiff_t x, Weights<Ep>& w) {
  constexpr int kCols = (N - 1) * S + 3;
  float32x4_t acc[R][N];
  unroll<R>([&](auto o) KESTREL_DWP4_INLINE {
    asm volatile("" : "+r"(w.bias4));
    unroll<N>([&](auto n) KESTREL_DWP4_INLINE { acc[o][n] = vld1q_f32(w.bias4 + n * kLanes); });
  });
  unroll<input_rows(S, R)>([&](auto r) KESTREL_DWP4_INLINE {
    float32x4_t v[kCols];
    unroll<kCols>([&](auto i) KESTREL_DWP4_INLINE {
      if constexpr (i < ZL || i >= kCols - ZR) v[i] = vdupq_n_f32(0.f);
    });
    load_run<kCols - ZL - ZR>(b.rows[r] + (col + ZL) * kLanes, v + ZL);
    unroll<R>([&](auto o) KESTREL_DWP4_INLINE {
      constexpr int ky = decltype(r)::value - decltype(o)::value * S;
      if constexpr (ky >= 0 && ky < 3) {
        unroll<3>([&](auto kx) KESTREL_DWP4_INLINE {
          unroll<N>([&](auto n) KESTREL_DWP4_INLINE {
            acc[o][n] = vfmaq_f32(acc[o][n], v[n * S + kx], w.k[ky * 3 + kx]);
          });
        });
      }
    });
  });
  unroll<R>([&](auto o) KESTREL_DWP4_INLINE { store_run<N>(b.out[o] + x * kLanes, w.ep, acc[o]); });
}

// How every row of outputs is cut (see the top), in the geometry the bands read:
// that of the layer, or of the padded copies (no padding left or right then).
struct Plan {
  int in_w = 0, in_h = 0, out_w = 0, pad_top = 0, pad_left = 0;
  int first = 0;    // 1: a step of pixels 0..3, column -1 padding
  int middle = 0;   // 4-pixel steps in place from pixel 4 * first
  int last_n = 0;   // the last step: pixels out_w - last_n .. out_w - 1 (0: none)
  int last_zr = 0;  // the column right of the row is padding (1) or read (0)
  // Rows read from padded copies (in_w pixels: copy_left zeros, the src_w pixels of
  // the row, zeros) instead of in place.
  bool copies = false;
  int src_w = 0, copy_left = 0;
  // Derived, in floats: a source row and an output row; where the middle steps start
  // in an input row and an output row (the last step starts where they end).
  ptrdiff_t src_row = 0, out_row = 0, mid_in = 0, mid_out = 0;
};

// Padding after the last input row/column that `out` outputs of stride s read.
int pad_end(int in, int out, int s, int pad_begin) { return (out - 1) * s + 3 - in - pad_begin; }

// The cut of a row (false where it does not fit).
bool cut_row(Plan& p, int s) {
  const int end = pad_end(p.in_w, p.out_w, s, p.pad_left);
  if (p.pad_left > 1 || end > 1) return false;
  // The first step must not reach the right padding: pixel 3 reads up to 3s + 1.
  if (p.pad_left == 1 && (p.out_w < 4 || 3 * s + 1 >= p.in_w)) return false;
  p.first = p.pad_left;
  const int m = p.out_w - 4 * p.first;
  p.last_zr = std::max(end, 0);
  // A last step of 4 pixels that reads no padding is one more middle step.
  p.last_n = m > 0 ? (m - 1) % 4 + 1 : 0;
  if (p.last_n == 4 && p.last_zr == 0) p.last_n = 0;
  p.middle = (m - p.last_n) / 4;
  p.mid_in = static_cast<ptrdiff_t>(4 * p.first * s - p.pad_left) * kLanes;
  p.mid_out = static_cast<ptrdiff_t>(4 * p.first) * kLanes;
  return true;
}

Plan make_plan(const ConvGeometry& g) {
  Plan p;
  p.in_w = p.src_w = g.in_w;
  p.in_h = g.in_h;
  p.out_w = g.out_w;
  p.pad_top = g.pad_top;
  p.pad_left = g.pad_left;
  p.src_row = static_cast<ptrdiff_t>(g.in_w) * kLanes;
  p.out_row = static_cast<ptrdiff_t>(g.out_w) * kLanes;
  if (cut_row(p, g.sw)) return p;
  p.copies = true;
  p.copy_left = g.pad_left;
  p.in_w = g.pad_left + g.in_w + std::max(pad_end(g.in_w, g.out_w, g.sw, g.pad_left), 0);
  p.pad_left = 0;
  cut_row(p, g.sw);  // no padding left or right: always fits
  return p;
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

// Output rows [oy, oy + R) of one channel block, from their input rows. A cursor
// walks the rows from the middle steps' start on; the last step starts where it ends.
template <int S, int R, class Ep>
inline KESTREL_DWP4_INLINE void band(const Plan& p, const Band& b, Weights<Ep>& w) {
  constexpr int kIn = input_rows(S, R);
  if (p.first) step<S, R, 4, 1, 0>(b, -1, 0, w);
  Band m;
  unroll<kIn>([&](auto r) KESTREL_DWP4_INLINE { m.rows[r] = b.rows[r] + p.mid_in; });
  unroll<R>([&](auto o) KESTREL_DWP4_INLINE { m.out[o] = b.out[o] + p.mid_out; });
  if (p.middle > 0) {
    if constexpr (R == kRows<S>) {
      constexpr Store kStore = store_of<Ep>();
      const float32x4_t zero = vdupq_n_f32(0.f);
      const float32x4_t lo = kStore == Store::kRelu ? zero : w.ep.alpha;
      const float32x4_t hi = kStore == Store::kClip ? w.ep.beta : zero;
      dwconv3x3_pack4::interior<S, kStore>(m.rows, m.out, p.middle, w.k, w.bias4, lo, hi);
    } else {
      for (int i = 0; i < p.middle; ++i) {
        step<S, R, 4, 0, 0>(m, 0, 0, w);
        unroll<kIn>([&](auto r) KESTREL_DWP4_INLINE { m.rows[r] += 4 * S * kLanes; });
        unroll<R>([&](auto o) KESTREL_DWP4_INLINE { m.out[o] += 4 * kLanes; });
      }
    }
  }
  switch (p.last_n * 2 + p.last_zr) {
    case 2: return step<S, R, 1, 0, 0>(m, 0, 0, w);
    case 3: return step<S, R, 1, 0, 1>(m, 0, 0, w);
    case 4: return step<S, R, 2, 0, 0>(m, 0, 0, w);
    case 5: return step<S, R, 2, 0, 1>(m, 0, 0, w);
    case 6: return step<S, R, 3, 0, 0>(m, 0, 0, w);
    case 7: return step<S, R, 3, 0, 1>(m, 0, 0, w);
    case 8: return step<S, R, 4, 0, 0>(m, 0, 0, w);
    case 9: return step<S, R, 4, 0, 1>(m, 0, 0, w);
    default: return;
  }
}

// What a work item reads and writes.
struct Item {
  const float* in;    // the channel block's input
  float* out;         // its output
  const float* zero;  // the zero row
  float* copies;      // kMaxIn padded rows (Plan::copies)
};

// b with its rows[0..n) that are real rows replaced by padded copies in it.copies
// (Plan::copies). Out of line and by value, so that neither the band nor the plan
// leaves registers on the usual path.
__attribute__((noinline)) Band copy_rows(Band b, int n, const Item& it, int src_w, int in_w, int left) {
  const size_t src_row = static_cast<size_t>(src_w) * kLanes, copy_row = static_cast<size_t>(in_w) * kLanes;
  for (int r = 0; r < n; ++r) {
    if (b.rows[r] == it.zero) continue;
    float* copy = it.copies + r * copy_row;
    for (size_t i = 0; i < src_row; i += kLanes) vst1q_f32(copy + left * kLanes + i, vld1q_f32(b.rows[r] + i));
    b.rows[r] = copy;
  }
  return b;
}

// Output rows [oy, oy + R): their input rows, then the band.
template <int S, int R, class Ep>
inline KESTREL_DWP4_INLINE void band_at(const Plan& p, const Item& it, int oy, Weights<Ep>& w) {
  constexpr int kIn = input_rows(S, R);
  Band b;
  const int iy = oy * S - p.pad_top;
  float* out = it.out + oy * p.out_row;
  unroll<R>([&](auto o) KESTREL_DWP4_INLINE { b.out[o] = out + o * p.out_row; });
  // Most bands read rows of the map only: one test for all of them.
  if (iy >= 0 && iy + kIn <= p.in_h) {
    const float* row = it.in + iy * p.src_row;
    unroll<kIn>([&](auto r) KESTREL_DWP4_INLINE { b.rows[r] = row + r * p.src_row; });
  } else {
    unroll<kIn>([&](auto r) KESTREL_DWP4_INLINE {
      const bool in_map = static_cast<unsigned>(iy + r) < static_cast<unsigned>(p.in_h);
      b.rows[r] = in_map ? it.in + (iy + r) * p.src_row : it.zero;
    });
  }
  if (p.copies) b = copy_rows(b, kIn, it, p.src_w, p.in_w, p.copy_left);
  band<S, R>(p, b, w);
}

// An activation not fused into the store runs over each band once it is written: the
// bands store linear outputs, with the code of Act::kNone.
template <gemm::Act A>
gemm::Epilogue<A> fused_part(const gemm::Epilogue<A>& ep) {
  return ep;
}
gemm::Epilogue<gemm::Act::kNone> fused_part(const gemm::Epilogue<gemm::Act::kOther>& ep) {
  return gemm::Epilogue<gemm::Act::kNone>(*ep.spec);
}

size_t copies_floats(const Plan& p) { return p.copies ? static_cast<size_t>(kMaxIn) * p.in_w * kLanes : 0; }

// The work items: (channel block, band of rows), item i = block i / bands.
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
template <int S, class Fused, class Ep>
void run_items(const Plan& plan, const Items& items, float* copies, int i0, int i1, const Fused& fused,
               const Ep& ep) {
  constexpr int R = kRows<S>;
  const Plan p = plan;  // in registers: the stores may alias anything behind a reference
  const Items its = items;
  for (int i = i0; i < i1; ++i) {
    const int j = i / its.bands, y0 = i % its.bands * its.band_rows, y1 = std::min(its.out_h, y0 + its.band_rows);
    if (y0 >= y1) continue;
    const Item it{its.in + j * its.in_cstep, its.out + j * its.out_cstep, its.zero, copies};
    const float* packed = its.packed + static_cast<size_t>(j) * kBlockFloats;
    Weights<Fused> w{{}, packed + kBiasAt, fused};
    load_run<9>(packed, w.k);
    int y = y0;
    for (; y + R <= y1; y += R) band_at<S, R>(p, it, y, w);
    if constexpr (R > 2) {
      if (y1 - y == 2) band_at<S, 2>(p, it, y, w);
    }
    if (y1 - y == 1) band_at<S, 1>(p, it, y, w);
    ep.finish(it.out + y0 * p.out_row, (y1 - y0) * p.out_row);
  }
}

template <int S, class Ep>
void run_blocked(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                 size_t out_cstep, const KernelContext& ctx, const Ep& ep) {
  const Plan p = make_plan(g);
  const int blocks = g.in_c / kLanes;
  // Row bands only where the channel blocks are too few to go round the threads (one
  // band per block at one thread); outputs do not depend on the banding.
  const int steps = (g.out_h + kRows<S> - 1) / kRows<S>;
  const int bands = std::clamp((2 * ctx.num_threads + blocks - 1) / blocks, 1, steps);
  const Items items{in,    in_cstep, out, out_cstep, packed, static_cast<const float*>(ctx.workspace),
                    bands, (steps + bands - 1) / bands * kRows<S>, g.out_h};
  const int n = blocks * bands;
#pragma omp parallel num_threads(ctx.num_threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    float* copies = static_cast<float*>(ctx.scratch_of(t));
    std::fill(copies, copies + copies_floats(p), 0.f);
    run_items<S>(p, items, copies, static_cast<int>(static_cast<long long>(n) * t / nt),
                 static_cast<int>(static_cast<long long>(n) * (t + 1) / nt), fused_part(ep), ep);
  }
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

// The zero row: as wide as the rows the bands read.
size_t zero_floats(const ConvGeometry& g) { return static_cast<size_t>(make_plan(g).in_w) * kLanes; }
size_t workspace_bytes(const ConvGeometry& g) { return zero_floats(g) * sizeof(float); }
size_t thread_workspace_bytes(const ConvGeometry& g) { return copies_floats(make_plan(g)) * sizeof(float); }

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
