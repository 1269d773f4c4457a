// aarch64 kernel registries, in priority order: a specialised kernel before a general
// one, so select_*_kernel picks the most specific kernel that claims a geometry.
#include "arm/arm_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() {
  return {
      // &arm::kF32Conv1x1_8x8_Neon,
      // &arm::kF32DwConv3x3_Neon,
      // &arm::kF32ConvWinograd_Neon,
      // &arm::kF32ConvSgemm_Neon,
  };
}

}  // namespace kestrel::kernels::detail
