// InnerProduct GEMV, 8x4 tile: 8 outputs x 4 inputs per step over packed
// weights (x86/f32_gemv_x86.h instantiated for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_gemv_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using GemvImpl_Avx2 = misc_avx2::GemvX86<misc_avx2::VecAvx2>;

const FcKernel kF32Gemv8x4_Avx2 = {
    "f32_gemv_8x4_avx2",          Isa::kAvx2,          GemvImpl_Avx2::supports,
    GemvImpl_Avx2::packed_floats,  GemvImpl_Avx2::pack, GemvImpl_Avx2::workspace_bytes,
    GemvImpl_Avx2::no_workspace,   1e-4,                GemvImpl_Avx2::run,
};

}  // namespace kestrel::kernels::x86
