#include "kernels/elementwise_kernels.h"

#include <cmath>

namespace kestrel::kernels {
namespace {

// Registry lookup shared by the families: the first kernel the ISA allows that
// claims the geometry.
template <class K, class G>
const K* select_first(const std::vector<const K*>& all, const G& g, Isa isa) {
  for (const K* k : all) {
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

// select_first for a family with kernels for halves: those only for f16 geometries, and
// only where the CPU has fp16 arithmetic.
template <class K, class G>
const K* select_for_precision(const std::vector<const K*>& all, const G& g, Isa isa) {
  for (const K* k : all) {
    if (k->f16 != g.f16 || (k->f16 && !active_has(Feature::kFp16Arith))) continue;
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

struct AddOp { static float apply(float a, float b) { return a + b; } };
struct SubOp { static float apply(float a, float b) { return a - b; } };
struct MulOp { static float apply(float a, float b) { return a * b; } };
struct DivOp { static float apply(float a, float b) { return a / b; } };
// NaN propagates, as in PyTorch's torch.maximum / torch.minimum.
struct MaxOp { static float apply(float a, float b) { return (a > b || std::isnan(a)) ? a : b; } };
struct MinOp { static float apply(float a, float b) { return (a < b || std::isnan(a)) ? a : b; } };
struct PowOp { static float apply(float a, float b) { return std::pow(a, b); } };

template <class Op>
void binary_row(BinaryForm form, const float* a, const float* b, float* out, size_t n) {
  switch (form) {
    case BinaryForm::kArrayScalar: {
      const float s = b[0];
      for (size_t i = 0; i < n; ++i) out[i] = Op::apply(a[i], s);
      break;
    }
    case BinaryForm::kScalarArray: {
      const float s = a[0];
      for (size_t i = 0; i < n; ++i) out[i] = Op::apply(s, b[i]);
      break;
    }
    default:
      for (size_t i = 0; i < n; ++i) out[i] = Op::apply(a[i], b[i]);
      break;
  }
}

// Each op starts from the first input and folds in the others; `k` is the input's
// coefficient (1 unless a Sum has coefficients).
struct SumFold {
  static float first(float x, float k) { return k * x; }
  static float next(float acc, float x, float k) { return acc + k * x; }
};
struct ProdFold {
  static float first(float x, float) { return x; }
  static float next(float acc, float x, float) { return acc * x; }
};
struct MaxFold {
  static float first(float x, float) { return x; }
  // NaN propagates, as in PyTorch's torch.maximum.
  static float next(float acc, float x, float) { return (acc > x || std::isnan(acc)) ? acc : x; }
};

// Input after input over the whole row, as the layer always did: srcs[0] may be out.
template <class Op>
void eltwise_fold(const float* const* srcs, const float* coef, int count, float* out, size_t n) {
  for (int k = 0; k < count; ++k) {
    const float* src = srcs[k];
    const float c = coef ? coef[k] : 1.f;
    if (k == 0) {
      for (size_t i = 0; i < n; ++i) out[i] = Op::first(src[i], c);
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = Op::next(out[i], src[i], c);
    }
  }
}

}  // namespace

// ---- Binary ----

const std::vector<const BinaryKernel*>& binary_kernels() {
  static const std::vector<const BinaryKernel*> all = detail::arch_binary_kernels();
  return all;
}

const BinaryKernel* select_binary_kernel(const BinaryGeometry& g, Isa isa) {
  return select_for_precision(binary_kernels(), g, isa);
}

void binary_reference(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n) {
  using T = fb::BinaryOpType;
  switch (g.op) {
    case T::Sub: binary_row<SubOp>(g.form, a, b, out, n); break;
    case T::Mul: binary_row<MulOp>(g.form, a, b, out, n); break;
    case T::Div: binary_row<DivOp>(g.form, a, b, out, n); break;
    case T::Max: binary_row<MaxOp>(g.form, a, b, out, n); break;
    case T::Min: binary_row<MinOp>(g.form, a, b, out, n); break;
    case T::Pow: binary_row<PowOp>(g.form, a, b, out, n); break;
    default: binary_row<AddOp>(g.form, a, b, out, n); break;
  }
  activate_inplace(out, n, g.act);
}

// ---- Eltwise ----

const std::vector<const EltwiseKernel*>& eltwise_kernels() {
  static const std::vector<const EltwiseKernel*> all = detail::arch_eltwise_kernels();
  return all;
}

const EltwiseKernel* select_eltwise_kernel(const EltwiseGeometry& g, Isa isa) {
  return select_for_precision(eltwise_kernels(), g, isa);
}

void eltwise_reference(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out,
                       size_t n) {
  switch (g.op) {
    case fb::EltwiseOp::Prod: eltwise_fold<ProdFold>(srcs, coef, count, out, n); break;
    case fb::EltwiseOp::Max: eltwise_fold<MaxFold>(srcs, coef, count, out, n); break;
    default: eltwise_fold<SumFold>(srcs, coef, count, out, n); break;
  }
  activate_inplace(out, n, g.act);
}

// ---- Activation ----

const std::vector<const ActivationKernel*>& activation_kernels() {
  static const std::vector<const ActivationKernel*> all = detail::arch_activation_kernels();
  return all;
}

const ActivationKernel* select_activation_kernel(const ActivationSpec& a, Isa isa) {
  return select_first(activation_kernels(), a, isa);
}

void activation_reference(const ActivationSpec& a, const float* src, float* dst, size_t n) {
  activate_array(src, dst, n, a);
}

// ---- Affine ----

const std::vector<const AffineKernel*>& affine_kernels() {
  static const std::vector<const AffineKernel*> all = detail::arch_affine_kernels();
  return all;
}

const AffineKernel* select_affine_kernel(Isa isa) {
  for (const AffineKernel* k : affine_kernels()) {
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef) return k;
  }
  return nullptr;
}

void affine_reference(const float* src, float* dst, size_t n, float scale, float shift) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i] * scale + shift;
}

}  // namespace kestrel::kernels
