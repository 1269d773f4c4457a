// General convolution on AVX2+FMA (any kernel size, stride, dilation, padding, groups; not 3x3 depthwise): im2col tiles in per-thread scratch, 4 x 24 register tiles, bias + activation fused.
// Instantiates src/x86/f32_conv_sgemm_x86.h with the F32x8 tile of f32_gemm_x86.h.
#include "x86/f32_conv_sgemm_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {
using V = F32x8;
constexpr int kMr = 4, kNv = 3, kNr = kNv * V::kWidth;
}  // namespace

const ConvKernel kF32ConvSgemm_4x24_Avx2 = {
    "f32_conv_sgemm_4x24_avx2",
    Isa::kAvx2,
    conv_gemm::supports_general<kMr, kNr>,
    conv_gemm::packed_floats<kMr, kNr>,
    conv_gemm::pack<kMr, kNr>,
    conv_gemm::no_workspace,
    conv_gemm::workspace_per_thread_bytes<kMr, kNr>,
    1e-4,
    conv_gemm::run<V, kMr, kNv>,
};

}  // namespace kestrel::kernels::x86
