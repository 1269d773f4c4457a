// The interior 2-row x 8-pixel steps of the 3x3 depthwise convolution
// (src/arm/f32_dwconv3x3_neon.h), stride 1 and 2, ReLU fused, compiled as the library
// compiles them; mca.py cuts each function's innermost loop (one step).
#include "arm/f32_dwconv3x3_neon.h"

using namespace kestrel::kernels::arm::dwconv3x3;

extern "C" void mca_dwconv3x3_s1_2x8(const Rows& rows, const float32x4_t w[3], const Act& act, float* const out[2],
                                      int blocks) {
  blocks_8<1, 2, Epilogue::kRelu>(rows, 0, w, act, out, 0, blocks);
}

extern "C" void mca_dwconv3x3_s2_2x8(const Rows& rows, const float32x4_t w[3], const Act& act, float* const out[2],
                                      int blocks) {
  blocks_8<2, 2, Epilogue::kRelu>(rows, 0, w, act, out, 0, blocks);
}
