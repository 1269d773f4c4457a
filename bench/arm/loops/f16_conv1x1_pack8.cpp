// The fp16 tiles of the pack8 1x1 convolution (src/arm/f16_conv1x1_pack8_16x8_neonfp16.h):
// 16 channels x 8 pixels (tile_16x8: per 8-channel input block 6 ld1 of 4 vectors, 128
// FMLA .8h) and 8 x 8 (tile_8x8, for 8-channel panels: 4 ld1, 64 FMLA); mca.py cuts each
// one's innermost loop and compiles this file with -march=armv8.2-a+fp16 (the f16_ prefix).
#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"

using namespace kestrel::kernels::arm::conv1x1_pack8_f16;

extern "C" void mca_f16_conv1x1_pack8_16x8(const half* x, size_t xstep, int kb, const half* w, half* y,
                                           size_t ystep) {
  tile_16x8(x, xstep, kb, w, y, ystep, ReLU{});
}

extern "C" void mca_f16_conv1x1_pack8_8x8(const half* x, size_t xstep, int kb, const half* w, half* y, size_t ystep) {
  tile_8x8(x, xstep, kb, w, ToPack8<ReLU>{y, ystep, ReLU{}});
}
