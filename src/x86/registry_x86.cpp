// x86-64 kernel registries, in priority order: the widest ISA first, and within one
// ISA a specialised kernel before a general one.
#include "x86/x86_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/interp_kernels.h"
#include "kernels/pool_kernels.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::detail {

std::vector<const ConvKernel*> arch_conv_kernels() {
  // Every AVX-512 kernel before any AVX2 one: an AVX2 kernel may claim a geometry
  // that an AVX-512 one further down would take (the channel-tile kernels claim only
  // some), and the general SGEMM of a level takes everything its level declines.
  return {
      &x86::kBf16Conv1x1_32x12_Avx512Bf16,  // only where bf16 arithmetic is asked for
      &x86::kF32DwConv3x3Cvec_Avx512,
      &x86::kF32DwConv5x5Cvec_Avx512,
      &x86::kF32DwConv3x3Flat_Avx512,
      &x86::kF32DwConv3x3_Avx512,
      &x86::kF32ConvWinograd43_Avx512,
      &x86::kF32ConvRows_32x12_Avx512,  // blocked outputs only
      &x86::kF32ConvRows_8x48_Avx512,
      &x86::kF32Conv1x1_32x12_F16w_Avx512,  // before their fp32 twins
      &x86::kF32ConvSgemm_32x12_F16w_Avx512,
      &x86::kF32Conv1x1_32x12_Avx512,
      &x86::kF32ConvSgemm_32x12_Avx512,
      &x86::kF32Conv1x1_8x48_Avx512,
      &x86::kF32ConvSgemm_8x48_Avx512,
      &x86::kF32DwConv3x3Cvec_Avx2,
      &x86::kF32DwConv5x5Cvec_Avx2,
      &x86::kF32DwConv3x3Flat_Avx2,
      &x86::kF32DwConv3x3_Avx2,
      &x86::kF32ConvWinograd43_Avx2,
      &x86::kF32ConvRows_4x24_Avx2,
      &x86::kF32Conv1x1_16x6_F16w_Avx2,
      &x86::kF32ConvSgemm_16x6_F16w_Avx2,
      &x86::kF32Conv1x1_16x6_Avx2,
      &x86::kF32ConvSgemm_16x6_Avx2,
      &x86::kF32Conv1x1_4x24_Avx2,
      &x86::kF32ConvSgemm_4x24_Avx2,
  };
}

std::vector<const I8ConvKernel*> arch_i8_conv_kernels() {
  return {
      &x86::kI8Conv1x1_8x48_Avx512Vnni,  &x86::kI8Conv1x1_32x12_Avx512Vnni, &x86::kI8DwConv3x3_C16_Avx512Vbmi,
      &x86::kI8DwConv5x5_C16_Avx512Vbmi, &x86::kI8DwConv3x3_64_Avx512Vnni,  &x86::kI8DwConv5x5_64_Avx512Vnni,
      &x86::kI8DwConv3x3_16_Avx512,      &x86::kI8DwConv5x5_16_Avx512,      &x86::kI8ConvIm2col_32x12_Avx512Vnni,
      // 256 bits: AVX-VNNI, then plain AVX2.
      &x86::kI8Conv1x1_6x16_AvxVnni,     &x86::kI8ConvIm2col_6x16_AvxVnni,  &x86::kI8Conv1x1_4x16_Avx2,
      &x86::kI8ConvIm2col_4x16_Avx2,     &x86::kI8DwConv3x3_8_Avx2,        &x86::kI8DwConv5x5_8_Avx2,
  };
}
std::vector<const I8MapKernel*> arch_i8_map_kernels() { return {&x86::kI8Map_Avx512, &x86::kI8Map_Avx2}; }

std::vector<const PoolKernel*> arch_pool_kernels() {
  return {&x86::kF32PoolGlobal_Avx512, &x86::kF32Pool2d_Avx512, &x86::kF32PoolGlobal_Avx2, &x86::kF32Pool2d_Avx2};
}
// Interp has fp16 kernels only (aarch64); fp32 resizes run interp_reference.
std::vector<const InterpKernel*> arch_interp_kernels() { return {}; }
std::vector<const FcKernel*> arch_fc_kernels() {
  return {&x86::kF32Gemv16x4_F16w_Avx512, &x86::kF32Gemv16x4_Avx512, &x86::kF32Gemv8x4_F16w_Avx2,
          &x86::kF32Gemv8x4_Avx2};
}
std::vector<const BinaryKernel*> arch_binary_kernels() { return {&x86::kF32Binary_Avx512, &x86::kF32Binary_Avx2}; }
std::vector<const EltwiseKernel*> arch_eltwise_kernels() { return {&x86::kF32Eltwise_Avx512, &x86::kF32Eltwise_Avx2}; }
std::vector<const ActivationKernel*> arch_activation_kernels() {
  return {&x86::kF32Activation_Avx512, &x86::kF32Activation_Avx2};
}
std::vector<const AffineKernel*> arch_affine_kernels() { return {&x86::kF32Affine_Avx512, &x86::kF32Affine_Avx2}; }
std::vector<const HalfKernel*> arch_half_kernels() { return {&x86::kF16Convert_Avx512, &x86::kF16Convert_Avx2}; }
std::vector<const SoftmaxKernel*> arch_softmax_kernels() { return {&x86::kF32Softmax_Avx512, &x86::kF32Softmax_Avx2}; }

}  // namespace kestrel::kernels::detail
