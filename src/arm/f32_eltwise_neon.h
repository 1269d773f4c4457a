// The Eltwise microkernel: folds any number of same-shape inputs in one pass, 16
// floats at a time held in 4 accumulators while the inputs stream past, so each
// input is read once and the output written once (the reference makes a pass per
// input). Sum uses an FMA with the coefficient (1 when there are none: exact).
#pragma once
#include <arm_neon.h>

#include <cstddef>

#include "arm/f32_activation_neon.h"
#include "arm/f32_binary_neon.h"

namespace kestrel::kernels::arm {

struct SumFoldQ {
  static float32x4_t first(float32x4_t x, float32x4_t k) { return vmulq_f32(x, k); }
  static float32x4_t next(float32x4_t acc, float32x4_t x, float32x4_t k) { return vfmaq_f32(acc, x, k); }
};
struct ProdFoldQ {
  static float32x4_t first(float32x4_t x, float32x4_t) { return x; }
  static float32x4_t next(float32x4_t acc, float32x4_t x, float32x4_t) { return vmulq_f32(acc, x); }
};
struct MaxFoldQ {
  static float32x4_t first(float32x4_t x, float32x4_t) { return x; }
  static float32x4_t next(float32x4_t acc, float32x4_t x, float32x4_t) { return MaxQ::apply(acc, x); }
};

inline float32x4_t coef_q(const float* coef, int k) { return vdupq_n_f32(coef ? coef[k] : 1.f); }

template <class Fold, fb::ActivationType T>
inline void eltwise_row_q(const float* const* srcs, const float* coef, int count, float* out, size_t n,
                          const ActivationQ& p) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const float* s = srcs[0] + i;
    const float32x4_t k0 = coef_q(coef, 0);
    float32x4_t a0 = Fold::first(vld1q_f32(s), k0), a1 = Fold::first(vld1q_f32(s + 4), k0);
    float32x4_t a2 = Fold::first(vld1q_f32(s + 8), k0), a3 = Fold::first(vld1q_f32(s + 12), k0);
    for (int k = 1; k < count; ++k) {
      const float* x = srcs[k] + i;
      const float32x4_t c = coef_q(coef, k);
      a0 = Fold::next(a0, vld1q_f32(x), c);
      a1 = Fold::next(a1, vld1q_f32(x + 4), c);
      a2 = Fold::next(a2, vld1q_f32(x + 8), c);
      a3 = Fold::next(a3, vld1q_f32(x + 12), c);
    }
    vst1q_f32(out + i, activate_q<T>(a0, p));
    vst1q_f32(out + i + 4, activate_q<T>(a1, p));
    vst1q_f32(out + i + 8, activate_q<T>(a2, p));
    vst1q_f32(out + i + 12, activate_q<T>(a3, p));
  }
  for (; i < n; i += 4) {
    const size_t r = n - i < 4 ? n - i : 4;
    const auto load = [&](const float* x) { return r == 4 ? vld1q_f32(x + i) : load_partial(x + i, r); };
    float32x4_t a = Fold::first(load(srcs[0]), coef_q(coef, 0));
    for (int k = 1; k < count; ++k) a = Fold::next(a, load(srcs[k]), coef_q(coef, k));
    a = activate_q<T>(a, p);
    if (r == 4) vst1q_f32(out + i, a);
    else store_partial(out + i, a, r);
  }
}

}  // namespace kestrel::kernels::arm
