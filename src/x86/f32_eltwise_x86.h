// The Eltwise microkernel: Sum (with coefficients), Prod and Max over any number of
// same-shape inputs in one pass, four vectors at a time held in accumulators while
// the inputs stream past, so each input is read once and the output written once
// (the reference makes a pass per input). Sum uses an FMA with the coefficient (1
// when there are none: exact). Cheap activations are fused into the store, the
// others run over the row after.
#pragma once
#include <cstddef>

#include "kernels/elementwise_kernels.h"
#include "x86/f32_activation_x86.h"
#include "x86/f32_binary_x86.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

template <class V>
struct SumFoldV {
  using R = typename V::reg;
  static R first(R x, R k) { return V::mul(x, k); }
  static R next(R acc, R x, R k) { return V::fmadd(x, k, acc); }
};
template <class V>
struct ProdFoldV {
  using R = typename V::reg;
  static R first(R x, R) { return x; }
  static R next(R acc, R x, R) { return V::mul(acc, x); }
};
template <class V>
struct MaxFoldV {
  using R = typename V::reg;
  static R first(R x, R) { return x; }
  static R next(R acc, R x, R) { return MaxV<V>::apply(acc, x); }
};

template <class V, class Fold, fb::ActivationType T>
inline void eltwise_row_v(const float* const* srcs, const float* coef, int count, float* out, size_t n,
                          const ActivationV<V>& p) {
  constexpr size_t W = V::kWidth;
  const auto coef_v = [&](int k) { return V::set1(coef ? coef[k] : 1.f); };
  size_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const float* s = srcs[0] + i;
    const auto k0 = coef_v(0);
    auto a0 = Fold::first(V::load(s), k0), a1 = Fold::first(V::load(s + W), k0);
    auto a2 = Fold::first(V::load(s + 2 * W), k0), a3 = Fold::first(V::load(s + 3 * W), k0);
    for (int k = 1; k < count; ++k) {
      const float* x = srcs[k] + i;
      const auto c = coef_v(k);
      a0 = Fold::next(a0, V::load(x), c);
      a1 = Fold::next(a1, V::load(x + W), c);
      a2 = Fold::next(a2, V::load(x + 2 * W), c);
      a3 = Fold::next(a3, V::load(x + 3 * W), c);
    }
    V::store(out + i, activate_v<T, V>(a0, p));
    V::store(out + i + W, activate_v<T, V>(a1, p));
    V::store(out + i + 2 * W, activate_v<T, V>(a2, p));
    V::store(out + i + 3 * W, activate_v<T, V>(a3, p));
  }
  for (; i < n; i += W) {
    const size_t r = n - i < W ? n - i : W;
    const auto load = [&](const float* x) { return r == W ? V::load(x + i) : V::load_partial(x + i, r); };
    auto a = Fold::first(load(srcs[0]), coef_v(0));
    for (int k = 1; k < count; ++k) a = Fold::next(a, load(srcs[k]), coef_v(k));
    a = activate_v<T, V>(a, p);
    if (r == W) V::store(out + i, a);
    else V::store_partial(out + i, a, r);
  }
}

template <class V, class Fold>
void eltwise_fold_x86(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out,
                      size_t n, const ActivationV<V>& p) {
  dispatch_cheap_activation(g.act.type, [&](auto tag) {
    eltwise_row_v<V, Fold, decltype(tag)::value>(srcs, coef, count, out, n, p);
  });
}

template <class V>
void eltwise_x86(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out,
                 size_t n) {
  if (n == 0 || count < 1) return;
  const ActivationV<V> p(g.act);
  switch (g.op) {
    case fb::EltwiseOp::Prod: eltwise_fold_x86<V, ProdFoldV<V>>(g, srcs, coef, count, out, n, p); break;
    case fb::EltwiseOp::Max: eltwise_fold_x86<V, MaxFoldV<V>>(g, srcs, coef, count, out, n, p); break;
    default: eltwise_fold_x86<V, SumFoldV<V>>(g, srcs, coef, count, out, n, p); break;
  }
  if (!is_cheap_activation(g.act.type)) activate_array_x86<V>(g.act, out, out, n);
}

inline bool eltwise_supports(const EltwiseGeometry& g) {
  return g.op == fb::EltwiseOp::Sum || g.op == fb::EltwiseOp::Prod || g.op == fb::EltwiseOp::Max;
}

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
