#include "kernels/isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace kestrel::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kNeon: return "neon";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    default: return "ref";
  }
}

Isa host_isa() {
  static const Isa isa = detail::detect_host_isa();
  return isa;
}

bool host_has_in_order_cores() {
  static const bool in_order = detail::detect_in_order_cores();
  return in_order;
}

namespace {

Isa read_active() {
  const Isa host = host_isa();
  const char* env = std::getenv("KESTREL_ISA");
  if (!env || !*env) return host;
  for (Isa want : {Isa::kRef, Isa::kNeon, Isa::kAvx2, Isa::kAvx512}) {
    if (std::strcmp(env, isa_name(want)) != 0) continue;
    if (want == Isa::kRef || isa_allows(host, want)) return want;
    std::fprintf(stderr, "kestrel: KESTREL_ISA=%s is not available on this CPU (it has %s); using %s\n", env,
                 isa_name(host), isa_name(host));
    return host;
  }
  std::fprintf(stderr, "kestrel: unknown KESTREL_ISA=%s (ref, neon, avx2, avx512); using %s\n", env, isa_name(host));
  return host;
}

}  // namespace

Isa active_isa() {
  static const Isa isa = read_active();
  return isa;
}

bool isa_allows(Isa active, Isa kernel) {
  if (kernel == Isa::kRef) return true;
  // NEON and the x86 levels never mix: one binary holds one architecture's kernels.
  if (kernel == Isa::kNeon) return active == Isa::kNeon;
  if (active == Isa::kNeon) return false;
  return static_cast<int>(active) >= static_cast<int>(kernel);
}

}  // namespace kestrel::kernels
