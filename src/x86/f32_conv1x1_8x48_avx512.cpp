// 1x1 convolution (one group, no padding, stride 1 or 2) on AVX-512F: 8 output channels x 48 pixels per register tile; stride 1 reads the input in place, stride 2 packs subsampled tiles.
// Instantiates src/x86/f32_conv_sgemm_x86.h with the F32x16 tile of f32_gemm_x86.h.
#include "x86/f32_conv_sgemm_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {
using V = F32x16;
constexpr int kMr = 8, kNv = 3, kNr = kNv * V::kWidth;
}  // namespace

const ConvKernel kF32Conv1x1_8x48_Avx512 = {
    "f32_conv1x1_8x48_avx512",
    Isa::kAvx512,
    conv_gemm::supports_1x1<kMr, kNr>,
    conv_gemm::packed_floats<kMr, kNr>,
    conv_gemm::pack<kMr, kNr>,
    conv_gemm::no_workspace,
    conv_gemm::workspace_per_thread_bytes<kMr, kNr>,
    1e-4,
    conv_gemm::run<V, kMr, kNv>,
};

}  // namespace kestrel::kernels::x86
