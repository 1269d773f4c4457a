// The elementwise kernel families: binary ops with broadcasting forms (BinaryOp),
// n-ary folds (Eltwise), activations (Activation, PReLU) and the per-channel affine
// map y = a x + b (BatchNorm, Scale). Each family has one registry that the layers
// (at Net load), the kernel tests and the benchmarks read, and a reference that is
// both the layers' fallback and the tests' oracle.
//
// These kernels are row functions over contiguous arrays, as XNNPACK's vbinary and
// vunary microkernels are: the layer walks its planes and rows and threads over
// them, so a kernel needs no context, and the result cannot depend on the thread
// count (every value is computed on its own). Kernels read and write exactly the n
// values they are given (no over-read), so they also run on external inputs.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/isa.h"
#include "layers/activation.h"

namespace kestrel::kernels {

// ---- Binary ops -----------------------------------------------------------------

// Which operand is a whole array and which a single value repeated.
enum class BinaryForm {
  kArrayArray,   // out[i] = a[i] op b[i]
  kArrayScalar,  // out[i] = a[i] op b[0]
  kScalarArray,  // out[i] = a[0] op b[i]
};

struct BinaryGeometry {
  fb::BinaryOpType op = fb::BinaryOpType::Add;
  BinaryForm form = BinaryForm::kArrayArray;
  ActivationSpec act;  // applied to every result
  // Operands are IEEE halves (maps of halves at Option::precision kFp16, where the CPU
  // has fp16 arithmetic): only kernels whose f16 is set claim it.
  bool f16 = false;
};

struct BinaryKernel {
  const char* name;  // "f32_binary_neon"
  Isa isa;
  bool (*supports)(const BinaryGeometry& g);
  // max |got - ref| <= tolerance * max(1, max |ref|).
  double tolerance;
  // out[i] = act(a op b) for i < n in g.form; out may equal a or b (in place).
  void (*run)(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n);
  // A kernel for halves (BinaryGeometry::f16), selected only where the CPU has fp16
  // arithmetic (kernels/isa.h Feature::kFp16Arith): a, b and out point at IEEE halves and
  // n counts halves. It claims the ops and activations whose results equal
  // binary_reference's on the widened halves rounded to halves (core/half.h
  // float_to_half) bit for bit.
  bool f16 = false;
};

const std::vector<const BinaryKernel*>& binary_kernels();
const BinaryKernel* select_binary_kernel(const BinaryGeometry& g, Isa isa);
// Add, Sub, Mul, Div, Max and Min (NaN propagating, as torch.maximum), Pow (std::pow).
void binary_reference(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n);

// ---- Eltwise (n-ary fold) -----------------------------------------------------------

struct EltwiseGeometry {
  fb::EltwiseOp op = fb::EltwiseOp::Sum;
  ActivationSpec act;  // applied to the folded value
  bool f16 = false;    // operands are IEEE halves, as BinaryGeometry::f16
};

// Inputs are folded in their order, starting from the first:
//   Sum:  acc = coef[0] * x0, then acc = acc + coef[k] * xk
//   Prod: acc = x0, then acc = acc * xk
//   Max:  acc = x0, then acc = max(acc, xk) (NaN propagating)
// coef == nullptr means every coefficient is 1 (coefficients weight a Sum only).
// A long fold may be split into passes whose first source is the previous pass's
// output with coefficient 1 and act None: 1 * acc == acc, so the bits do not change.
struct EltwiseKernel {
  const char* name;  // "f32_eltwise_neon"
  Isa isa;
  bool (*supports)(const EltwiseGeometry& g);
  double tolerance;
  // out[i] = act(fold of srcs[0..count)[i]); count >= 1; srcs[0] may equal out.
  void (*run)(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out,
              size_t n);
  // A kernel for halves (EltwiseGeometry::f16), as BinaryKernel::f16: equal to
  // eltwise_reference rounded to halves for a fold of at most 2 inputs (it folds in
  // fp16), coefficients absent or all 1 (it does not read them).
  bool f16 = false;
};

const std::vector<const EltwiseKernel*>& eltwise_kernels();
const EltwiseKernel* select_eltwise_kernel(const EltwiseGeometry& g, Isa isa);
void eltwise_reference(const EltwiseGeometry& g, const float* const* srcs, const float* coef, int count, float* out,
                       size_t n);

// ---- Activation -------------------------------------------------------------------

struct ActivationKernel {
  const char* name;  // "f32_activation_neon"
  Isa isa;
  bool (*supports)(const ActivationSpec& a);
  double tolerance;
  // dst[i] = f(src[i]) for i < n; src may equal dst.
  void (*run)(const ActivationSpec& a, const float* src, float* dst, size_t n);
};

const std::vector<const ActivationKernel*>& activation_kernels();
const ActivationKernel* select_activation_kernel(const ActivationSpec& a, Isa isa);
// activate_array of layers/activation.h.
void activation_reference(const ActivationSpec& a, const float* src, float* dst, size_t n);

// ---- Per-channel affine map -------------------------------------------------------

struct AffineKernel {
  const char* name;  // "f32_affine_neon"
  Isa isa;
  double tolerance;
  // dst[i] = src[i] * scale + shift for i < n; src may equal dst.
  void (*run)(const float* src, float* dst, size_t n, float scale, float shift);
};

const std::vector<const AffineKernel*>& affine_kernels();
// Every affine kernel computes every input; nullptr under Isa::kRef.
const AffineKernel* select_affine_kernel(Isa isa);
void affine_reference(const float* src, float* dst, size_t n, float scale, float shift);

// ---- Work splitting shared by the layers ---------------------------------------------

// Long rows are cut into pieces of this many values so that a 1-D or 2-D blob (one
// row) still spreads over the threads; elementwise results do not depend on the cut.
constexpr size_t kElementwiseChunk = 8192;

namespace detail {
// Defined once per architecture (src/arm/registry_arm.cpp, src/x86/registry_x86.cpp,
// src/kernels/registry_generic.cpp): that architecture's kernels in priority order.
std::vector<const BinaryKernel*> arch_binary_kernels();
std::vector<const EltwiseKernel*> arch_eltwise_kernels();
std::vector<const ActivationKernel*> arch_activation_kernels();
std::vector<const AffineKernel*> arch_affine_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
