// Softmax and LogSoftmax along any axis, written once over the traits of
// x86/x86_math.h. Both microkernels make three passes (max, exp and sum, scale) with
// exp_v:
// - line(): one line of contiguous values (the axis is the innermost), vectorised
//   along the line with 4 accumulators per reduction; one line per thread iteration;
// - columns(): NV * W neighbouring lines whose values are `stride` apart (the axis is
//   an outer one), vectorised across the lines so every load is contiguous and each
//   lane is one line's own sequential reduction; blocks of 4 W lines per iteration.
// Every line is reduced in the same order whatever the thread count. Inputs are read
// before the outputs at the same place are written: in may be out.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/kernel_context.h"
#include "kernels/softmax_kernels.h"
#include "x86/x86_math.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

template <class V>
struct SoftmaxX86 {
  using R = typename V::reg;
  static constexpr size_t W = V::kWidth;
  static constexpr int kColumns = static_cast<int>(4 * W);  // lines per block in the strided case

  // max ignoring NaN as the reference's fmax does: x86 max(x, acc) returns acc when x
  // is NaN, and acc starts at -inf so it never is.
  static R max_nan_ignoring(R acc, R x) { return V::max(x, acc); }

  static void line(const float* src, float* dst, size_t n, bool log) {
    const R ninf = V::set1(-INFINITY);
    R m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
      m0 = max_nan_ignoring(m0, V::load(src + i));
      m1 = max_nan_ignoring(m1, V::load(src + i + W));
      m2 = max_nan_ignoring(m2, V::load(src + i + 2 * W));
      m3 = max_nan_ignoring(m3, V::load(src + i + 3 * W));
    }
    for (; i + W <= n; i += W) m0 = max_nan_ignoring(m0, V::load(src + i));
    if (i < n) m1 = max_nan_ignoring(m1, V::load_partial_or(src + i, n - i, -INFINITY));
    const float m = V::reduce_max(V::max(V::max(m0, m1), V::max(m2, m3)));
    const R mv = V::set1(m);

    // exp(x - max), stored unless LogSoftmax, and summed.
    R s0 = V::zero(), s1 = s0, s2 = s0, s3 = s0;
    for (i = 0; i + 4 * W <= n; i += 4 * W) {
      const R e0 = exp_v<V>(V::sub(V::load(src + i), mv));
      const R e1 = exp_v<V>(V::sub(V::load(src + i + W), mv));
      const R e2 = exp_v<V>(V::sub(V::load(src + i + 2 * W), mv));
      const R e3 = exp_v<V>(V::sub(V::load(src + i + 3 * W), mv));
      if (!log) {
        V::store(dst + i, e0);
        V::store(dst + i + W, e1);
        V::store(dst + i + 2 * W, e2);
        V::store(dst + i + 3 * W, e3);
      }
      s0 = V::add(s0, e0);
      s1 = V::add(s1, e1);
      s2 = V::add(s2, e2);
      s3 = V::add(s3, e3);
    }
    for (; i + W <= n; i += W) {
      const R e = exp_v<V>(V::sub(V::load(src + i), mv));
      if (!log) V::store(dst + i, e);
      s0 = V::add(s0, e);
    }
    if (i < n) {
      const size_t r = n - i;
      const R e = exp_v<V>(V::sub(V::load_partial(src + i, r), mv));
      if (!log) V::store_partial(dst + i, e, r);
      // Lanes past the line hold exp(0 - max): keep them out of the sum.
      alignas(64) float t[W] = {};
      V::store_partial(t, e, r);
      s1 = V::add(s1, V::load(t));
    }
    const float sum = V::reduce_add(V::add(V::add(s0, s1), V::add(s2, s3)));

