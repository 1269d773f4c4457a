// K x K depthwise convolution (K = 3, 5) with the channels along the vectors (the
// layout ONNX Runtime's NCHWc kernels keep between layers), computed from and into
// Kestrel's planar maps or W-channel blocked ones. Why: the planar 3x3 kernel
// (f32_dwconv3x3_x86.h) puts pixels along the vectors, so every tap is a shifted,
// unaligned view, a stride-2 row must be de-interleaved, and a 7- or 14-pixel row fills
// a quarter or half of the 64-pixel step; ONNX Runtime ran MobileNet v1's depthwise
// layers in 0.65 ms against our 1.02 (1 thread, AMD EPYC 2026-11-25), stride 2 and the
// small maps most of the gap. Here the window is only a count of taps, so the same code
// takes the 5x5 layers of MobileNet v3, EfficientNet and CenterNet, which the im2col
// SGEMM ran at 2-5 GFLOP/s.
//
// A work item is one group of W = V::kW channels and a band of output rows. Each input
// row the band needs is transposed once (W x W blocks in registers) into a per-thread
// ring of padded rows of pixel vectors: pixel j of a slot holds the W channels of input
// column j - pad_left, the columns outside the input zero. An output pixel is then
// bias + K * K taps, each an aligned pixel vector times a tap vector (the taps and the
// bias of the group's channels, packed once); stride 2 simply steps two pixels. A
// chunk of W output pixels is staged, transposed back and stored to the W channel
// rows. The fma order is bias, ky = 0..K-1, kx = 0..K-1 (for 3x3 that of the planar
// kernel, so both agree bit for bit), and nothing depends on the thread count or the
// banding.
//
// Another window (7x7) is one definition per ISA (an f32_dwconv7x7_c16_avx512.cpp naming
// cvec_kernel<VecAvx512, 7>, ...) and its registry entries; the traits' tile for it
// (cvec_unroll, cvec_rows) and supports_cvec's claim are where it is tuned.
//
// ODR: the traits (which add transpose(r[W]) and the tiles) are internal to each ISA's
// translation units and everything here compiled with ISA flags is a template over
// them; the plan, the column split and the packing are in f32_dwconv_common.cpp.
#pragma once
#include <omp.h>

#include <algorithm>

#include "x86/f32_dwconv_x86.h"

#define KESTREL_DW_INLINE __attribute__((always_inline))

