// aarch64 kernel registries, in priority order: a specialised kernel before a general
// one, so select_*_kernel picks the most specific kernel that claims a geometry.
#include "arm/arm_kernels.h"
#include "kernels/i8_conv_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() {
  return {
      &arm::kF16Conv1x1Pack8_Neon,
      &arm::kF16DwConv3x3Pack8_Neon,
      &arm::kF16ConvStemPack1to8_Neon,
      &arm::kF16ConvIm2colPack8_Neon,
      &arm::kF32Conv1x1Pack4_12x7_F16w_Neon,  // each half-weight twin before its fp32 twin
      &arm::kF32Conv1x1Pack4_12x7_Neon,
      &arm::kF32Conv1x1Pack4_F16w_Neon,
      &arm::kF32Conv1x1Pack4_Neon,
      &arm::kF32Conv1x1_8x8_Neon,
      &arm::kF32DwConv3x3Pack4_Neon,
      &arm::kF32DwConv3x3_Neon,
      &arm::kF32ConvWinogradPack4_Neon,
      &arm::kF32ConvStemPack1to4_Neon,
      &arm::kF32ConvIm2colPack4_F16w_Neon,
      &arm::kF32ConvIm2colPack4_Neon,
      &arm::kF32ConvSgemm_Neon,
  };
}

// SDOT where the core has it, each before its SMULL/SMLAL twin for ARMv8.0 cores.
std::vector<const I8ConvKernel*> arch_i8_conv_kernels() {
  return {&arm::kI8Conv1x1_8x12_NeonDot, &arm::kI8Conv1x1_4x4_Neon, &arm::kI8DwConv3x3_16x2_NeonDot,
          &arm::kI8DwConv5x5_16x2_NeonDot, &arm::kI8DwConv3x3_Pack4_Neon, &arm::kI8DwConv3x3_8x2_Neon, &arm::kI8DwConv5x5_8x2_Neon,
          &arm::kI8ConvIm2col_8x12_NeonDot, &arm::kI8ConvIm2col_4x4_Neon};
}
std::vector<const I8MapKernel*> arch_i8_map_kernels() { return {&arm::kI8Map_Neon}; }

std::vector<const PoolKernel*> arch_pool_kernels() {
  return {
      &arm::kF16PoolGlobalPack8_Neon,
      &arm::kF16Pool2dPack8_Neon,
      &arm::kF32PoolGlobalPack4_Neon,
      &arm::kF32Pool2dPack4_Neon,
      &arm::kF32PoolGlobal_Neon,
      &arm::kF32Pool2d_Neon,
  };
}

std::vector<const InterpKernel*> arch_interp_kernels() { return {&arm::kF16InterpPack8_Neon}; }

std::vector<const FcKernel*> arch_fc_kernels() { return {&arm::kF32Gemv8x4_F16w_Neon, &arm::kF32Gemv8x4_Neon}; }

std::vector<const BinaryKernel*> arch_binary_kernels() { return {&arm::kF16Binary_Neon, &arm::kF32Binary_Neon}; }

std::vector<const EltwiseKernel*> arch_eltwise_kernels() { return {&arm::kF16Eltwise_Neon, &arm::kF32Eltwise_Neon}; }

std::vector<const ActivationKernel*> arch_activation_kernels() { return {&arm::kF32Activation_Neon}; }

std::vector<const AffineKernel*> arch_affine_kernels() { return {&arm::kF32Affine_Neon}; }
std::vector<const HalfKernel*> arch_half_kernels() { return {&arm::kF16Convert_Neon}; }

std::vector<const SoftmaxKernel*> arch_softmax_kernels() { return {&arm::kF32Softmax_Neon}; }

}  // namespace kestrel::kernels::detail
