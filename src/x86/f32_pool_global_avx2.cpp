// Global max and average pooling: one reduction per channel plane
// (x86/f32_pool_x86.h for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_pool_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using PoolGlobalImpl_Avx2 = misc_avx2::PoolGlobalX86<misc_avx2::VecAvx2>;

const PoolKernel kF32PoolGlobal_Avx2 = {
    "f32_pool_global_avx2", Isa::kAvx2, PoolGlobalImpl_Avx2::supports, PoolGlobalImpl_Avx2::no_workspace,
    PoolGlobalImpl_Avx2::no_workspace, 1e-4, PoolGlobalImpl_Avx2::run,
};

}  // namespace kestrel::kernels::x86
