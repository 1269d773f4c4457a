// x86-64 kernel registries, in priority order: the widest ISA first, and within one
// ISA a specialised kernel before a general one.
#include "x86/x86_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() {
  return {};
}

}  // namespace kestrel::kernels::detail
