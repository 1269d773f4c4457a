// The 8-channel x 8-pixel asm tile of the pack4 1x1 convolution
// (src/arm/f32_conv1x1_pack4_8x8_neon.h), also the GEMM of the pack4 Winograd and
// im2col kernels; mca.py cuts its innermost loop (four 4-channel steps per turn).
#include "arm/f32_conv1x1_pack4_8x8_neon.h"

using namespace kestrel::kernels::arm::conv1x1_pack4;

extern "C" void mca_conv1x1_pack4_8x8(size_t kb, const float* w, const float* x, size_t xstep, const float* bias,
                                      float* lo, float* hi) {
  store8x8_pack4(tile<8>(Loop(kb, xstep), w, x, bias), lo, hi);
}
