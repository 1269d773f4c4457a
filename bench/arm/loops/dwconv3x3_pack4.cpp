// The pack4 3x3 depthwise walk (src/arm/f32_dwconv3x3_pack4_neon.h): strips of 4
// output pixels walked down the map, ReLU fused, stride 1 (one turn of the loop: 6
// input rows, 6 output rows) and stride 2 (8 input rows, 4 output rows); mca.py
// resolves the walk's .if blocks and cuts its innermost loop.
#include "arm/f32_dwconv3x3_pack4_neon.h"

using namespace kestrel::kernels::arm::dwconv3x3_pack4;

extern "C" void mca_dwconv3x3_pack4_s1_walk(const Band& b, const float* first, const float* rows, const float* last,
                                            float* out, int strips, const Act& a) {
  walk<1, 4, 0, 0, Store::kRelu>(b, first, rows, last, out, strips, a);
}

extern "C" void mca_dwconv3x3_pack4_s2_walk(const Band& b, const float* first, const float* rows, const float* last,
                                            float* out, int strips, const Act& a) {
  walk<2, 4, 0, 0, Store::kRelu>(b, first, rows, last, out, strips, a);
}
