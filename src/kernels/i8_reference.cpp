#include "kernels/i8_reference.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/reference_loops.h"

namespace kestrel::kernels {

int8_t quantize_i8(float x, float scale) {
  const float v = x * scale;
  if (std::isnan(v)) return 0;
  // Clamped first: nearbyint of a large float is exact, and the cast then in range.
  const float r = std::nearbyint(std::min(static_cast<float>(kI8Max), std::max(-static_cast<float>(kI8Max), v)));
  return static_cast<int8_t>(r);
}

bool i8_output_activation(const ActivationSpec& act) {
  using T = fb::ActivationType;
  return act.type == T::None || act.type == T::ReLU || act.type == T::Clip || act.type == T::LeakyReLU;
}

void i8_output_bounds(const ActivationSpec& act, float out_scale, int* lo, int* hi) {
  *lo = -kI8Max;
  *hi = kI8Max;
  if (act.type == fb::ActivationType::ReLU) *lo = 0;
  if (act.type == fb::ActivationType::Clip) {
    *lo = quantize_i8(act.alpha, out_scale);
    *hi = quantize_i8(act.beta, out_scale);
  }
}

int8_t requantize_i8(int32_t sum, float m, float c, const ActivationSpec& act, int lo, int hi) {
  return requantize_i8(static_cast<float>(sum), m, c, act, lo, hi);
}

int8_t requantize_i8(float x, float m, float c, const ActivationSpec& act, int lo, int hi) {
  float v = std::fma(x, m, c);
  if (act.type == fb::ActivationType::LeakyReLU && !(v > 0.f)) v *= act.alpha;
  const int q = quantize_i8(v, 1.f);
  return static_cast<int8_t>(std::min(hi, std::max(lo, q)));
}

namespace {

inline float add_operand(float x, float) { return x; }
inline float add_operand(int8_t q, float dequant) { return static_cast<float>(q) * dequant; }

}  // namespace

void i8_add_reference(const I8AddRow& r, size_t n, const ActivationSpec& act) {
  int lo = 0, hi = 0;
  if (r.out_scale > 0.f) i8_output_bounds(act, r.out_scale, &lo, &hi);
  with_i8_add_types(r, [&](const auto* a, const auto* b, auto* out) {
    for (size_t i = 0; i < n; ++i) {
      const float y = add_operand(a[i], r.a_dequant) + add_operand(b[i], r.b_dequant);
      if constexpr (std::is_same_v<std::remove_pointer_t<decltype(out)>, int8_t>) {
        out[i] = requantize_i8(y, r.out_scale, 0.f, act, lo, hi);
      } else {
        out[i] = activate(y, act);
      }
    }
  });
}

void quantize_i8(const float* x, int8_t* q, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) q[i] = quantize_i8(x[i], scale);
}

void quantize_rows_i8(const float* w, size_t rows, size_t n, int8_t* q, float* scales) {
  for (size_t r = 0; r < rows; ++r) {
    float m = 0.f;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(w[r * n + i]));
    scales[r] = m > 0.f ? static_cast<float>(kI8Max) / m : 1.f;
    quantize_i8(w + r * n, q + r * n, n, scales[r]);
  }
}

void dequantize_rows_i8(const int8_t* q, const float* scales, size_t rows, size_t n, float* w) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < n; ++i) w[r * n + i] = static_cast<float>(q[r * n + i]) / scales[r];
  }
}

namespace {

// int32 sums of int8 products, then the per-channel dequantization, the bias and the
// activation in fp32 (an fp32 output), or the one-step requantization (an int8 output;
// i8_reference.h).
struct I8ToFloat {
  const ActivationSpec& act;
  const float* dequant;
  int32_t start(const float*) const { return 0; }
  int32_t add(int32_t sum, int8_t w, int8_t x) const { return sum + static_cast<int32_t>(w) * x; }
  float finish(int32_t sum, const float* b, int oc) const {
    return activate(static_cast<float>(sum) * dequant[oc] + *b, act);
  }
};

struct I8ToInt8 {
  const ActivationSpec& act;
  const float* dequant;
  float out_scale;
  int lo, hi;
  int32_t start(const float*) const { return 0; }
  int32_t add(int32_t sum, int8_t w, int8_t x) const { return sum + static_cast<int32_t>(w) * x; }
  int8_t finish(int32_t sum, const float* b, int oc) const {
    return requantize_i8(sum, dequant[oc] * out_scale, *b * out_scale, act, lo, hi);
  }
};

}  // namespace

void conv_reference_i8(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias,
                       const int8_t* in, size_t in_cstep, float out_scale, int8_t* out_i8, float* out_f32,
                       size_t out_cstep, int num_threads) {
  if (out_scale > 0.f) {
    int lo = 0, hi = 0;
    i8_output_bounds(g.act, out_scale, &lo, &hi);
    conv_reference_loop(g, weight, bias, in, in_cstep, out_i8, out_cstep, num_threads,
                        I8ToInt8{g.act, dequant, out_scale, lo, hi});
  } else {
    conv_reference_loop(g, weight, bias, in, in_cstep, out_f32, out_cstep, num_threads, I8ToFloat{g.act, dequant});
  }
}

int32_t i8_sum_reference(const int8_t* q, size_t n) {
  int32_t s = 0;
  for (size_t i = 0; i < n; ++i) s += q[i];
  return s;
}

int8_t i8_max_reference(const int8_t* q, size_t n) {
  int8_t m = q[0];
  for (size_t i = 1; i < n; ++i) m = std::max(m, q[i]);
  return m;
}

float i8_global_pool_value(bool max, int32_t r, size_t n, float dequant) {
  const float y = static_cast<float>(r) * dequant;
  return max ? y : y / static_cast<float>(n);
}

int8_t i8_requantize_plain(float y, float out_scale) {
  return requantize_i8(y, out_scale, 0.f, ActivationSpec{}, -kI8Max, kI8Max);
}

}  // namespace kestrel::kernels
