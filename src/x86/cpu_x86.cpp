// x86-64: CPUID through GCC's builtins (which also check that the OS saves the
// AVX/AVX-512 register state).
#include "kernels/isa.h"

namespace kestrel::kernels::detail {

Isa detect_host_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
  return Isa::kRef;
}

bool detect_in_order_cores() { return false; }

}  // namespace kestrel::kernels::detail
