// The fp16 pack8 3x3 depthwise walk (src/arm/f16_dwconv3x3_pack8_neonfp16.h): strips of 4
// output pixels walked down the map, ReLU fused (fcmlt + bic), stride 1 (one turn of the
// loop: 6 input rows, 6 output rows) and stride 2 (8 input rows, 4 output rows); mca.py
// resolves the walk's .if blocks, cuts its innermost loop and compiles this file with
// -march=armv8.2-a+fp16 (the f16_ prefix).
#include "arm/f16_dwconv3x3_pack8_neonfp16.h"

using namespace kestrel::kernels::arm::dwconv3x3_pack8_f16;

extern "C" void mca_f16_dwconv3x3_pack8_s1_walk(const Walk& k, const Act& a) { walk<1, 4, 0, 0, Store::kRelu>(k, a); }

extern "C" void mca_f16_dwconv3x3_pack8_s2_walk(const Walk& k, const Act& a) { walk<2, 4, 0, 0, Store::kRelu>(k, a); }
