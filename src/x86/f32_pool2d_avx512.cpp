// Max and average pooling with windows of any height and width 2 or 3 (unrolled) or
// up to 64 (run-time width), horizontal stride 1 or 2, any vertical stride and any
// padding, ceil mode and count_include_pad included (x86/f32_pool_x86.h for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_pool_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using Pool2dImpl_Avx512 = misc_avx512::Pool2dX86<misc_avx512::VecAvx512>;

const PoolKernel kF32Pool2d_Avx512 = {
    "f32_pool2d_avx512", Isa::kAvx512, Pool2dImpl_Avx512::supports, Pool2dImpl_Avx512::workspace_bytes,
    Pool2dImpl_Avx512::no_workspace, 1e-4, Pool2dImpl_Avx512::run,
};

}  // namespace kestrel::kernels::x86
