// The SMULL/SMLAL2 + SADALP tile of the int8 convolutions without dotprod
// (src/arm/i8_conv_4x4_neon.h: 4 channels x 4 pixels, 48 multiplies and pair adds a
// group of 16 taps); mca.py cuts its loop of two groups (512 multiply-adds, which its
// FMA column does not count: no FMLA or SDOT in it).
#include "arm/i8_conv_4x4_neon.h"

using namespace kestrel::kernels::arm;

extern "C" void mca_i8_conv_4x4(size_t kd, const int8_t* a, const int8_t* x, size_t xs, int32_t* out) {
  i8::smlal_4x4(kd, a, x, xs, out);
}
