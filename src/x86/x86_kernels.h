// The x86 kernels (AVX2+FMA and AVX-512F, each ISA in its own translation units),
// listed by registry_x86.cpp.
#pragma once
#include "kernels/conv_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/half_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/pool_kernels.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::x86 {

// ---- Pooling, InnerProduct, elementwise and softmax (x86/x86_math.h traits) ----

// Elementwise (src/x86/f32_{binary,eltwise,activation,affine}_{avx512,avx2}.cpp).
extern const BinaryKernel kF32Binary_Avx512;          // add/sub/mul/div/max/min, array and scalar forms
extern const BinaryKernel kF32Binary_Avx2;
extern const EltwiseKernel kF32Eltwise_Avx512;        // n-ary sum with coefficients, prod, max in one pass
extern const EltwiseKernel kF32Eltwise_Avx2;
extern const ActivationKernel kF32Activation_Avx512;  // every activation type (vector exp/erf)
extern const ActivationKernel kF32Activation_Avx2;
extern const AffineKernel kF32Affine_Avx512;          // y = a x + b (BatchNorm, Scale)
extern const AffineKernel kF32Affine_Avx2;
extern const HalfKernel kF16Convert_Avx512;  // fp32 <-> fp16 arrays (F16C)
extern const HalfKernel kF16Convert_Avx2;

// InnerProduct (src/x86/f32_gemv_{16x4_avx512,8x4_avx2}.cpp).
extern const FcKernel kF32Gemv16x4_Avx512;            // 16 outputs x 4 inputs per step, packed weights
extern const FcKernel kF32Gemv8x4_Avx2;               // 8 outputs x 4 inputs per step, packed weights
extern const FcKernel kF32Gemv16x4_F16w_Avx512;       // the same two with weights kept as IEEE halves
extern const FcKernel kF32Gemv8x4_F16w_Avx2;

// Pooling (src/x86/f32_pool{2d,_global}_{avx512,avx2}.cpp).
extern const PoolKernel kF32PoolGlobal_Avx512;        // global max and average
extern const PoolKernel kF32PoolGlobal_Avx2;
extern const PoolKernel kF32Pool2d_Avx512;            // windows of width 2, 3 (unrolled) or up to 64, stride 1 and 2
extern const PoolKernel kF32Pool2d_Avx2;

// Softmax (src/x86/f32_softmax_{avx512,avx2}.cpp).
extern const SoftmaxKernel kF32Softmax_Avx512;        // any axis: contiguous lines or 64/32 strided lines
extern const SoftmaxKernel kF32Softmax_Avx2;

// ---- depthwise (src/x86/f32_dwconv*_{avx512,avx2}.cpp over f32_dwconv_x86.h) ----
extern const ConvKernel kF32DwConv3x3_Avx512;  // 3x3 depthwise, stride 1 and 2: 2 rows x 64 pixels
extern const ConvKernel kF32DwConv3x3_Avx2;    // 3x3 depthwise, stride 1 and 2: 2 rows x 24 pixels
extern const ConvKernel kF32DwConv3x3Flat_Avx512;  // stride 1, same padding, maps up to 32 wide:
extern const ConvKernel kF32DwConv3x3Flat_Avx2;    // the plane flattened (f32_dwconv3x3_flat_x86.h)
extern const ConvKernel kF32DwConv3x3Cvec_Avx512;  // K x K depthwise with channels along the vectors,
extern const ConvKernel kF32DwConv3x3Cvec_Avx2;    // rows transposed in and out (f32_dwconv_cvec_x86.h):
extern const ConvKernel kF32DwConv5x5Cvec_Avx512;  // 3x3 and 5x5, stride 1 and 2, planar or blocked
extern const ConvKernel kF32DwConv5x5Cvec_Avx2;    // operands


