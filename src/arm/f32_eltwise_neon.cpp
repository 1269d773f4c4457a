// Eltwise Sum (with coefficients), Prod and Max over any number of inputs, one pass.
// Cheap activations are fused into the store, the others run over the row after.
#include "arm/f32_eltwise_neon.h"

#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {
namespace {

template <class Fold>
void run_fold(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out, size_t n,
              const ActivationQ& p) {
  dispatch_cheap_activation(g.act.type, [&](auto tag) {
    eltwise_row_q<Fold, decltype(tag)::value>(srcs, coef, count, out, n, p);
  });
}

void run(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out, size_t n) {
  if (n == 0 || count < 1) return;
  const ActivationQ p(g.act);
  switch (g.op) {
    case fb::EltwiseOp::Prod: run_fold<ProdFoldQ>(g, srcs, coef, count, out, n, p); break;
    case fb::EltwiseOp::Max: run_fold<MaxFoldQ>(g, srcs, coef, count, out, n, p); break;
    default: run_fold<SumFoldQ>(g, srcs, coef, count, out, n, p); break;
  }
  if (!is_cheap_activation(g.act.type)) activate_array_neon(g.act, out, out, n);
}

bool supports(const EltwiseGeometry& g) {
  return g.op == fb::EltwiseOp::Sum || g.op == fb::EltwiseOp::Prod || g.op == fb::EltwiseOp::Max;
}

}  // namespace

const EltwiseKernel kF32Eltwise_Neon = {"f32_eltwise_neon", Isa::kNeon, supports, 1e-4, run};

}  // namespace kestrel::kernels::arm
