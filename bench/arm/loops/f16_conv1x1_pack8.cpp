// The fp16 16-channel x 8-pixel tile of the pack8 1x1 convolution
// (src/arm/f16_conv1x1_pack8_16x8_neonfp16.h, tile_16x8); mca.py cuts its innermost loop
// (one 8-channel input block per turn: 6 ld1 of 4 vectors, 128 FMLA .8h) and compiles this file
// with -march=armv8.2-a+fp16 (the f16_ prefix).
#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"

using namespace kestrel::kernels::arm::conv1x1_pack8_f16;

extern "C" void mca_f16_conv1x1_pack8_16x8(const half* x, size_t xstep, int kb, const half* w, half* y,
                                           size_t ystep) {
  tile_16x8(x, xstep, kb, w, y, ystep, ReLU{});
}
