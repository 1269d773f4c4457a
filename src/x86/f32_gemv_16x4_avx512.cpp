// InnerProduct GEMV, 16x4 tile: 16 outputs x 4 inputs per step over packed
// weights (x86/f32_gemv_x86.h instantiated for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_gemv_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using GemvImpl_Avx512 = misc_avx512::GemvX86<misc_avx512::VecAvx512>;

const FcKernel kF32Gemv16x4_Avx512 = {
    "f32_gemv_16x4_avx512",          Isa::kAvx512,          GemvImpl_Avx512::supports,
    GemvImpl_Avx512::packed_floats,  GemvImpl_Avx512::pack, GemvImpl_Avx512::workspace_bytes,
    GemvImpl_Avx512::no_workspace,   1e-4,                GemvImpl_Avx512::run,
};

}  // namespace kestrel::kernels::x86
