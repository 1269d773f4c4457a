// 3x3 depthwise convolution, stride 1 and 2, on x86 (the algorithm of
// src/arm/f32_dwconv3x3_neon.h, Bi et al., Alg. 3), written once over a vector-traits
// type V and instantiated by f32_dwconv3x3_2x64_avx512.cpp (16 lanes) and
// f32_dwconv3x3_2x24_avx2.cpp (8 lanes); the ISA-free parts (supports, packing, the
// scratch plan, the unfused activations) are in f32_dwconv3x3_common.cpp.
//
// Per channel, a step computes 2 output rows (1 for an odd last row) x kVecs vectors
// of pixels (kVecs <= V::kMaxVecs: 4 x 16 = 64 pixels with AVX-512, 3 x 8 = 24 with
// AVX2) from the (rows - 1) * S + 3 input rows it reads; each view of an input row is
// loaded once and feeds both output rows. The 9 taps and the bias are broadcast into
// registers once per channel.
//
// Padding and stride without a scalar path: every input row a channel needs is copied
// once into a per-thread ring of zero-padded rows (8 slots, >= the 5 rows a step reads),
// laid out so that the tap kx of output x is plane[kx % S][x + kx / S]:
//   S = 1: one plane, the row shifted right by pad_left;
//   S = 2: two planes, the even and the odd columns of the padded row (de-interleaved
//          with two permutes per 2 vectors), so the stride-2 step is the stride-1 step
//          reading the taps 0, 1, 2 from even[x], odd[x], even[x + 1].
// Rows above or below the input read a zero row. The copy writes only the input's
// columns, at positions that are the same for every row and channel, so the zeros
// around them are written once per run. Steps read whole vectors from the ring (it is
// wide enough) and store only real pixels (masked stores for the last vector of a row).
// Every output value is bias + the 9 taps, fused in the order ky = 0..2, kx = 0..2,
// whatever the step's shape, so results do not depend on tiling or thread count.
//
// ODR: the traits types are defined in an anonymous namespace (f32_dwconv_avx512.h,
// f32_dwconv_avx2.h, included only by that ISA's translation units), and everything
// here that is compiled with ISA flags is a template over them (or static), so every
// instantiation has internal linkage: no AVX-512 copy of a function can be picked by the
// linker for the AVX2 path. The functions declared
// under "common" are defined in f32_dwconv3x3_common.cpp, built without ISA flags; what
// all the depthwise kernels share (epilogues, unrolling) is in f32_dwconv_x86.h.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "x86/f32_dwconv_x86.h"

#define KESTREL_DW3X3_INLINE __attribute__((always_inline))

namespace kestrel::kernels::x86::dwconv3x3 {

using dwconv::Act;
using dwconv::activate;
using dwconv::activate_channel;
using dwconv::Epilogue;
using dwconv::no_workspace;
using dwconv::unroll;
using dwconv::with_epilogue;

// ---- common (f32_dwconv3x3_common.cpp, no ISA flags) ----

constexpr int kPackFloats = 16;  // per channel: 9 taps, the bias, zeros (one 64-byte line)
constexpr int kRing = 8;         // ring slots per thread: >= the 5 input rows a step reads

struct Plan {
  int stride = 1;
  int plane = 0;   // floats of one plane of a ring slot (a multiple of 16)
  int slot = 0;    // floats of a slot: stride planes
  int used_w = 0;  // input columns any output reads (the columns copied)
  size_t floats_per_thread = 0;  // the zero row, then kRing slots
};

Plan make_plan(const ConvGeometry& g);
bool supports(const ConvGeometry& g);
size_t packed_floats(const ConvGeometry& g);
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed);
size_t thread_workspace(const ConvGeometry& g);

// ---- the algorithm, over V ----

