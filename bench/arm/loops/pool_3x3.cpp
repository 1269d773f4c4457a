// The vertical pass of 3x3 max pooling (src/arm/f32_pool2d_neon.h): 16 columns of
// three rows per iteration (no multiply-adds: reported for its cycles).
#include "arm/f32_pool2d_neon.h"

extern "C" void mca_pool_max_vertical(const float* src, size_t row_stride, float* buf, int n) {
  kestrel::kernels::arm::pool_vertical_q<kestrel::kernels::arm::MaxPoolQ>(src, row_stride, 3, buf, n);
}
