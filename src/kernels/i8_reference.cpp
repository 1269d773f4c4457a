#include "kernels/i8_reference.h"

#include <algorithm>
#include <cmath>

#include "kernels/reference_loops.h"

namespace kestrel::kernels {

int8_t quantize_i8(float x, float scale) {
  const float v = x * scale;
  if (std::isnan(v)) return 0;
  // Clamped first: nearbyint of a large float is exact, and the cast then in range.
  const float r = std::nearbyint(std::min(static_cast<float>(kI8Max), std::max(-static_cast<float>(kI8Max), v)));
  return static_cast<int8_t>(r);
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

namespace {

// int32 sums of int8 products, then the per-channel dequantization, the bias and the
// activation in fp32, and an int8 or fp32 store (i8_reference.h).
template <class Out>
struct I8Accumulation {
  const ActivationSpec& act;
  const float* dequant;
  float out_scale;
  int32_t start(const float*) const { return 0; }
  int32_t add(int32_t sum, int8_t w, int8_t x) const { return sum + static_cast<int32_t>(w) * x; }
  Out finish(int32_t sum, const float* b, int oc) const {
    const float scaled = static_cast<float>(sum) * dequant[oc];
    const float y = activate(scaled + *b, act);
    if constexpr (sizeof(Out) == 1) {
      return quantize_i8(y, out_scale);
    } else {
      return y;
    }
  }
};

}  // namespace

void conv_reference_i8(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias,
                       const int8_t* in, size_t in_cstep, float out_scale, int8_t* out_i8, float* out_f32,
                       size_t out_cstep, int num_threads) {
  if (out_scale > 0.f) {
    conv_reference_loop(g, weight, bias, in, in_cstep, out_i8, out_cstep, num_threads,
                        I8Accumulation<int8_t>{g.act, dequant, out_scale});
  } else {
    conv_reference_loop(g, weight, bias, in, in_cstep, out_f32, out_cstep, num_threads,
                        I8Accumulation<float>{g.act, dequant, 0.f});
  }
}

}  // namespace kestrel::kernels
