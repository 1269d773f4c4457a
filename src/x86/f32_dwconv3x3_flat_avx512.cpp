// 3x3 depthwise convolution, stride 1, same padding, on maps up to 32 wide, AVX-512F:
// each channel plane read flattened, in place (f32_dwconv3x3_flat_x86.h).
#include "x86/f32_dwconv3x3_flat_x86.h"
#include "x86/f32_dwconv3x3_avx512.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {
namespace {

void run_flat(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx) {
  dwconv3x3::run_flat<VecAvx512>(g, packed, in, in_cstep, out, out_cstep, ctx);
}

}  // namespace

const ConvKernel kF32DwConv3x3Flat_Avx512 = {
    "f32_dwconv3x3_flat_avx512", Isa::kAvx512, dwconv3x3::supports_flat, dwconv3x3::packed_floats,
    dwconv3x3::pack, dwconv3x3::flat_workspace<VecAvx512>, dwconv3x3::no_workspace, 1e-4,
    run_flat,
};

}  // namespace kestrel::kernels::x86
