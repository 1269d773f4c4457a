// The fp16 stem's tile of 16 output channels x 8 pixels
// (src/arm/f16_conv_stem_pack1to8_neonfp16.h, pair_tile), 3x3 at stride 2 (MobileNet's
// first layer at fp16) and stride 1; mca.py cuts its innermost loop (one input channel
// per turn: 3 row loads, 5 ld1 of the 18 weight vectors, 144 FMLA .8h by element) and
// compiles this file with -march=armv8.2-a+fp16 (the f16_ prefix).
#include "arm/f16_conv_stem_pack1to8_neonfp16.h"

using namespace kestrel::kernels::arm::stem_pack8_f16;
using kestrel::kernels::arm::conv1x1_pack8_f16::ReLU;

extern "C" void mca_f16_conv_stem_pack8_k3s2(const half* x, size_t rs, size_t cs, int in_c, const half* w, half* o,
                                             size_t ostep) {
  pair_tile<3, 2>(x, rs, cs, in_c, w, o, ostep, ReLU{});
}

extern "C" void mca_f16_conv_stem_pack8_k3s1(const half* x, size_t rs, size_t cs, int in_c, const half* w, half* o,
                                             size_t ostep) {
  pair_tile<3, 1>(x, rs, cs, in_c, w, o, ostep, ReLU{});
}