    if (log) {
      const R shift = V::set1(m + std::log(sum));
      for (i = 0; i + W <= n; i += W) V::store(dst + i, V::sub(V::load(src + i), shift));
      if (i < n) V::store_partial(dst + i, V::sub(V::load_partial(src + i, n - i), shift), n - i);
    } else {
      const R inv = V::set1(1.f / sum);
      for (i = 0; i + W <= n; i += W) V::store(dst + i, V::mul(V::load(dst + i), inv));
      if (i < n) V::store_partial(dst + i, V::mul(V::load_partial(dst + i, n - i), inv), n - i);
    }
  }

  // Lines j .. j + NV W - 1 (only the first `cols` of them are real) of `len` values
  // each, value i of line j at src[i * istride + j].
  template <int NV>
  static void columns(const float* src, size_t istride, float* dst, size_t ostride, int len, size_t cols, bool log) {
    const auto load = [&](const float* p, int v) {
      const size_t first = static_cast<size_t>(v) * W;
      if (first + W <= cols) return V::load(p + first);
      return first < cols ? V::load_partial(p + first, cols - first) : V::zero();
    };
    const auto store = [&](float* p, int v, R x) {
      const size_t first = static_cast<size_t>(v) * W;
      if (first + W <= cols) V::store(p + first, x);
      else if (first < cols) V::store_partial(p + first, x, cols - first);
    };
    R m[NV], s[NV];
    for (int v = 0; v < NV; ++v) m[v] = V::set1(-INFINITY), s[v] = V::zero();
    for (int i = 0; i < len; ++i) {
      const float* p = src + static_cast<size_t>(i) * istride;
      for (int v = 0; v < NV; ++v) m[v] = max_nan_ignoring(m[v], load(p, v));
    }
    for (int i = 0; i < len; ++i) {
      const float* p = src + static_cast<size_t>(i) * istride;
      float* q = dst + static_cast<size_t>(i) * ostride;
      for (int v = 0; v < NV; ++v) {
        const R e = exp_v<V>(V::sub(load(p, v), m[v]));
        if (!log) store(q, v, e);
        s[v] = V::add(s[v], e);
      }
    }
    if (log) {
      R shift[NV];
      for (int v = 0; v < NV; ++v) {
        // log of each lane's sum, by the scalar std::log (once per line).
        alignas(64) float sum[W], mm[W];
        V::store(sum, s[v]);
        V::store(mm, m[v]);
        for (size_t l = 0; l < W; ++l) sum[l] = mm[l] + std::log(sum[l]);
        shift[v] = V::load(sum);
      }
      for (int i = 0; i < len; ++i) {
        const float* p = src + static_cast<size_t>(i) * istride;
        float* q = dst + static_cast<size_t>(i) * ostride;
        for (int v = 0; v < NV; ++v) store(q, v, V::sub(load(p, v), shift[v]));
      }
    } else {
      R inv[NV];
      for (int v = 0; v < NV; ++v) inv[v] = V::div(V::set1(1.f), s[v]);
      for (int i = 0; i < len; ++i) {
        float* q = dst + static_cast<size_t>(i) * ostride;
        for (int v = 0; v < NV; ++v) store(q, v, V::mul(load(q, v), inv[v]));
      }
    }
  }

  static bool supports(const SoftmaxGeometry& g) { return g.outer0 >= 1 && g.outer1 >= 1 && g.len >= 1 && g.inner >= 1; }

  static void run(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
                  const SoftmaxStrides& os, const KernelContext& ctx) {
    const long long outer = static_cast<long long>(g.outer0) * g.outer1;
    if (g.inner == 1 && is.axis == 1 && os.axis == 1) {
#pragma omp parallel for num_threads(ctx.num_threads)
      for (long long l = 0; l < outer; ++l) {
        const size_t o0 = static_cast<size_t>(l / g.outer1), o1 = static_cast<size_t>(l % g.outer1);
        line(in + o0 * is.outer0 + o1 * is.outer1, out + o0 * os.outer0 + o1 * os.outer1, static_cast<size_t>(g.len),
             g.log);
      }
      return;
    }
    const long long blocks = (g.inner + kColumns - 1) / kColumns;
#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long it = 0; it < outer * blocks; ++it) {
      const long long l = it / blocks;
      const size_t j = static_cast<size_t>(it % blocks) * kColumns;
      const size_t o0 = static_cast<size_t>(l / g.outer1), o1 = static_cast<size_t>(l % g.outer1);
      const size_t cols = std::min<size_t>(kColumns, static_cast<size_t>(g.inner) - j);
      const float* src = in + o0 * is.outer0 + o1 * is.outer1 + j;
      float* dst = out + o0 * os.outer0 + o1 * os.outer1 + j;
      if (cols > W) columns<4>(src, is.axis, dst, os.axis, g.len, cols, g.log);
      else columns<1>(src, is.axis, dst, os.axis, g.len, cols, g.log);
    }
  }
};

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
