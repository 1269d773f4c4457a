// Declarations of f32_gemm_common.cpp: the parts of the x86 SGEMM convolutions
// compiled without ISA flags.
#pragma once
#include <cstddef>

#include "layers/activation.h"

namespace kestrel::kernels::x86::gemm_common {

// activate_inplace(p, n, a), compiled once without ISA flags: the "other" activations
// on stored values. An ISA translation unit that instantiated activate_inplace itself
// would emit a weak copy built with -mavx512f (or -mavx2) that the linker may pick for
// every caller, the reference path of an AVX2-only CPU included.
void activate_inplace_plain(float* p, size_t n, const ActivationSpec& a);

}  // namespace kestrel::kernels::x86::gemm_common
