// Architectures without fast kernels: empty registries, every layer uses its
// reference code.
#include "kernels/conv_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/half_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/interp_kernels.h"
#include "kernels/pool_kernels.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() { return {}; }
std::vector<const I8ConvKernel*> arch_i8_conv_kernels() { return {}; }
std::vector<const I8MapKernel*> arch_i8_map_kernels() { return {}; }

std::vector<const PoolKernel*> arch_pool_kernels() { return {}; }
std::vector<const InterpKernel*> arch_interp_kernels() { return {}; }
std::vector<const FcKernel*> arch_fc_kernels() { return {}; }
std::vector<const BinaryKernel*> arch_binary_kernels() { return {}; }
std::vector<const EltwiseKernel*> arch_eltwise_kernels() { return {}; }
std::vector<const ActivationKernel*> arch_activation_kernels() { return {}; }
std::vector<const AffineKernel*> arch_affine_kernels() { return {}; }
std::vector<const HalfKernel*> arch_half_kernels() { return {}; }
std::vector<const SoftmaxKernel*> arch_softmax_kernels() { return {}; }

}  // namespace kestrel::kernels::detail
