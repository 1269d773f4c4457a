// The binary-op microkernel: out = act(a op b) on contiguous rows, with either
// operand a single broadcast value. 16 floats per step; Max and Min keep the
// reference's NaN rule (a NaN in either operand gives NaN) bit for bit.
#pragma once
#include <arm_neon.h>

#include <cstddef>

#include "arm/f32_activation_neon.h"
#include "kernels/elementwise_kernels.h"

namespace kestrel::kernels::arm {

struct AddQ { static float32x4_t apply(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); } };
struct SubQ { static float32x4_t apply(float32x4_t a, float32x4_t b) { return vsubq_f32(a, b); } };
struct MulQ { static float32x4_t apply(float32x4_t a, float32x4_t b) { return vmulq_f32(a, b); } };
struct DivQ { static float32x4_t apply(float32x4_t a, float32x4_t b) { return vdivq_f32(a, b); } };
// (a > b || isnan(a)) ? a : b, as the reference writes it.
struct MaxQ {
  static float32x4_t apply(float32x4_t a, float32x4_t b) {
    const uint32x4_t a_nan = vmvnq_u32(vceqq_f32(a, a));
    return vbslq_f32(vorrq_u32(vcgtq_f32(a, b), a_nan), a, b);
  }
};
// (a < b || isnan(a)) ? a : b.
struct MinQ {
  static float32x4_t apply(float32x4_t a, float32x4_t b) {
    const uint32x4_t a_nan = vmvnq_u32(vceqq_f32(a, a));
    return vbslq_f32(vorrq_u32(vcltq_f32(a, b), a_nan), a, b);
  }
};

// One operand as seen by the row loop: an array, or one value in every lane.
template <bool kScalar>
struct OperandQ {
  const float* p;
  float32x4_t s;
  explicit OperandQ(const float* data) : p(data), s(kScalar ? vdupq_n_f32(data[0]) : vdupq_n_f32(0.f)) {}
  float32x4_t load(size_t i) const {
    if constexpr (kScalar) return s;
    else return vld1q_f32(p + i);
  }
  float32x4_t load_partial(size_t i, size_t n) const {
    if constexpr (kScalar) return s;
    else return arm::load_partial(p + i, n);
  }
};

// out[i] = T(a[i] Op b[i]) for i < n; the broadcast operand's value is read before
// anything is written, so out may equal either operand.
template <class Op, BinaryForm F, fb::ActivationType T>
inline void binary_row_q(const float* a, const float* b, float* out, size_t n, const ActivationQ& p) {
  const OperandQ<F == BinaryForm::kScalarArray> qa(a);
  const OperandQ<F == BinaryForm::kArrayScalar> qb(b);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const float32x4_t r0 = Op::apply(qa.load(i), qb.load(i));
    const float32x4_t r1 = Op::apply(qa.load(i + 4), qb.load(i + 4));
    const float32x4_t r2 = Op::apply(qa.load(i + 8), qb.load(i + 8));
    const float32x4_t r3 = Op::apply(qa.load(i + 12), qb.load(i + 12));
    vst1q_f32(out + i, activate_q<T>(r0, p));
    vst1q_f32(out + i + 4, activate_q<T>(r1, p));
    vst1q_f32(out + i + 8, activate_q<T>(r2, p));
    vst1q_f32(out + i + 12, activate_q<T>(r3, p));
  }
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, activate_q<T>(Op::apply(qa.load(i), qb.load(i)), p));
  if (i < n) {
    const size_t r = n - i;
    store_partial(out + i, activate_q<T>(Op::apply(qa.load_partial(i, r), qb.load_partial(i, r)), p), r);
  }
}

}  // namespace kestrel::kernels::arm
