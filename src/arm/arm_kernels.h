// The NEON kernels, one object per file in src/arm/, listed by registry_arm.cpp.
#pragma once
#include "kernels/conv_kernels.h"

namespace kestrel::kernels::arm {

// Convolution (src/arm/f32_conv*_neon.cpp).
extern const ConvKernel kF32Conv1x1_8x8_Neon;      // 1x1, stride 1 and 2, packed input and weights
extern const ConvKernel kF32DwConv3x3_Neon;        // 3x3 depthwise, stride 1 and 2
extern const ConvKernel kF32ConvWinograd_Neon;     // 3x3 stride 1, Winograd
extern const ConvKernel kF32ConvSgemm_Neon;        // anything else: im2col + packed SGEMM

}  // namespace kestrel::kernels::arm
