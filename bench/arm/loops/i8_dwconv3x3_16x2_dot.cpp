// The SDOT int8 depthwise step (src/arm/i8_dwconv_16x2_neondot.h): 3x3, 16 pixels of two
// output rows at stride 1 and of one row at stride 2, window-row bytes gathered by TBL,
// SDOT by element, dequantized with ReLU; mca.py cuts the loop along a row.
#include "arm/i8_dwconv_16x2_neondot.h"

using namespace kestrel::kernels::arm;

// ReLU, as gemm::Epilogue<kReLU> computes it (that header needs the library's generated
// ones).
struct Relu {
  float32x4_t operator()(float32x4_t x) const { return vmaxq_f32(x, vdupq_n_f32(0.f)); }
};

template <int S>
static void walk(const int8_t* const* rows, float* const* dst, const int8_t* weights, int steps) {
  using namespace i8dwdot;
  int8x16_t w[kWeightVectors<3>];
  for (int i = 0; i < kWeightVectors<3>; ++i) w[i] = vld1q_s8(weights + 16 * i);
  const float32x4_t dq = vdupq_n_f32(0.01f), b = vdupq_n_f32(0.5f);
  const Factors f{dq, b, dq, b, vdupq_n_s8(-127), vdupq_n_s8(127)};
  const Indices<S, 3> ix;
  const Relu epi;
  for (int i = 0; i < steps; ++i) step<3, S, float, Relu, false>(rows, dst, i * kStep, w, ix, f, kStep, epi);
}

extern "C" void mca_i8_dwconv3x3_s1_16x2_dot(const int8_t* const* rows, float* const* dst, const int8_t* weights,
                                             int steps) {
  walk<1>(rows, dst, weights, steps);
}

extern "C" void mca_i8_dwconv3x3_s2_16x1_dot(const int8_t* const* rows, float* const* dst, const int8_t* weights,
                                             int steps) {
  walk<2>(rows, dst, weights, steps);
}
