// 1x1 and im2col convolution on AVX2+FMA with channel-vector tiles: 16 output channels
// (2 vectors) x 6 pixels, for maps with few pixels (7x7, 14x14), where 24-pixel tiles
// run mostly empty; claimed where prefers_channel_tiles says so against the 4 x 24
// pixel tiles of f32_conv1x1_4x24_avx2 / f32_conv_sgemm_4x24_avx2.
#include "x86/f32_conv_ctile_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32Conv1x1_16x6_Avx2 =
    conv_gemm::channel_kernel<F32x8, 2, 6, 3, 4, 3>("f32_conv1x1_16x6_avx2", Isa::kAvx2, true);
const ConvKernel kF32ConvSgemm_16x6_Avx2 =
    conv_gemm::channel_kernel<F32x8, 2, 6, 3, 4, 3>("f32_conv_sgemm_16x6_avx2", Isa::kAvx2, false);
const ConvKernel kF32Conv1x1_16x6_F16w_Avx2 =
    conv_gemm::channel_kernel<F32x8, 2, 6, 3, 4, 3, uint16_t>("f32_conv1x1_16x6_f16w_avx2", Isa::kAvx2, true);
const ConvKernel kF32ConvSgemm_16x6_F16w_Avx2 =
    conv_gemm::channel_kernel<F32x8, 2, 6, 3, 4, 3, uint16_t>("f32_conv_sgemm_16x6_f16w_avx2", Isa::kAvx2, false);

}  // namespace kestrel::kernels::x86
