// 1x1 and im2col convolution on AVX2+FMA with channel-vector tiles: 16 output channels
// (2 vectors) x 6 pixels, for maps with few pixels (7x7, 14x14), where 24-pixel
// tiles run mostly empty; claimed where prefers_channel_tiles says so against the
// 4 x 24 pixel tiles of f32_conv1x1_4x24_avx2 / f32_conv_sgemm_4x24_avx2.
#include "x86/f32_conv_sgemm_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {
using V = F32x8;
constexpr int kW = V::kWidth, kMv = 2, kNp = 6, kNv = 3, kMr = kMv * kW, kNr = kNv * kW;
constexpr int kPixelMr = 4, kPixelNv = 3;  // the pixel-tile kernels it competes with
}  // namespace

const ConvKernel kF32Conv1x1_16x6_Avx2 = {
    "f32_conv1x1_16x6_avx2",
    Isa::kAvx2,
    conv_gemm::supports_1x1_channels<kW, kPixelMr, kPixelNv, kMv, kNp, kNv>,
    conv_gemm::packed_floats<kMr, kNr>,
    conv_gemm::pack<kMr, kNr>,
    conv_gemm::no_workspace,
    conv_gemm::workspace_per_thread_bytes<kMr, kNr>,
    1e-4,
    conv_gemm::run_channels<V, kMv, kNp, kNv>,
};

const ConvKernel kF32ConvSgemm_16x6_Avx2 = {
    "f32_conv_sgemm_16x6_avx2",
    Isa::kAvx2,
    conv_gemm::supports_general_channels<kW, kPixelMr, kPixelNv, kMv, kNp, kNv>,
    conv_gemm::packed_floats<kMr, kNr>,
    conv_gemm::pack<kMr, kNr>,
    conv_gemm::no_workspace,
    conv_gemm::workspace_per_thread_bytes<kMr, kNr>,
    1e-4,
    conv_gemm::run_channels<V, kMv, kNp, kNv>,
};

}  // namespace kestrel::kernels::x86
