// The inner-product GEMV step (src/arm/f32_gemv_8x4_neon.h): 8 outputs x 4 inputs per
// iteration; mca.py cuts its innermost loop.
#include "arm/f32_gemv_8x4_neon.h"

extern "C" void mca_gemv_8x4(const float* w, const float* x, size_t n, float* out) {
  float32x4_t acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = vdupq_n_f32(0.f);
  kestrel::kernels::arm::gemv_8x4_q(w, x, n, acc);
  for (int i = 0; i < 8; ++i) vst1q_f32(out + 4 * i, acc[i]);
}
