// Dense 3x3 stride-1 convolution by Winograd F(4x4, 3x3) on AVX2+FMA: 8 tiles per
// vector, the 36 products per 4-channel panel on the 4 x 24 microkernel.
// Instantiates src/x86/f32_conv_winograd43_x86.h with F32x8.
#include "x86/f32_conv_winograd43_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {
using V = F32x8;
constexpr int kMr = 4, kNv = 3;
}  // namespace

const ConvKernel kF32ConvWinograd43_Avx2 = {
    "f32_conv_winograd43_avx2",
    Isa::kAvx2,
    wino43::supports<V, kMr, kNv>,
    wino43::packed_floats<V, kMr, kNv>,
    wino43::pack<V, kMr, kNv>,
    wino43::no_workspace,
    wino43::workspace_per_thread_bytes<V, kMr, kNv>,
    1e-3,
    wino43::run<V, kMr, kNv>,
};

}  // namespace kestrel::kernels::x86
