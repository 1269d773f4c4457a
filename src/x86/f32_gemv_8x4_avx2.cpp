// InnerProduct GEMV, 8x4 tile: 8 outputs x 4 inputs per step over packed
// weights, and its half-weight twin (x86/f32_gemv_x86.h instantiated for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_gemv_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using misc_avx2::GemvX86;
using misc_avx2::VecAvx2;

const FcKernel kF32Gemv8x4_Avx2 = GemvX86<VecAvx2>::entry("f32_gemv_8x4_avx2", Isa::kAvx2);
const FcKernel kF32Gemv8x4_F16w_Avx2 = GemvX86<VecAvx2, uint16_t>::entry("f32_gemv_8x4_f16w_avx2", Isa::kAvx2);

}  // namespace kestrel::kernels::x86
