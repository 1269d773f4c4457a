#include "fma_peak.h"

namespace kestrel::bench::detail {

FmaLoop fma_loop_for(kernels::Isa isa, int* lanes) {
  if (isa != kernels::Isa::kNeon) return nullptr;
  *lanes = 4;
  return fma_loop_neon;
}

}  // namespace kestrel::bench::detail
