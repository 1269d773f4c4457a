// The pooling kernels, written once over the traits of x86/x86_math.h.
//
// Windowed pooling: a window is separable, so an output row is made in two passes.
// The vertical pass reduces the window's input rows column by column into a row
// buffer that carries the horizontal padding as the reduction's identity (-inf for
// max, 0 for sums); the horizontal pass reduces KW neighbouring (stride 1) or every
// other (stride 2, deinterleaved by permutes) buffer values, W = V::kWidth outputs
// per step. The padding never needs a scalar edge path. Threads take (channel,
// output row) pairs; each output is computed the same way whatever the partition.
//
// Global pooling: one reduction per channel plane, 4 vectors per step, threads over
// channels.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "kernels/kernel_context.h"
#include "kernels/pool_kernels.h"
#include "x86/x86_math.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

// Max propagates NaN as the reference does (a NaN input must not become a plausible
// value): x86 max(x, acc) = x > acc ? x : acc keeps a NaN acc, and a NaN x is taken
// explicitly.
template <class V>
struct MaxPoolV {
  static constexpr float kIdentity = -INFINITY;
  static typename V::reg apply(typename V::reg acc, typename V::reg x) {
    return V::select(V::is_nan(x), x, V::max(x, acc));
  }
};
template <class V>
struct SumPoolV {
  static constexpr float kIdentity = 0.f;
  static typename V::reg apply(typename V::reg acc, typename V::reg x) { return V::add(acc, x); }
};

template <class V>
struct Pool2dX86 {
  using R = typename V::reg;
  static constexpr int W = static_cast<int>(V::kWidth);
  // Outputs per horizontal strip: the row buffer lives on the stack and stays in L1
  // (the only workspace is an average's out_w column counts).
  static constexpr int kStrip = 128;
  static constexpr int kMaxKw = 64;
  // Buffer floats a strip reads: stride * (outputs rounded up to W) + window + 1.
  static constexpr int kBuffer = 2 * kStrip + kMaxKw + 8;

