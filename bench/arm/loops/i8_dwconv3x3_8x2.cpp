// The int8 depthwise step (src/arm/i8_dwconv_8x2_neon.h): 3x3, 8 pixels of two output
// rows at stride 1 and of one row at stride 2 (rows split into even and odd columns),
// sums of quantized values held as floats, then dequantized with ReLU; mca.py cuts the
// loop along a row.
#include "arm/i8_dwconv_8x2_neon.h"

using namespace kestrel::kernels::arm;

// ReLU, as gemm::Epilogue<kReLU> computes it (that header needs the library's generated
// ones).
struct Relu {
  float32x4_t operator()(float32x4_t x) const { return vmaxq_f32(x, vdupq_n_f32(0.f)); }
};

template <int S>
static void walk(i8dw::Walk<3, S> w, const float* weights, int steps) {
  float32x4_t wv[3];
  for (int i = 0; i < 3; ++i) wv[i] = vld1q_f32(weights + 4 * i);
  const float32x4_t dq = vdupq_n_f32(weights[12]), b = vdupq_n_f32(weights[13]);
  const i8dw::Factors f{dq, b, dq, b, vdupq_n_s8(-127), vdupq_n_s8(127)};
  const Relu epi;
  for (int i = 0; i < steps; ++i, w.advance()) i8dw::step(w, wv, f, i8dw::kStep, epi);
}

extern "C" void mca_i8_dwconv3x3_s1_8x2(const i8dw::Walk<3, 1>& w, const float* weights, int steps) {
  walk<1>(w, weights, steps);
}

extern "C" void mca_i8_dwconv3x3_s2_8x1(const i8dw::Walk<3, 2>& w, const float* weights, int steps) {
  walk<2>(w, weights, steps);
}
