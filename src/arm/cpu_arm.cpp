// aarch64: Advanced SIMD (NEON) is part of ARMv8-A, so every aarch64 CPU has it.
#include "kernels/isa.h"

namespace kestrel::kernels::detail {

Isa detect_host_isa() { return Isa::kNeon; }

}  // namespace kestrel::kernels::detail