  // buf[i] = Op over `rows` rows (row_stride apart) of src[i], for i < n.
  template <class Op>
  static void vertical(const float* src, size_t row_stride, int rows, float* buf, int n) {
    const R id = V::set1(Op::kIdentity);
    int i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
      R a0 = id, a1 = id, a2 = id, a3 = id;
      const float* p = src + i;
      for (int r = 0; r < rows; ++r, p += row_stride) {
        a0 = Op::apply(a0, V::load(p));
        a1 = Op::apply(a1, V::load(p + W));
        a2 = Op::apply(a2, V::load(p + 2 * W));
        a3 = Op::apply(a3, V::load(p + 3 * W));
      }
      V::store(buf + i, a0);
      V::store(buf + i + W, a1);
      V::store(buf + i + 2 * W, a2);
      V::store(buf + i + 3 * W, a3);
    }
    for (; i < n; i += W) {
      const size_t left = static_cast<size_t>(n - i);
      R a = id;
      const float* p = src + i;
      if (left >= V::kWidth) {
        for (int r = 0; r < rows; ++r, p += row_stride) a = Op::apply(a, V::load(p));
        V::store(buf + i, a);
      } else {
        for (int r = 0; r < rows; ++r, p += row_stride) a = Op::apply(a, V::load_partial(p, left));
        V::store_partial(buf + i, a, left);
      }
    }
  }

  // Outputs j..j+W-1 of a row from buf + j * SW: Op over the KW window values each,
  // left to right. KW == 0 takes the width from `kw` at run time.
  template <class Op, int KW, int SW>
  static R horizontal(const float* buf, int kw) {
    static_assert(SW == 1 || SW == 2, "stride 1 or 2");
    const int k = KW > 0 ? KW : kw;
    if constexpr (SW == 1) {
      R acc = V::load(buf);
      for (int j = 1; j < k; ++j) acc = Op::apply(acc, V::load(buf + j));
      return acc;
    } else {
      // even = buf[0, 2, ..], odd = buf[1, 3, ..]: taps j and j+1 of W windows two apart.
      R even, odd;
      V::deinterleave(buf, even, odd);
      R acc = even;
      if (k > 1) acc = Op::apply(acc, odd);
      for (int j = 2; j < k; j += 2) {
        V::deinterleave(buf + j, even, odd);
        acc = Op::apply(acc, even);
        if (j + 1 < k) acc = Op::apply(acc, odd);
      }
      return acc;
    }
  }

  // 1 / divisor for outputs ox .. ox+W-1 of a row whose vertical window spans `cy`
  // cells (padded or valid, as the mode counts); cx[ox] is output ox's horizontal
  // count, computed once per run. cy * cx is an exact float product of integers.
  static R inverse_counts(const PoolGeometry& g, const float* cx, int ox, int n_left, long long cy, float interior) {
    const long long first = static_cast<long long>(ox) * g.sw - g.pad_left;
    const long long last = static_cast<long long>(ox + W - 1) * g.sw - g.pad_left + g.kw;
    if (first >= 0 && last <= g.in_w) return V::set1(interior);
    const R c = n_left >= W ? V::load(cx + ox) : V::load_partial_or(cx + ox, static_cast<size_t>(n_left), 1.f);
    return V::div(V::set1(1.f), V::mul(V::set1(static_cast<float>(cy)), c));
  }

  template <class Op, int KW, int SW>
  static void row(const PoolGeometry& g, const float* cx, const float* plane, float* dst, int oy) {
    constexpr bool kAverage = std::is_same_v<Op, SumPoolV<V>>;
    alignas(64) float buf[kBuffer];
    const PoolWindow wy = pool_window(oy, g.sh, g.kh, g.pad_top, g.pad_bottom, g.in_h);
    const int rows = wy.end - wy.begin;
    const float* src = plane + static_cast<size_t>(wy.begin) * g.in_w;
    const long long cy = g.count_include_pad ? wy.padded : rows;
    const float interior = 1.f / static_cast<float>(cy * g.kw);
    for (int ox0 = 0; ox0 < g.out_w; ox0 += kStrip) {
      const int n = std::min(kStrip, g.out_w - ox0);
      const int len = SW * ((n + W - 1) / W * W) + g.kw + 1;
      // buf[j] is input column x_first + j; columns outside [0, in_w) are padding.
      const long long x_first = static_cast<long long>(ox0) * SW - g.pad_left;
      const int j0 = static_cast<int>(std::clamp<long long>(-x_first, 0, len));
      const int j1 = static_cast<int>(std::clamp<long long>(g.in_w - x_first, j0, len));
      vertical<Op>(src + (x_first + j0), g.in_w, rows, buf + j0, j1 - j0);
      std::fill(buf, buf + j0, Op::kIdentity);
      std::fill(buf + j1, buf + len, Op::kIdentity);
      float* out = dst + ox0;
      for (int j = 0; j < n; j += W) {
        R v = horizontal<Op, KW, SW>(buf + j * SW, g.kw);
        if constexpr (kAverage) v = V::mul(v, inverse_counts(g, cx, ox0 + j, n - j, cy, interior));
        if (n - j >= W) V::store(out + j, v);
        else V::store_partial(out + j, v, static_cast<size_t>(n - j));
      }
    }
  }

  using RowFn = void (*)(const PoolGeometry&, const float*, const float*, float*, int);

  template <class Op, int SW>
  static RowFn row_for_width(int kw) {
    switch (kw) {
      case 2: return row<Op, 2, SW>;
      case 3: return row<Op, 3, SW>;
      default: return row<Op, 0, SW>;
    }
  }

  template <class Op>
  static RowFn row_for(const PoolGeometry& g) {
    return g.sw == 1 ? row_for_width<Op, 1>(g.kw) : row_for_width<Op, 2>(g.kw);
  }

  static bool supports(const PoolGeometry& g) {
    return g.planar() && !g.global && (g.sw == 1 || g.sw == 2) && g.kw >= 1 && g.kw <= kMaxKw && g.kh >= 1 &&
           g.sh >= 1 && g.pad_left >= 0 && g.pad_top >= 0 && g.out_w >= 1 && g.out_h >= 1;
  }

  static size_t no_workspace(const PoolGeometry&) { return 0; }
  // Averages: the horizontal window count of every output column.
  static size_t workspace_bytes(const PoolGeometry& g) {
    return g.pool == fb::PoolType::Average ? static_cast<size_t>(g.out_w) * sizeof(float) : 0;
  }

  static void run(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                  const KernelContext& ctx) {
    const RowFn fn = g.pool == fb::PoolType::Average ? row_for<SumPoolV<V>>(g) : row_for<MaxPoolV<V>>(g);
    const long long items = static_cast<long long>(g.channels) * g.out_h;
    const size_t out_row = static_cast<size_t>(g.out_w);
    float* cx = static_cast<float*>(ctx.workspace);
    if (g.pool == fb::PoolType::Average) {
      for (int ox = 0; ox < g.out_w; ++ox) {
        const PoolWindow wx = pool_window(ox, g.sw, g.kw, g.pad_left, g.pad_right, g.in_w);
        cx[ox] = static_cast<float>(g.count_include_pad ? wx.padded : static_cast<long long>(wx.end - wx.begin));
      }
    }
#pragma omp parallel for num_threads(ctx.num_threads) schedule(static)
    for (long long it = 0; it < items; ++it) {
      const int q = static_cast<int>(it / g.out_h), oy = static_cast<int>(it % g.out_h);
      fn(g, cx, in + q * in_cstep, out + q * out_cstep + oy * out_row, oy);
    }
  }
};

