// InnerProduct GEMV, 16x4 tile: 16 outputs x 4 inputs per step over packed
// weights, and its half-weight twin (x86/f32_gemv_x86.h instantiated for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_gemv_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

using misc_avx512::GemvX86;
using misc_avx512::VecAvx512;

const FcKernel kF32Gemv16x4_Avx512 = GemvX86<VecAvx512>::entry("f32_gemv_16x4_avx512", Isa::kAvx512);
const FcKernel kF32Gemv16x4_F16w_Avx512 = GemvX86<VecAvx512, uint16_t>::entry("f32_gemv_16x4_f16w_avx512", Isa::kAvx512);

}  // namespace kestrel::kernels::x86
