// The 8 x 12 SGEMM microkernel of the general and Winograd convolutions
// (src/arm/f32_gemm_8x12_neon.h); mca.py cuts its innermost loop (one k step).
#include "arm/f32_gemm_8x12_neon.h"

using namespace kestrel::kernels::arm::gemm;

extern "C" void mca_gemm_8x12(size_t k, const float* a, const float* b, float* c) {
  f32_gemm_8x12_neon(k, a, b, kNr, RawStore{c, kNr});
}