template <class V>
struct PoolGlobalX86 {
  using R = typename V::reg;
  static constexpr size_t W = V::kWidth;

  // Op over the n floats of p, 4 vectors per step; the partial tail is read with the
  // identity in the lanes past n. Reduced across lanes by `lanes`.
  template <class Op>
  static R reduce_plane(const float* p, size_t n) {
    const R id = V::set1(Op::kIdentity);
    R a0 = id, a1 = id, a2 = id, a3 = id;
    size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
      a0 = Op::apply(a0, V::load(p + i));
      a1 = Op::apply(a1, V::load(p + i + W));
      a2 = Op::apply(a2, V::load(p + i + 2 * W));
      a3 = Op::apply(a3, V::load(p + i + 3 * W));
    }
    for (; i + W <= n; i += W) a0 = Op::apply(a0, V::load(p + i));
    if (i < n) a1 = Op::apply(a1, V::load_partial_or(p + i, n - i, Op::kIdentity));
    return Op::apply(Op::apply(a0, a1), Op::apply(a2, a3));
  }

  // The lanes' max, NaN if any lane is NaN (the hardware reduction would drop it); once
  // per channel, so scalar.
  static float reduce_lanes_max(R acc) {
    alignas(64) float lanes[W];
    V::store(lanes, acc);
    float m = lanes[0];
    for (size_t i = 1; i < W; ++i) m = (std::isnan(lanes[i]) || lanes[i] > m) ? lanes[i] : m;
    return m;
  }

  static bool supports(const PoolGeometry& g) { return g.planar() && g.global && g.in_h >= 1 && g.in_w >= 1; }

  static size_t no_workspace(const PoolGeometry&) { return 0; }

  static void run(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                  const KernelContext& ctx) {
    const size_t n = static_cast<size_t>(g.in_h) * g.in_w;
    const bool avg = g.pool == fb::PoolType::Average;
    const float inv_n = 1.f / static_cast<float>(n);
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int q = 0; q < g.channels; ++q) {
      const float* p = in + q * in_cstep;
      out[q * out_cstep] =
          avg ? V::reduce_add(reduce_plane<SumPoolV<V>>(p, n)) * inv_n : reduce_lanes_max(reduce_plane<MaxPoolV<V>>(p, n));
    }
  }
};

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