// acc[u] = bias + the 9 taps of U outputs, fused in the order ky = 0..2, kx = 0..2 that
// every kernel here keeps, so that they agree bit for bit. tap(ky, kx, u), called with
// integral constants, returns the input vector tap (ky, kx) of output u reads (the
// flat and channel-vector kernels; the planar step shares its loads between rows).
template <class V, int U, class Tap>
inline KESTREL_DW3X3_INLINE void nine_taps(typename V::T (&acc)[U], const typename V::T w[9], typename V::T bias,
                                           Tap&& tap) {
  unroll<U>([&](auto u) KESTREL_DW3X3_INLINE { acc[u] = bias; });
  unroll<3>([&](auto ky) KESTREL_DW3X3_INLINE {
    unroll<3>([&](auto kx) KESTREL_DW3X3_INLINE {
      constexpr int k = decltype(ky)::value * 3 + decltype(kx)::value;
      unroll<U>([&](auto u) KESTREL_DW3X3_INLINE { acc[u] = V::fma(tap(ky, kx, u), w[k], acc[u]); });
    });
  });
}

static constexpr int input_rows(int stride, int out_rows) { return (out_rows - 1) * stride + 3; }

// Plane k of input row r of a step (r = 0 holds the top tap of output row 0).
struct Rows {
  const float* p[5][2];
};

// Output rows out[0..kRows) at pixels [x, x + n), n <= kVecs * W (the last vector may
// be partial): bias + 9 taps, activated, stored.
template <class V, int S, int kRows, int kVecs, Epilogue E>
inline KESTREL_DW3X3_INLINE void step(const Rows& rows, const typename V::T w[9], typename V::T bias,
                                      const Act<V>& act, float* const out[2], int x, int n) {
  using T = typename V::T;
  constexpr int W = V::kW;
  T acc[kRows][kVecs];
  unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE { unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE { acc[o][v] = bias; }); });
  unroll<input_rows(S, kRows)>([&](auto r) KESTREL_DW3X3_INLINE {
    unroll<3>([&](auto kx) KESTREL_DW3X3_INLINE {
      const float* p = rows.p[r][kx % S] + x + kx / S;
      unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE {
        const T view = V::loadu(p + W * v);
        unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE {
          constexpr int ky = decltype(r)::value - decltype(o)::value * S;
          if constexpr (ky >= 0 && ky < 3) acc[o][v] = V::fma(view, w[ky * 3 + kx], acc[o][v]);
        });
      });
    });
  });
  unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE {
    unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE {
      const T y = activate<V, E>(acc[o][v], act);
      float* dst = out[o] + x + W * v;
      if (v + 1 < kVecs || n == kVecs * W) {
        V::storeu(dst, y);
      } else {
        V::store_n(dst, y, n - W * v);
      }
    });
  });
}

// One output row pair (or single row) across the whole width: full steps of
// V::kMaxVecs vectors, then one step of as many vectors as the rest needs. Operands are
// copied to locals first: the stores may alias anything reached through a pointer.
template <class V, int S, int kRows, Epilogue E>
void row_steps(const Rows& rows_in, const typename V::T w_in[9], typename V::T bias_in, const Act<V>& act_in,
               float* const out_in[2], int out_w) {
  using T = typename V::T;
  constexpr int W = V::kW, kMax = V::kMaxVecs;
  const Rows rows = rows_in;
  T w[9];
  unroll<9>([&](auto k) KESTREL_DW3X3_INLINE { w[k] = w_in[k]; });
  const T bias = bias_in;
  const Act<V> act = act_in;
  float* const out[2] = {out_in[0], out_in[1]};
  int x = 0;
  for (; x + kMax * W <= out_w; x += kMax * W) step<V, S, kRows, kMax, E>(rows, w, bias, act, out, x, kMax * W);
  const int rest = out_w - x;
  if (rest <= 0) return;
  const int vecs = (rest + W - 1) / W;
  // vecs < kMax, or == kMax with a partial last vector.
  unroll<kMax>([&](auto i) KESTREL_DW3X3_INLINE {
    constexpr int kVecs = decltype(i)::value + 1;
    if (vecs == kVecs) step<V, S, kRows, kVecs, E>(rows, w, bias, act, out, x, rest);
  });
}