namespace kestrel::kernels::x86::dwconv {

// ---- common (f32_dwconv_common.cpp, no ISA flags) ----

constexpr int kCvecMaxRows = 2;  // output rows a step computes at most (V::cvec_rows(K))

// Ring slots of a K x K window: the input rows kCvecMaxRows output rows of stride 2
// read, + 1 for the next step (6 for 3x3, 8 for 5x5).
constexpr int cvec_slots(int k) { return (kCvecMaxRows - 1) * 2 + k + 1; }

struct CvecPlan {
  int k = 0;            // K: the window
  int lanes = 0;        // W: channels per group
  int groups = 0;       // channel groups, the last one possibly short
  int row_px = 0;       // pixel vectors of a ring slot: every tap of whole W-pixel chunks
  int used_w = 0;       // input columns any output reads (the columns transposed)
  size_t slot = 0;      // floats of a slot (row_px * W)
  size_t stage_floats = 0;       // floats of one output row's pixel vectors in the stage
  size_t floats_per_thread = 0;  // the zero row, cvec_slots(k) slots, kCvecMaxRows rows of stage
};

// A blocked input is read in place: its rows are already runs of pixel vectors, so
// copying them into the ring, as a transposed planar row is, only moved memory (the
// copies and the stage took half the time of MobileNet v1's blocked 14x14 layers).
// Only the pixels whose taps fall outside the row (the padding) read the ring, into
// which the few columns they need are copied; the others read the rows themselves, in
// steps of U, 4 and 1 pixels. A blocked output is written in place too. The fma order
// is the same in every step, so results do not change.
struct InPlaceCols {
  int x_lo = 0, x_hi = 0;   // output pixels [x_lo, x_hi) read only real columns
  int copy_lo = 0;          // the ring gets input columns [0, copy_lo) and
  int copy_hi = 0;          // [copy_hi, used_w): those the other pixels read
};

// g's window is K = g.kh (supports_cvec checks it).
CvecPlan make_cvec_plan(const ConvGeometry& g, int lanes);
bool supports_cvec(const ConvGeometry& g, int lanes, int k);  // the maps it is chosen for (measured)
InPlaceCols in_place_cols(const ConvGeometry& g, const CvecPlan& p);
size_t cvec_packed_floats(const ConvGeometry& g, int lanes);
// [group][K * K + 1][W]: the K * K taps then the bias, each a vector over the group's
// channels, zero for the channels past out_c.
void pack_cvec(const ConvGeometry& g, int lanes, const float* weight, const float* bias, float* packed);
size_t cvec_thread_workspace(const ConvGeometry& g, int lanes);

// ---- the algorithm, over V ----

// The group's channels: channel c0 + i at base + i * cstep, i < nch (<= W).
struct Planes {
  const float* in;
  float* out;
  size_t in_cstep, out_cstep;
  int nch;
  // Blocked operands (ConvGeometry::in_pack / out_pack = W): the group's pixel vectors
  // at in / out + pixel * W, read and written as they are, no transpose.
  bool in_blocked = false, out_blocked = false;
};

// The K * K taps and the bias of a group. A 3x3 window's 9 taps stay in registers for
// a whole row beside the 2 x 8 (AVX-512) or 4 (AVX2) accumulators; 25 do not fit in 32
// (16) registers, so a larger window reads each tap from the packed weights where an
// fma uses it (a memory operand: a load per fma, which the load ports absorb, where
// holding them would spill the accumulators).
template <class V, int K, bool kHeld = (K == 3)>
struct Taps;

template <class V, int K>
struct Taps<V, K, true> {
  typename V::T w[K * K + 1];  // the taps, then the bias
  explicit KESTREL_DW_INLINE Taps(const float* pk) {
    unroll<K * K + 1>([&](auto k) KESTREL_DW_INLINE { w[k] = V::loadu(pk + k * V::kW); });
  }
  KESTREL_DW_INLINE typename V::T tap(int k) const { return w[k]; }
  KESTREL_DW_INLINE typename V::T bias() const { return w[K * K]; }
};

template <class V, int K>
struct Taps<V, K, false> {
  const float* pk;
  explicit KESTREL_DW_INLINE Taps(const float* p) : pk(p) {}
  KESTREL_DW_INLINE typename V::T tap(int k) const { return V::loadu(pk + k * V::kW); }
  KESTREL_DW_INLINE typename V::T bias() const { return V::loadu(pk + K * K * V::kW); }
};

// Transposes input row iy of the group into `slot` (see the top).
// A blocked row's columns [0, copy_lo) and [copy_hi, used_w) are copied as they are.
template <class V>
inline void transpose_row(const Planes& pl, int iy, int in_w, const CvecPlan& p, int pad_left, float* slot,
                          int copy_lo, int copy_hi) {
  using T = typename V::T;
  constexpr int W = V::kW;
  float* dst = slot + static_cast<size_t>(pad_left) * W;
  if (pl.in_blocked) {
    const float* row = pl.in + static_cast<size_t>(iy) * in_w * W;
    auto copy = [&](int x) { V::storeu(dst + static_cast<size_t>(x) * W, V::loadu(row + static_cast<size_t>(x) * W)); };
    for (int x = 0; x < copy_lo; ++x) copy(x);
    for (int x = std::max(copy_lo, copy_hi); x < p.used_w; ++x) copy(x);
    return;
  }
  const float* src = pl.in + static_cast<size_t>(iy) * in_w;
  for (int x0 = 0; x0 < p.used_w; x0 += W) {
    const int n = std::min(W, p.used_w - x0);
    T r[W];
    if (n == W && pl.nch == W) {
      unroll<W>([&](auto i) KESTREL_DW_INLINE { r[i] = V::loadu(src + i * pl.in_cstep + x0); });
    } else {
      unroll<W>([&](auto i) KESTREL_DW_INLINE {
        const float* q = src + i * pl.in_cstep + x0;
        r[i] = i >= pl.nch ? V::zero() : n == W ? V::loadu(q) : V::load_n(q, n);
      });
    }
    V::transpose(r);
    float* d = dst + static_cast<size_t>(x0) * W;
    if (n == W) {
      unroll<W>([&](auto j) KESTREL_DW_INLINE { V::storeu(d + j * W, r[j]); });
    } else {
      unroll<W>([&](auto j) KESTREL_DW_INLINE {
        if (j < n) V::storeu(d + j * W, r[j]);
      });
    }
  }
}

// U output pixels from ox on of R output rows (R = V::cvec_rows(K): 2 where the
// registers hold 2 x U accumulators beside the 3x3 taps), into stage + o *
// stage_floats: each input pixel vector the step reads is loaded once and applied to
// every (row, tap) that reads it. An output still gets bias, then ky = 0..K-1 (input
// rows in order), then kx = 0..K-1 (pixels in order): the planar kernel's order. Two
// rows of 3x3 read 4 (stride 1) or 5 (stride 2) input rows instead of 2 x 3, and a
// pixel vector serves up to 3 taps: MobileNet v1's 14x14x512 layer 0.043 -> 0.039 ms,
// 28x28x256 0.080 -> 0.076 (AVX-512, 1 thread, AMD EPYC 2026-11-25).
template <class V, int K, int S, int R, int U, Epilogue E, class Tp>
inline KESTREL_DW_INLINE void cvec_pixels(const float* const rows[], const Tp& taps, const Act<V>& act, int ox,
                                          float* stage, size_t stage_floats) {
  using T = typename V::T;
  constexpr int W = V::kW;
  T acc[R][U];
  const T bias = taps.bias();
  unroll<R>([&](auto o) KESTREL_DW_INLINE { unroll<U>([&](auto u) KESTREL_DW_INLINE { acc[o][u] = bias; }); });
  unroll<(R - 1) * S + K>([&](auto r) KESTREL_DW_INLINE {
    constexpr int kR = decltype(r)::value;
    unroll<(U - 1) * S + K>([&](auto x) KESTREL_DW_INLINE {
      constexpr int kX = decltype(x)::value;
      const T v = V::loadu(rows[kR] + (static_cast<size_t>(ox) * S + kX) * W);
      unroll<R>([&](auto o) KESTREL_DW_INLINE {
        constexpr int kO = decltype(o)::value, ky = kR - kO * S;
        if constexpr (ky >= 0 && ky < K) {
          unroll<U>([&](auto u) KESTREL_DW_INLINE {
            constexpr int kx = kX - decltype(u)::value * S;
            if constexpr (kx >= 0 && kx < K) acc[kO][u] = V::fma(v, taps.tap(ky * K + kx), acc[kO][u]);
          });
        }
      });
    });
  });
  unroll<R>([&](auto o) KESTREL_DW_INLINE {
    unroll<U>([&](auto u) KESTREL_DW_INLINE {
      V::storeu(stage + o * stage_floats + u * W, activate<V, E>(acc[o][u], act));
    });
  });
}

// R output rows of pixel vectors into stage (whole steps of U pixels) from input rows
// rows[0 .. (R - 1) * S + K). Its own function, so that the taps stay in registers:
// the transposes need all of them.
template <class V, int K, int S, int R, Epilogue E>
void cvec_rows(const float* const rows_in[], const float* pk, const Act<V>& act_in, int out_w, float* stage,
               size_t stage_floats) {
  constexpr int W = V::kW, U = V::cvec_unroll(K), kIn = (R - 1) * S + K;
  const Taps<V, K> taps(pk);
  const Act<V> act = act_in;
  const float* rows[kIn];
  for (int r = 0; r < kIn; ++r) rows[r] = rows_in[r];
  for (int ox = 0; ox < out_w; ox += U) {
    cvec_pixels<V, K, S, R, U, E>(rows, taps, act, ox, stage + static_cast<size_t>(ox) * W, stage_floats);
  }
}

// Transposes the staged row back into the group's output rows at `first`.
template <class V>
void store_row(const float* stage, const Planes& pl, size_t first, int out_w) {
  using T = typename V::T;
  constexpr int W = V::kW;
  if (pl.out_blocked) {
    float* dst = pl.out + first * W;
    for (int x = 0; x < out_w; ++x) V::storeu(dst + static_cast<size_t>(x) * W, V::loadu(stage + static_cast<size_t>(x) * W));
    return;
  }
  for (int ox0 = 0; ox0 < out_w; ox0 += W) {
    T r[W];
    unroll<W>([&](auto j) KESTREL_DW_INLINE { r[j] = V::loadu(stage + (static_cast<size_t>(ox0) + j) * W); });
    V::transpose(r);
    const int n = std::min(W, out_w - ox0);
    float* dst = pl.out + first + ox0;
    if (n == W && pl.nch == W) {
      unroll<W>([&](auto i) KESTREL_DW_INLINE { V::storeu(dst + i * pl.out_cstep, r[i]); });
    } else {
      unroll<W>([&](auto i) KESTREL_DW_INLINE {
        if (i < pl.nch) {
          if (n == W) {
            V::storeu(dst + i * pl.out_cstep, r[i]);
          } else {
            V::store_n(dst + i * pl.out_cstep, r[i], n);
          }
        }
      });
    }
  }
}

// Output pixels [x0, x1) of R rows in steps of U, then of 4 and 1 (U a multiple of 4):
// rows_at(ox) gives the rows a step at ox reads and the pixel index it reads them at.
template <class V, int K, int S, int R, int U, Epilogue E, class Tp, class RowsAt>
inline KESTREL_DW_INLINE void cvec_span(RowsAt&& rows_at, const Tp& taps, const Act<V>& act, int x0, int x1,
                                        float* dst, size_t dst_row) {
  constexpr int W = V::kW, kIn = (R - 1) * S + K;
  const float* rows[kIn];
  int ox = x0;
  for (; ox + U <= x1; ox += U) {
    const int at = rows_at(ox, rows);
    cvec_pixels<V, K, S, R, U, E>(rows, taps, act, at, dst + static_cast<size_t>(ox) * W, dst_row);
  }
  if constexpr (U > 4) {
    for (; ox + 4 <= x1; ox += 4) {
      const int at = rows_at(ox, rows);
      cvec_pixels<V, K, S, R, 4, E>(rows, taps, act, at, dst + static_cast<size_t>(ox) * W, dst_row);
    }
  }
  for (; ox < x1; ++ox) {
    const int at = rows_at(ox, rows);
    cvec_pixels<V, K, S, R, 1, E>(rows, taps, act, at, dst + static_cast<size_t>(ox) * W, dst_row);
  }
}

// R output rows from a blocked input: `ring` the step's rows in the ring (edge
// columns only), `direct` the same rows in place (column 0; padding rows a zero row).
template <class V, int K, int S, int R, Epilogue E>
void cvec_rows_in_place(const float* const ring_in[], const float* const direct_in[], const InPlaceCols& c,
                        int pad_left, const float* pk, const Act<V>& act_in, int out_w, float* dst,
                        size_t dst_row) {
  constexpr int W = V::kW, U = V::cvec_unroll(K), kIn = (R - 1) * S + K;
  const Taps<V, K> taps(pk);
  const Act<V> act = act_in;
  const float* ring[kIn];
  const float* direct[kIn];
  for (int r = 0; r < kIn; ++r) ring[r] = ring_in[r], direct[r] = direct_in[r];
  auto from_ring = [&](int ox, const float** rows) KESTREL_DW_INLINE {
    for (int r = 0; r < kIn; ++r) rows[r] = ring[r];
    return ox;
  };
  auto in_place = [&](int ox, const float** rows) KESTREL_DW_INLINE {
    const size_t first = static_cast<size_t>(ox * S - pad_left) * W;
    for (int r = 0; r < kIn; ++r) rows[r] = direct[r] + first;
    return 0;
  };
  cvec_span<V, K, S, R, 1, E>(from_ring, taps, act, 0, c.x_lo, dst, dst_row);
  cvec_span<V, K, S, R, U, E>(in_place, taps, act, c.x_lo, c.x_hi, dst, dst_row);
  cvec_span<V, K, S, R, 4, E>(from_ring, taps, act, c.x_hi, out_w, dst, dst_row);
}

// Output rows [oy0, oy1) of one group.
template <class V, int K, int S, Epilogue E>
void cvec_band(const ConvGeometry& g, const CvecPlan& p, const float* pk, const Planes& pl, int oy0, int oy1,
               const Act<V>& act, float* scratch) {
  constexpr int W = V::kW, kSlots = cvec_slots(K), kRows = V::cvec_rows(K);
  static_assert(kRows <= kCvecMaxRows, "the stage holds kCvecMaxRows rows");
  const float* zero = scratch;
  float* ring = scratch + p.slot;
  float* stage = ring + kSlots * p.slot;
  const InPlaceCols cols = pl.in_blocked ? in_place_cols(g, p) : InPlaceCols{0, 0, p.used_w, p.used_w};
  int next = std::max(0, oy0 * S - g.pad_top);  // the first input row not yet in the ring
  // Output rows [oy, oy + R) from input rows iy0 .. iy0 + (R - 1) * S + K - 1.
  auto rows_of = [&](int oy, auto rows_c) {
    constexpr int R = decltype(rows_c)::value, kIn = (R - 1) * S + K;
    static_assert(R <= kCvecMaxRows && kIn < kSlots, "a step's input rows and the next one fit the ring");
    const int iy0 = oy * S - g.pad_top;
    for (int iy = std::max(next, iy0); iy < std::min(iy0 + kIn, g.in_h); ++iy) {
      transpose_row<V>(pl, iy, g.in_w, p, g.pad_left, ring + static_cast<size_t>(iy % kSlots) * p.slot,
                       cols.copy_lo, cols.copy_hi);
      next = iy + 1;
    }
    const float* rows[kIn];
    for (int ky = 0; ky < kIn; ++ky) {
      const int iy = iy0 + ky;
      rows[ky] = iy >= 0 && iy < g.in_h ? ring + static_cast<size_t>(iy % kSlots) * p.slot : zero;
    }
    if (!pl.in_blocked) {
      cvec_rows<V, K, S, R, E>(rows, pk, act, g.out_w, stage, p.stage_floats);
    } else {
      const float* direct[kIn];
      for (int ky = 0; ky < kIn; ++ky) {
        const int iy = iy0 + ky;
        direct[ky] = iy >= 0 && iy < g.in_h ? pl.in + static_cast<size_t>(iy) * g.in_w * W
                                            : zero + static_cast<size_t>(g.pad_left) * W;
      }
      if (pl.out_blocked) {
        float* out = pl.out + static_cast<size_t>(oy) * g.out_w * W;
        cvec_rows_in_place<V, K, S, R, E>(rows, direct, cols, g.pad_left, pk, act, g.out_w, out,
                                          static_cast<size_t>(g.out_w) * W);
        return;
      }
      cvec_rows_in_place<V, K, S, R, E>(rows, direct, cols, g.pad_left, pk, act, g.out_w, stage, p.stage_floats);
    }
    for (int o = 0; o < R; ++o) {
      store_row<V>(stage + o * p.stage_floats, pl, static_cast<size_t>(oy + o) * g.out_w, g.out_w);
    }
  };
  int oy = oy0;
  for (; oy + kRows <= oy1; oy += kRows) rows_of(oy, std::integral_constant<int, kRows>());
  for (; oy < oy1; ++oy) rows_of(oy, std::integral_constant<int, 1>());
}

template <class V, int K, int S, Epilogue E>
void cvec_channels(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                   size_t out_cstep, const KernelContext& ctx, const Act<V>& act, bool activate_after) {
  constexpr int W = V::kW;
  const CvecPlan p = make_cvec_plan(g, W);
  const int threads = std::max(1, ctx.num_threads);
  // With several threads, the groups are split among them, and the rows too (in bands,
  // each transposing its K - 1 halo rows again) only where groups are fewer than two
  // per thread. Bands of rows for every group, as the planar kernel takes (thread t's
  // rows are those the 1x1 layers' thread t wrote), ran MobileNet v1's 14x14 depthwise
  // layers in 0.046 ms at 2 threads against 0.023 split by groups, and its 28x28 one in
  // 0.070 against 0.055 (Intel Xeon, 2026-11-25).
  const int bands_wanted = std::min(g.out_h, (2 * threads + p.groups - 1) / p.groups);
  const int band_rows = (g.out_h + bands_wanted - 1) / bands_wanted;
  const int bands = (g.out_h + band_rows - 1) / band_rows;
  const long items = static_cast<long>(p.groups) * bands;
#pragma omp parallel num_threads(threads)
  {
    float* scratch = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    // The zero row, the slots' columns that no transposed row writes, and the stage
    // (whose vectors past a row's end are transposed but not stored).
    for (size_t i = 0; i < p.floats_per_thread; i += W) V::storeu(scratch + i, V::zero());
#pragma omp for schedule(static)
    for (long item = 0; item < items; ++item) {
      const int band = static_cast<int>(item / p.groups), grp = static_cast<int>(item % p.groups);
      const int c0 = grp * W;
      // A blocked group is block grp (conv_kernels.h).
      const Planes pl{in + static_cast<size_t>(g.in_pack != 1 ? grp : c0) * in_cstep,
                      out + static_cast<size_t>(g.out_pack != 1 ? grp : c0) * out_cstep,
                      in_cstep,
                      out_cstep,
                      std::min(W, g.in_c - c0),
                      g.in_pack != 1,
                      g.out_pack != 1};
      const int oy0 = band * band_rows, oy1 = std::min(g.out_h, oy0 + band_rows);
      cvec_band<V, K, S, E>(g, p, packed + static_cast<size_t>(grp) * (K * K + 1) * W, pl, oy0, oy1, act, scratch);
      if (activate_after) {
        const size_t first = static_cast<size_t>(oy0) * g.out_w, n = static_cast<size_t>(oy1 - oy0) * g.out_w;
        if (pl.out_blocked) {
          activate_channel(pl.out + first * W, n * W, g.act);
        } else {
          for (int i = 0; i < pl.nch; ++i) activate_channel(pl.out + i * out_cstep + first, n, g.act);
        }
      }
    }
  }
}

template <class V, int K>
void run_cvec(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx) {
  with_epilogue<V>(g, [&](auto e, const Act<V>& act, bool after) {
    if (g.sw == 1) {
      cvec_channels<V, K, 1, decltype(e)::value>(g, packed, in, in_cstep, out, out_cstep, ctx, act, after);
    } else {
      cvec_channels<V, K, 2, decltype(e)::value>(g, packed, in, in_cstep, out, out_cstep, ctx, act, after);
    }
  });
}

// The registry entry of the K x K kernel over V (W = V::kW lanes); an ISA's translation
// unit names only its traits and the window.
template <class V, int K>
struct Cvec {
  static_assert(V::kW % V::cvec_unroll(K) == 0 && V::cvec_unroll(K) % 4 == 0,
                "steps of U pixels tile the W-pixel chunks the plan sizes (and the edges' steps of 4)");
  static bool supports(const ConvGeometry& g) { return supports_cvec(g, V::kW, K); }
  static size_t packed_floats(const ConvGeometry& g) { return cvec_packed_floats(g, V::kW); }
  static void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
    pack_cvec(g, V::kW, weight, bias, packed);
  }
  static size_t thread_workspace(const ConvGeometry& g) { return cvec_thread_workspace(g, V::kW); }
};

template <class V, int K>
constexpr ConvKernel cvec_kernel(const char* name, Isa isa) {
  return {name,
          isa,
          Cvec<V, K>::supports,
          Cvec<V, K>::packed_floats,
          Cvec<V, K>::pack,
          no_workspace,
          Cvec<V, K>::thread_workspace,
          1e-4,
          run_cvec<V, K>,
          V::kW};
}

}  // namespace kestrel::kernels::x86::dwconv

#undef KESTREL_DW_INLINE
