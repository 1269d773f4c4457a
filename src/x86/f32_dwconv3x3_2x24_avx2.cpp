// 3x3 depthwise convolution, stride 1 and 2, AVX2 + FMA: 2 output rows x up to 3 x 8
// pixels per step (6 accumulators and 9 broadcast taps in the 16 ymm registers), the
// algorithm of f32_dwconv3x3_x86.h. vmaskmov loads and stores for the ends of rows.
#include "x86/f32_dwconv3x3_x86.h"
#include "x86/f32_dwconv3x3_avx2.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  dwconv3x3::run<VecAvx2>(g, packed, in, in_cstep, out, out_cstep, ctx);
}

}  // namespace

const ConvKernel kF32DwConv3x3_Avx2 = {
    "f32_dwconv3x3_2x24_avx2", Isa::kAvx2,           dwconv3x3::supports,         dwconv3x3::packed_floats,
    dwconv3x3::pack,           dwconv3x3::no_workspace, dwconv3x3::thread_workspace, 1e-4,
    run,
};

}  // namespace kestrel::kernels::x86
