// Binary ops (Add, Sub, Mul, Div, Max, Min) in the three broadcasting forms:
// out = act(a op b) on contiguous rows, either operand possibly one broadcast value.
// Four vectors per step; Max and Min keep the reference's NaN rule (a NaN in either
// operand gives NaN) bit for bit. The cheap activations are fused into the store;
// the exp-based ones run as a second pass over the row just written. Pow needs log
// and exp with std::pow's special cases and stays with the reference.
#pragma once
#include <cstddef>

#include "kernels/elementwise_kernels.h"
#include "x86/f32_activation_x86.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

template <class V> struct AddV { static typename V::reg apply(typename V::reg a, typename V::reg b) { return V::add(a, b); } };
template <class V> struct SubV { static typename V::reg apply(typename V::reg a, typename V::reg b) { return V::sub(a, b); } };
template <class V> struct MulV { static typename V::reg apply(typename V::reg a, typename V::reg b) { return V::mul(a, b); } };
template <class V> struct DivV { static typename V::reg apply(typename V::reg a, typename V::reg b) { return V::div(a, b); } };
// (a > b || isnan(a)) ? a : b, as the reference writes it.
template <class V>
struct MaxV {
  static typename V::reg apply(typename V::reg a, typename V::reg b) {
    return V::select(V::mask_or(V::gt(a, b), V::is_nan(a)), a, b);
  }
};
// (a < b || isnan(a)) ? a : b.
template <class V>
struct MinV {
  static typename V::reg apply(typename V::reg a, typename V::reg b) {
    return V::select(V::mask_or(V::lt(a, b), V::is_nan(a)), a, b);
  }
};

// One operand as seen by the row loop: an array, or one value in every lane.
template <class V, bool kScalar>
struct OperandV {
  const float* p;
  typename V::reg s;
  explicit OperandV(const float* data) : p(data), s(kScalar ? V::set1(data[0]) : V::zero()) {}
  typename V::reg load(size_t i) const {
    if constexpr (kScalar) return s;
    else return V::load(p + i);
  }
  typename V::reg load_partial(size_t i, size_t n) const {
    if constexpr (kScalar) return s;
    else return V::load_partial(p + i, n);
  }
};

// out[i] = T(a[i] Op b[i]) for i < n; the broadcast operand's value is read before
// anything is written, so out may equal either operand.
template <class V, class Op, BinaryForm F, fb::ActivationType T>
inline void binary_row_v(const float* a, const float* b, float* out, size_t n, const ActivationV<V>& p) {
  constexpr size_t W = V::kWidth;
  const OperandV<V, F == BinaryForm::kScalarArray> qa(a);
  const OperandV<V, F == BinaryForm::kArrayScalar> qb(b);
  size_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const auto r0 = Op::apply(qa.load(i), qb.load(i));
    const auto r1 = Op::apply(qa.load(i + W), qb.load(i + W));
    const auto r2 = Op::apply(qa.load(i + 2 * W), qb.load(i + 2 * W));
    const auto r3 = Op::apply(qa.load(i + 3 * W), qb.load(i + 3 * W));
    V::store(out + i, activate_v<T, V>(r0, p));
    V::store(out + i + W, activate_v<T, V>(r1, p));
    V::store(out + i + 2 * W, activate_v<T, V>(r2, p));
    V::store(out + i + 3 * W, activate_v<T, V>(r3, p));
  }
  for (; i + W <= n; i += W) V::store(out + i, activate_v<T, V>(Op::apply(qa.load(i), qb.load(i)), p));
  if (i < n) {
    const size_t r = n - i;
    V::store_partial(out + i, activate_v<T, V>(Op::apply(qa.load_partial(i, r), qb.load_partial(i, r)), p), r);
  }
}

template <class V, class Op>
void binary_op_x86(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n,
                   const ActivationV<V>& p) {
  dispatch_cheap_activation(g.act.type, [&](auto tag) {
    constexpr fb::ActivationType T = decltype(tag)::value;
    switch (g.form) {
      case BinaryForm::kArrayScalar: binary_row_v<V, Op, BinaryForm::kArrayScalar, T>(a, b, out, n, p); break;
      case BinaryForm::kScalarArray: binary_row_v<V, Op, BinaryForm::kScalarArray, T>(a, b, out, n, p); break;
      default: binary_row_v<V, Op, BinaryForm::kArrayArray, T>(a, b, out, n, p); break;
    }
  });
}

template <class V>
void binary_x86(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n) {
  if (n == 0) return;
  const ActivationV<V> p(g.act);
  using T = fb::BinaryOpType;
  switch (g.op) {
    case T::Sub: binary_op_x86<V, SubV<V>>(g, a, b, out, n, p); break;
    case T::Mul: binary_op_x86<V, MulV<V>>(g, a, b, out, n, p); break;
    case T::Div: binary_op_x86<V, DivV<V>>(g, a, b, out, n, p); break;
    case T::Max: binary_op_x86<V, MaxV<V>>(g, a, b, out, n, p); break;
    case T::Min: binary_op_x86<V, MinV<V>>(g, a, b, out, n, p); break;
    default: binary_op_x86<V, AddV<V>>(g, a, b, out, n, p); break;
  }
  if (!is_cheap_activation(g.act.type)) activate_array_x86<V>(g.act, out, out, n);
}

inline bool binary_supports(const BinaryGeometry& g) {
  using T = fb::BinaryOpType;
  return g.op == T::Add || g.op == T::Sub || g.op == T::Mul || g.op == T::Div || g.op == T::Max || g.op == T::Min;
}

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