// Copies input columns [0, used_w) of one row into a ring slot (see the top).
template <class V, int S>
inline void copy_row(const float* src, float* slot, const Plan& p, int pad_left) {
  constexpr int W = V::kW;
  const int n = p.used_w;
  if constexpr (S == 1) {
    float* dst = slot + pad_left;
    int i = 0;
    for (; i + W <= n; i += W) V::storeu(dst + i, V::loadu(src + i));
    if (i < n) V::store_n(dst + i, V::load_n(src + i, n - i), n - i);
  } else {
    // Padded column q = k + pad_left goes to plane q % 2, index q / 2.
    const int ne = (n + 1) / 2, no = n / 2;  // even and odd input columns
    float* ev_dst = slot + (pad_left % 2) * p.plane + pad_left / 2;
    float* od_dst = slot + ((pad_left + 1) % 2) * p.plane + (pad_left + 1) / 2;
    for (int i = 0; i < ne; i += W) {
      const int k = 2 * i;  // first input column of the chunk
      const int left = n - k;
      typename V::T a, b, ev, od;
      if (left >= 2 * W) {
        a = V::loadu(src + k);
        b = V::loadu(src + k + W);
      } else if (left >= W) {
        a = V::loadu(src + k);
        b = V::load_n(src + k + W, left - W);
      } else {
        a = V::load_n(src + k, left);
        b = V::zero();
      }
      V::deinterleave(a, b, ev, od);
      const int ce = ne - i, co = no - i;
      if (ce >= W) {
        V::storeu(ev_dst + i, ev);
      } else {
        V::store_n(ev_dst + i, ev, ce);
      }
      if (co >= W) {
        V::storeu(od_dst + i, od);
      } else if (co > 0) {
        V::store_n(od_dst + i, od, co);
      }
    }
  }
}

struct Channel {
  const float* in;
  float* out;
  const float* zero;
  float* ring;
  int copied;  // input rows [0, copied) are in the ring
};

// Output rows oy .. oy + kRows - 1 of one channel.
template <class V, int S, int kRows, Epilogue E>
inline void output_rows(const ConvGeometry& g, const Plan& p, const typename V::T w[9], typename V::T bias,
                        const Act<V>& act, Channel& ch, int oy) {
  constexpr int kIn = input_rows(S, kRows);
  const int iy0 = oy * S - g.pad_top;
  int end = iy0 + kIn;
  if (end > g.in_h) end = g.in_h;
  int iy = ch.copied > iy0 ? ch.copied : iy0;
  if (iy < 0) iy = 0;
  for (; iy < end; ++iy) {
    copy_row<V, S>(ch.in + static_cast<size_t>(iy) * g.in_w, ch.ring + static_cast<size_t>(iy % kRing) * p.slot, p,
                   g.pad_left);
  }
  if (end > ch.copied) ch.copied = end;
  Rows rows{};
  for (int r = 0; r < kIn; ++r) {
    const int y = iy0 + r;
    const float* base = (y >= 0 && y < g.in_h) ? ch.ring + static_cast<size_t>(y % kRing) * p.slot : ch.zero;
    for (int k = 0; k < S; ++k) rows.p[r][k] = base + k * p.plane;
  }
  float* const out[2] = {ch.out + static_cast<size_t>(oy) * g.out_w,
                         kRows == 2 ? ch.out + static_cast<size_t>(oy + 1) * g.out_w : nullptr};
  row_steps<V, S, kRows, E>(rows, w, bias, act, out, g.out_w);
}

// Bands of rows, one per thread, where each has at least min_rows output rows (else 1:
// split by channels). Shorter bands re-read too many halo rows: the planar kernel
// (min 16 rows) lost 50% on MobileNet v1's 112x112x32 layer at 16 threads with 7-row
// bands (16-CPU Xeon). (The channel-vector kernel splits by groups: its cvec_channels.)
inline int bands_for(int out_h, int threads, int min_rows) { return out_h >= min_rows * threads ? threads : 1; }

