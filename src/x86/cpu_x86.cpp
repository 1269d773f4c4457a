// x86-64: CPUID through GCC's builtins (which also check that the OS saves the
// AVX/AVX-512 register state).
#include <cpuid.h>

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

bool detect_feature(Feature f, Isa level) {
  // Leaf 7's subleaf 1 (AVX512-BF16, AVX-VNNI) is newer than GCC 12's builtins know.
  unsigned a = 0, b = 0, c = 0, d = 0, a1 = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    unsigned b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
  }
  // Each needs the AVX state the OS saves, which the level's check saw.
  const Isa host = detect_host_isa();
  const bool avx512 = level == Isa::kAvx512 && host == Isa::kAvx512;
  const bool avx2 = level == Isa::kAvx2 && host != Isa::kRef;
  switch (f) {
    case Feature::kFp16Arith: return avx512 && (d & (1u << 23)) != 0;                        // AVX512-FP16
    case Feature::kBf16: return avx512 && (a1 & (1u << 5)) != 0;                             // AVX512-BF16
    case Feature::kDot8: return (avx512 && (c & (1u << 11))) || (avx2 && (a1 & (1u << 4)));  // (AVX512-)VNNI
    case Feature::kVbmi: return avx512 && (c & (1u << 1)) && (b & (1u << 30)) && (b & (1u << 31));  // VBMI, BW, VL
  }
  return false;
}

}  // namespace kestrel::kernels::detail
