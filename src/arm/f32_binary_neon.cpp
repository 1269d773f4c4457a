// Binary ops (Add, Sub, Mul, Div, Max, Min) in the three broadcasting forms. The
// cheap activations are fused into the store; the exp-based ones run as a second
// pass over the row just written. Pow needs log and exp with the special cases of
// std::pow (negative bases, integer exponents) and stays with the reference.
#include "arm/f32_binary_neon.h"

#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {
namespace {

template <class Op, fb::ActivationType T>
void run_form(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n, const ActivationQ& p) {
  switch (g.form) {
    case BinaryForm::kArrayScalar: binary_row_q<Op, BinaryForm::kArrayScalar, T>(a, b, out, n, p); break;
    case BinaryForm::kScalarArray: binary_row_q<Op, BinaryForm::kScalarArray, T>(a, b, out, n, p); break;
    default: binary_row_q<Op, BinaryForm::kArrayArray, T>(a, b, out, n, p); break;
  }
}

template <class Op>
void run_op(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n, const ActivationQ& p) {
  dispatch_cheap_activation(g.act.type, [&](auto tag) { run_form<Op, decltype(tag)::value>(g, a, b, out, n, p); });
}

void run(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n) {
  if (n == 0) return;
  const ActivationQ p(g.act);
  using T = fb::BinaryOpType;
  switch (g.op) {
    case T::Sub: run_op<SubQ>(g, a, b, out, n, p); break;
    case T::Mul: run_op<MulQ>(g, a, b, out, n, p); break;
    case T::Div: run_op<DivQ>(g, a, b, out, n, p); break;
    case T::Max: run_op<MaxQ>(g, a, b, out, n, p); break;
    case T::Min: run_op<MinQ>(g, a, b, out, n, p); break;
    default: run_op<AddQ>(g, a, b, out, n, p); break;
  }
  if (!is_cheap_activation(g.act.type)) activate_array_neon(g.act, out, out, n);
}

bool supports(const BinaryGeometry& g) {
  using T = fb::BinaryOpType;
  return g.op == T::Add || g.op == T::Sub || g.op == T::Mul || g.op == T::Div || g.op == T::Max || g.op == T::Min;
}

}  // namespace

const BinaryKernel kF32Binary_Neon = {"f32_binary_neon", Isa::kNeon, supports, 1e-4, run};

}  // namespace kestrel::kernels::arm
