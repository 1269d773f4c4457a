// aarch64: Advanced SIMD (NEON) is part of ARMv8-A, so every aarch64 CPU has it. Which
// cores issue in order is read from each core's MIDR_EL1: Linux lists them under
// /sys/devices/system/cpu/cpuN/regs/identification (every core of a big.LITTLE
// board, online or not), else this core's through `mrs` (trapped and emulated by Linux
// since 4.11 when HWCAP_CPUID says so, and by qemu-user for its -cpu model). The
// extensions are the kernel's HWCAP bits (qemu-user sets them for its -cpu model too).
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "kernels/isa.h"

namespace kestrel::kernels::detail {
namespace {

// ARM Ltd's in-order application cores (MIDR implementer 0x41, part numbers from their
// technical reference manuals): A32, A34, A53, A35, A55, A510, A520.
bool in_order(uint64_t midr) {
  if (((midr >> 24) & 0xff) != 0x41) return false;
  switch ((midr >> 4) & 0xfff) {
    case 0xd01: case 0xd02: case 0xd03: case 0xd04: case 0xd05: case 0xd46: case 0xd80: return true;
    default: return false;
  }
}

}  // namespace

Isa detect_host_isa() { return Isa::kNeon; }

bool detect_in_order_cores() {
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  bool read_any = false;
  for (long cpu = 0; cpu < cpus; ++cpu) {
    char path[96];
    std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/regs/identification/midr_el1", cpu);
    std::FILE* f = std::fopen(path, "r");
    if (!f) continue;
    unsigned long long midr = 0;
    const bool ok = std::fscanf(f, "%llx", &midr) == 1;
    std::fclose(f);
    if (!ok) continue;
    read_any = true;
    if (in_order(midr)) return true;
  }
  if (read_any || !(getauxval(AT_HWCAP) & HWCAP_CPUID)) return false;
  uint64_t midr;
  asm("mrs %0, midr_el1" : "=r"(midr));
  return in_order(midr);
}

bool detect_feature(Feature f, Isa level) {
  if (level != Isa::kNeon) return false;
  // The bits of Linux's arch/arm64/include/uapi/asm/hwcap.h, which older C libraries'
  // headers may lack.
  constexpr unsigned long kHwcapAsimdHp = 1ul << 10, kHwcapAsimdDp = 1ul << 20, kHwcap2Bf16 = 1ul << 14;
  switch (f) {
    case Feature::kFp16Arith: return (getauxval(AT_HWCAP) & kHwcapAsimdHp) != 0;
    case Feature::kDot8: return (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
    case Feature::kBf16: return (getauxval(AT_HWCAP2) & kHwcap2Bf16) != 0;
    case Feature::kVbmi: return false;
  }
  return false;
}

}  // namespace kestrel::kernels::detail
