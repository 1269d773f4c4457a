#include "fma_peak.h"

namespace kestrel::bench::detail {

FmaLoop fma_loop_for(kernels::Isa isa, int* lanes) {
  switch (isa) {
    case kernels::Isa::kAvx512:
      *lanes = 16;
      return fma_loop_avx512;
    case kernels::Isa::kAvx2:
      *lanes = 8;
      return fma_loop_avx2;
    default:
      return nullptr;
  }
}

}  // namespace kestrel::bench::detail
