// The SDOT tile of the int8 convolutions (src/arm/i8_conv_8x12_neondot.h: 8 channels x
// 12 pixels, 24 SDOTs a tap quad); mca.py cuts its loop of four quads.
#include "arm/i8_conv_8x12_neondot.h"

using namespace kestrel::kernels::arm;

extern "C" void mca_i8_conv_8x12_dot(size_t kd, const int8_t* a, const int8_t* x, size_t xs, int32_t* out) {
  int32x4_t acc[i8::kDotRows][3];
  i8::dot_steps<3>(kd, a, x, xs, acc);
  i8::unroll<i8::kDotRows>([&](auto r) {
    i8::unroll<3>([&](auto j) { vst1q_s32(out + (3 * r + j) * 4, acc[r][j]); });
  });
}
