// 1x1 and im2col convolution on AVX-512F with channel-vector tiles: 32 output channels
// (2 vectors) x 12 pixels, for maps with few pixels (7x7, 14x14), where 48-pixel
// tiles run mostly empty; claimed where prefers_channel_tiles says so against the
// 8 x 48 pixel tiles of f32_conv1x1_8x48_avx512 / f32_conv_sgemm_8x48_avx512.
#include "x86/f32_conv_sgemm_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {
using V = F32x16;
constexpr int kW = V::kWidth, kMv = 2, kNp = 12, kNv = 3, kMr = kMv * kW, kNr = kNv * kW;
constexpr int kPixelMr = 8, kPixelNv = 3;  // the pixel-tile kernels it competes with
}  // namespace

const ConvKernel kF32Conv1x1_32x12_Avx512 = {
    "f32_conv1x1_32x12_avx512",
    Isa::kAvx512,
    conv_gemm::supports_1x1_channels<kW, kPixelMr, kPixelNv, kMv, kNp, kNv>,
    conv_gemm::packed_floats<kMr, kNr>,
    conv_gemm::pack<kMr, kNr>,
    conv_gemm::no_workspace,
    conv_gemm::workspace_per_thread_bytes<kMr, kNr>,
    1e-4,
    conv_gemm::run_channels<V, kMv, kNp, kNv>,
};

const ConvKernel kF32ConvSgemm_32x12_Avx512 = {
    "f32_conv_sgemm_32x12_avx512",
    Isa::kAvx512,
    conv_gemm::supports_general_channels<kW, kPixelMr, kPixelNv, kMv, kNp, kNv>,
    conv_gemm::packed_floats<kMr, kNr>,
    conv_gemm::pack<kMr, kNr>,
    conv_gemm::no_workspace,
    conv_gemm::workspace_per_thread_bytes<kMr, kNr>,
    1e-4,
    conv_gemm::run_channels<V, kMv, kNp, kNv>,
};

}  // namespace kestrel::kernels::x86