// The input rows a band of output rows [oy0, oy1) reads, towards the cache: a
// thread's next channel, fetched while it computes this one (each channel's band is a
// short stream of a few KiB that the hardware prefetcher would only pick up halfway).
inline void prefetch_band(const ConvGeometry& g, const float* chan, int oy0, int oy1) {
  const int y0 = std::max(0, oy0 * g.sh - g.pad_top), y1 = std::min(g.in_h, (oy1 - 1) * g.sh - g.pad_top + 3);
  const float* first = chan + static_cast<size_t>(y0) * g.in_w;
  const size_t n = static_cast<size_t>(y1 - y0) * g.in_w;
  for (size_t i = 0; i < n; i += 16) __builtin_prefetch(first + i);
}

template <class V, int S, Epilogue E>
void run_channels(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                  size_t out_cstep, const KernelContext& ctx, const Act<V>& act, bool activate_after) {
  const Plan p = make_plan(g);
  // With several threads, thread t takes the t-th band of rows of every channel: the
  // pixels the 1x1 kernels' thread t wrote and reads next (f32_conv_sgemm_x86.h).
  const int threads = std::max(1, ctx.num_threads);
  const int band_rows = bands_for(g.out_h, threads, 16) > 1 ? (g.out_h + threads - 1) / threads : g.out_h;
  const int bands = (g.out_h + band_rows - 1) / band_rows;
#pragma omp parallel num_threads(ctx.num_threads)
  {
    float* scratch = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    for (size_t i = 0; i < p.floats_per_thread; i += V::kW) V::storeu(scratch + i, V::zero());
#pragma omp for schedule(static)
    for (long item = 0; item < static_cast<long>(bands) * g.in_c; ++item) {
      const int band = static_cast<int>(item / g.in_c), c = static_cast<int>(item % g.in_c);
      const int oy0 = band * band_rows, oy1 = std::min(g.out_h, oy0 + band_rows);
      const float* pk = packed + static_cast<size_t>(c) * kPackFloats;
      typename V::T w[9];
      for (int k = 0; k < 9; ++k) w[k] = V::set1(pk[k]);
      const typename V::T bias = V::set1(pk[9]);
      Channel ch{in + c * in_cstep, out + c * out_cstep, scratch, scratch + p.slot, 0};
      if (c + 1 < g.in_c) prefetch_band(g, in + (c + 1) * in_cstep, oy0, oy1);
      int oy = oy0;
      for (; oy + 2 <= oy1; oy += 2) output_rows<V, S, 2, E>(g, p, w, bias, act, ch, oy);
      if (oy < oy1) output_rows<V, S, 1, E>(g, p, w, bias, act, ch, oy);
      if (activate_after) {
        activate_channel(ch.out + static_cast<size_t>(oy0) * g.out_w, static_cast<size_t>(oy1 - oy0) * g.out_w, g.act);
      }
    }
  }
}

template <class V, int S>
void run_stride(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                size_t out_cstep, const KernelContext& ctx) {
  with_epilogue<V>(g, [&](auto e, const Act<V>& act, bool after) {
    run_channels<V, S, decltype(e)::value>(g, packed, in, in_cstep, out, out_cstep, ctx, act, after);
  });
}

template <class V>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  if (g.sw == 1) {
    run_stride<V, 1>(g, packed, in, in_cstep, out, out_cstep, ctx);
  } else {
    run_stride<V, 2>(g, packed, in, in_cstep, out, out_cstep, ctx);
  }
}

// The registry entry of the kernel over V; an ISA's translation unit names only its traits.
template <class V>
constexpr ConvKernel planar_kernel(const char* name, Isa isa) {
  return {name, isa, supports, packed_floats, pack, no_workspace, thread_workspace, 1e-4, run<V>};
}

}  // namespace kestrel::kernels::x86::dwconv3x3

#undef KESTREL_DW3X3_INLINE
