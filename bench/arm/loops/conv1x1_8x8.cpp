// The 8 x 8 tile of the 1x1 convolution (src/arm/f32_conv1x1_8x8_neon.h), compiled as
// the library compiles it; mca.py cuts its innermost loop (4 input channels per step).
#include "arm/f32_conv1x1_8x8_neon.h"

using namespace kestrel::kernels::arm::conv1x1;

namespace {
void store(float* o, const Col& c) {
  float32x4_t v[8] = {c.o0, c.o1, c.o2, c.o3, c.o4, c.o5, c.o6, c.o7};
  for (int i = 0; i < 8; ++i) vst1q_f32(o + 4 * i, v[i]);
}
}  // namespace

extern "C" void mca_conv1x1_8x8(int k, const float* w, const float* x, float* out) {
  const Acc<2> acc = conv1x1_tile<2>(k, w, x);
  store(out, acc.c0);
  store(out + 32, acc.c1);
}