// ---- Convolution (src/x86/f32_conv1x1_*, f32_conv_sgemm_*: f32_conv_sgemm_x86.h over
// the f32_gemm_x86.h microkernel and x86_vec.h traits) ----
extern const ConvKernel kF32ConvRows_8x48_Avx512;   // stems (in_c <= 4, 3x3..11x11, stride 1/2): from padded
extern const ConvKernel kF32ConvRows_4x24_Avx2;     // input rows, no im2col (f32_conv_rows_x86.h)
extern const ConvKernel kF32ConvRows_32x12_Avx512;  // the same writing a blocked map (channel tiles)
extern const ConvKernel kF32Conv1x1_32x12_Avx512;   // the same two on maps with few pixels:
extern const ConvKernel kF32ConvSgemm_32x12_Avx512; // output channels along the vectors
extern const ConvKernel kF32Conv1x1_16x6_Avx2;      // (src/x86/f32_conv_{32x12_avx512,16x6_avx2}.cpp)
extern const ConvKernel kF32ConvSgemm_16x6_Avx2;
// bf16 arithmetic (Precision::kBf16) on the pointwise layers of bf16_pointwise(), where
// the CPU has AVX512-BF16 (src/x86/bf16_conv1x1_32x12_avx512bf16.cpp).
extern const ConvKernel kBf16Conv1x1_32x12_Avx512Bf16;
// int8 arithmetic (Precision::kInt8), where the CPU has AVX512-VNNI: 1x1 layers, and any
// other one-group layer through im2col rows (src/x86/i8_conv_32x12_avx512vnni.cpp).
extern const I8ConvKernel kI8Conv1x1_8x48_Avx512Vnni;  // maps of more than 256 pixels
extern const I8ConvKernel kI8Conv1x1_32x12_Avx512Vnni;
extern const I8ConvKernel kI8ConvIm2col_32x12_Avx512Vnni;
extern const I8ConvKernel kI8DwConv3x3_C16_Avx512Vbmi;  // depthwise, 16 channels along the vectors,
extern const I8ConvKernel kI8DwConv5x5_C16_Avx512Vbmi;  // planar maps transposed (i8_dwconv_c16_avx512vbmi.cpp)
extern const I8ConvKernel kI8DwConv3x3_64_Avx512Vnni;  // depthwise, stride 1 and 2, window rows
extern const I8ConvKernel kI8DwConv5x5_64_Avx512Vnni;  // by vpdpbusd (i8_dwconv_64_avx512vnni.cpp)
// Without VNNI: depthwise by exact fp32 FMAs, in one pass a channel (i8_dwconv_planar_x86.h).
extern const I8ConvKernel kI8DwConv3x3_16_Avx512;
extern const I8ConvKernel kI8DwConv5x5_16_Avx512;
extern const I8MapKernel kI8Map_Avx512;  // int8 maps held as floats (i8_map_avx512.cpp)
// int8 at 256 bits, without AVX-512 (src/x86/i8_conv_avx2.h): 1x1 layers and im2col
// rows, by vpdpbusd where the CPU has AVX-VNNI, else by vpmaddubsw.
extern const I8ConvKernel kI8Conv1x1_6x16_AvxVnni;
extern const I8ConvKernel kI8ConvIm2col_6x16_AvxVnni;
extern const I8ConvKernel kI8Conv1x1_4x16_Avx2;
extern const I8ConvKernel kI8ConvIm2col_4x16_Avx2;
extern const I8ConvKernel kI8DwConv3x3_8_Avx2;  // depthwise by exact fp32 FMAs (i8_dwconv_planar_x86.h)
extern const I8ConvKernel kI8DwConv5x5_8_Avx2;
extern const I8MapKernel kI8Map_Avx2;
// The int8 global pooling's plane reductions (I8MapKernel::sum, max) at 256 bits
// (i8_map_avx2.cpp), the AVX-512 map kernel's too: byte lanes at 512 bits need AVX512BW,
// which its translation unit does not assume, and a plane is read once.
int32_t i8_sum_avx2(const int8_t* q, size_t n);
int8_t i8_max_avx2(const int8_t* q, size_t n);
// Their half-weight twins (ConvKernel::half_weights): weights kept as IEEE halves.
extern const ConvKernel kF32Conv1x1_32x12_F16w_Avx512;
extern const ConvKernel kF32ConvSgemm_32x12_F16w_Avx512;
extern const ConvKernel kF32Conv1x1_16x6_F16w_Avx2;
extern const ConvKernel kF32ConvSgemm_16x6_F16w_Avx2;
extern const ConvKernel kF32Conv1x1_8x48_Avx512;    // 1x1, group 1, no padding, stride 1/2
extern const ConvKernel kF32Conv1x1_4x24_Avx2;
extern const ConvKernel kF32ConvSgemm_8x48_Avx512;  // im2col + SGEMM: all but 3x3 / 5x5 depthwise
extern const ConvKernel kF32ConvSgemm_4x24_Avx2;

// ---- Winograd F(4x4, 3x3) (src/x86/f32_conv_winograd43_{avx512,avx2}.cpp,
// f32_conv_winograd43_x86.h) ----
extern const ConvKernel kF32ConvWinograd43_Avx512;  // 3x3, stride 1, group 1, where it beats the SGEMM
extern const ConvKernel kF32ConvWinograd43_Avx2;

}  // namespace kestrel::kernels::x86
