// The 12-channel x 7-pixel asm tile of the pack4 1x1 convolution
// (src/arm/f32_conv1x1_pack4_12x7_neon.h), ReLU fused; mca.py cuts its innermost loop
// (sixteen 4-channel steps per turn).
#include "arm/f32_conv1x1_pack4_12x7_neon.h"

using namespace kestrel::kernels::arm::conv1x1_pack4_12x7;

extern "C" void mca_conv1x1_pack4_12x7(size_t kb, const float* w, const float* x, size_t xstep, float* o0, float* o1,
                                       float* o2, const float* act) {
  tile<kTilePixels, Body::kEntered, Act::kReLU>(Loop(kb, xstep), w, x, o0, o1, o2, act);
}
