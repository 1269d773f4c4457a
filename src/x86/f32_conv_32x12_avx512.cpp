// 1x1 and im2col convolution on AVX-512F with channel-vector tiles: 32 output channels
// (2 vectors) x 12 pixels, for maps with few pixels (7x7, 14x14), where 48-pixel
// tiles run mostly empty; claimed where prefers_channel_tiles says so against the
// 8 x 48 pixel tiles of f32_conv1x1_8x48_avx512 / f32_conv_sgemm_8x48_avx512.
#include "x86/f32_conv_ctile_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ConvKernel kF32Conv1x1_32x12_Avx512 =
    conv_gemm::channel_kernel<F32x16, 2, 12, 3, 8, 3>("f32_conv1x1_32x12_avx512", Isa::kAvx512, true);
const ConvKernel kF32ConvSgemm_32x12_Avx512 =
    conv_gemm::channel_kernel<F32x16, 2, 12, 3, 8, 3>("f32_conv_sgemm_32x12_avx512", Isa::kAvx512, false);
const ConvKernel kF32Conv1x1_32x12_F16w_Avx512 = conv_gemm::channel_kernel<F32x16, 2, 12, 3, 8, 3, uint16_t>(
    "f32_conv1x1_32x12_f16w_avx512", Isa::kAvx512, true);
const ConvKernel kF32ConvSgemm_32x12_F16w_Avx512 = conv_gemm::channel_kernel<F32x16, 2, 12, 3, 8, 3, uint16_t>(
    "f32_conv_sgemm_32x12_f16w_avx512", Isa::kAvx512, false);

}  // namespace kestrel::kernels::x86
