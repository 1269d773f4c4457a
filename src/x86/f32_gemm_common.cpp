// The parts of the x86 SGEMM convolutions compiled without ISA flags (see
// f32_gemm_common.h).
#include "x86/f32_gemm_common.h"

namespace kestrel::kernels::x86::gemm_common {

void activate_inplace_plain(float* p, size_t n, const ActivationSpec& a) { activate_inplace(p, n, a); }

}  // namespace kestrel::kernels::x86::gemm_common
