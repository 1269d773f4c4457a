// Architectures without fast kernels: empty registries, every layer uses its
// reference code.
#include "kernels/conv_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() { return {}; }

}  // namespace kestrel::kernels::detail
