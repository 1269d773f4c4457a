// The NEON kernels, one object per file in src/arm/, listed by registry_arm.cpp.
#pragma once
#include "kernels/conv_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/half_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/interp_kernels.h"
#include "kernels/pool_kernels.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::arm {

// Convolution (src/arm/f32_conv*_neon.cpp).
extern const ConvKernel kF16Conv1x1Pack8_Neon;      // fp16 1x1, stride 1 and 2, pack8 halves: 16x8 tiles (FEAT_FP16)
extern const ConvKernel kF16DwConv3x3Pack8_Neon;    // fp16 3x3 depthwise, stride 1 and 2, pack8 halves (FEAT_FP16)
extern const ConvKernel kF16ConvStemPack1to8_Neon;  // fp16 3/5/7 stems of <= 4 planar channels into pack8 (FEAT_FP16)
extern const ConvKernel kF16ConvIm2colPack8_Neon;   // fp16 any other dense window, pack8 halves: im2col + 16x8 tiles
// The _F16w twins keep weights that are halves as halves (ConvKernel::half_weights).
extern const ConvKernel kF32Conv1x1Pack4_12x7_F16w_Neon;
extern const ConvKernel kF32Conv1x1Pack4_12x7_Neon;  // 1x1, stride 1, pack4 in and out, >= 12 channels: 12x7 tiles
extern const ConvKernel kF32Conv1x1Pack4_F16w_Neon;
extern const ConvKernel kF32Conv1x1Pack4_Neon;     // 1x1, stride 1 and 2, pack4 maps read in place
extern const ConvKernel kF32Conv1x1_8x8_Neon;      // 1x1, stride 1 and 2, packed input and weights
extern const ConvKernel kF32DwConv3x3Pack4_Neon;   // 3x3 depthwise, stride 1 and 2, pack4 maps
extern const ConvKernel kF32DwConv3x3_Neon;        // 3x3 depthwise, stride 1 and 2
extern const ConvKernel kF32ConvWinogradPack4_Neon;  // 3x3 stride 1, Winograd F(6,3) / F(4,3), pack4 or planar
extern const ConvKernel kF32ConvStemPack1to4_Neon;  // 3/5/7 stems of <= 8 planar channels into pack4
extern const ConvKernel kF32ConvIm2colPack4_F16w_Neon;
extern const ConvKernel kF32ConvIm2colPack4_Neon;  // other dense windows, in_c % 4 == 0: pack4 im2col + 8x8 tiles
extern const ConvKernel kF32ConvSgemm_Neon;        // anything else: im2col + packed SGEMM

// int8 (Precision::kInt8): SDOT (ARMv8.2 dotprod) tiles of 8 channels x 12 pixels.
extern const I8ConvKernel kI8Conv1x1_8x12_NeonDot;     // 1x1 stride 1, planar
extern const I8ConvKernel kI8ConvIm2col_8x12_NeonDot;  // any other one-group window
// int8 without dotprod (ARMv8.0): SMULL/SMLAL2 + SADALP, 4x4 register tiles of 16-tap groups.
extern const I8ConvKernel kI8Conv1x1_4x4_Neon;         // 1x1 stride 1, planar (i8_conv_4x4_neon.cpp)
extern const I8ConvKernel kI8ConvIm2col_4x4_Neon;      // any other one-group window
extern const I8ConvKernel kI8DwConv3x3_16x2_NeonDot;  // depthwise 3x3, stride 1 and 2, by SDOT
extern const I8ConvKernel kI8DwConv5x5_16x2_NeonDot;  // depthwise 5x5 (i8_dwconv_16x2_neondot.cpp)
extern const I8ConvKernel kI8DwConv3x3_Pack4_Neon;   // depthwise 3x3, stride 1 and 2, via the fp32 pack4 walk
extern const I8ConvKernel kI8DwConv3x3_8x2_Neon;      // depthwise 3x3, stride 1 and 2 (no dotprod needed)
extern const I8ConvKernel kI8DwConv5x5_8x2_Neon;      // depthwise 5x5, stride 1 and 2
extern const I8MapKernel kI8Map_Neon;                  // quantize / dequantize passes

// Pooling (src/arm/f32_pool*_neon.cpp, f16_pool_pack8_neonfp16.cpp).
extern const PoolKernel kF16PoolGlobalPack8_Neon;  // fp16 storage: global max and average, pack8 halves (FEAT_FP16)
extern const PoolKernel kF16Pool2dPack8_Neon;      // fp16 storage: any window, pack8 halves in and out (FEAT_FP16)
extern const PoolKernel kF32PoolGlobalPack4_Neon;  // global max and average, pack4 in, pack4 or planar out
extern const PoolKernel kF32Pool2dPack4_Neon;     // f32_pool2d_neon's windows on pack4 maps
extern const PoolKernel kF32PoolGlobal_Neon;      // global max and average
extern const PoolKernel kF32Pool2d_Neon;          // windows of width 2, 3 (unrolled) or up to 64, stride 1 and 2

// Interp (src/arm/f16_interp_pack8_neonfp16.cpp).
extern const InterpKernel kF16InterpPack8_Neon;    // fp16 bilinear and nearest resize, pack8 halves (FEAT_FP16)

// InnerProduct (src/arm/f32_gemv_8x4_neon.cpp).
extern const FcKernel kF32Gemv8x4_F16w_Neon;      // its twin for weights that are halves (FcKernel::half_weights)
extern const FcKernel kF32Gemv8x4_Neon;           // 8 outputs x 4 inputs per step, packed weights

// Elementwise (src/arm/f32_{binary,eltwise,activation,affine}_neon.cpp).
extern const BinaryKernel kF16Binary_Neon;        // fp16: add/sub/mul/div/max/min on halves (FEAT_FP16)
extern const EltwiseKernel kF16Eltwise_Neon;      // fp16: 2-input sum, prod, max on halves (FEAT_FP16)
extern const BinaryKernel kF32Binary_Neon;        // add/sub/mul/div/max/min, array and scalar forms
extern const EltwiseKernel kF32Eltwise_Neon;      // n-ary sum with coefficients, prod, max in one pass
extern const ActivationKernel kF32Activation_Neon;  // every activation type (NEON exp/erf)
extern const AffineKernel kF32Affine_Neon;        // y = a x + b (BatchNorm, Scale)
extern const HalfKernel kF16Convert_Neon;         // fp32 <-> fp16 arrays (FCVTN / FCVTL)

// Softmax (src/arm/f32_softmax_neon.cpp).
extern const SoftmaxKernel kF32Softmax_Neon;      // any axis: contiguous lines or 16 strided lines

}  // namespace kestrel::kernels::arm
