// x86-64 kernel registries, in priority order: the widest ISA first, and within one
// ISA a specialised kernel before a general one.
#include "x86/x86_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/pool_kernels.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() {
  return {};
}

std::vector<const PoolKernel*> arch_pool_kernels() { return {}; }
std::vector<const FcKernel*> arch_fc_kernels() { return {}; }
std::vector<const BinaryKernel*> arch_binary_kernels() { return {}; }
std::vector<const EltwiseKernel*> arch_eltwise_kernels() { return {}; }
std::vector<const ActivationKernel*> arch_activation_kernels() { return {}; }
std::vector<const AffineKernel*> arch_affine_kernels() { return {}; }
std::vector<const SoftmaxKernel*> arch_softmax_kernels() { return {}; }

}  // namespace kestrel::kernels::detail
