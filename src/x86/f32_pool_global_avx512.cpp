// Global max and average pooling: one reduction per channel plane
// (x86/f32_pool_x86.h for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_pool_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using PoolGlobalImpl_Avx512 = misc_avx512::PoolGlobalX86<misc_avx512::VecAvx512>;

const PoolKernel kF32PoolGlobal_Avx512 = {
    "f32_pool_global_avx512", Isa::kAvx512, PoolGlobalImpl_Avx512::supports, PoolGlobalImpl_Avx512::no_workspace,
    PoolGlobalImpl_Avx512::no_workspace, 1e-4, PoolGlobalImpl_Avx512::run,
};

}  // namespace kestrel::kernels::x86
