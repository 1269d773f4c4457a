// Activation over an array: every activation type, two vectors per step
// (x86/f32_activation_x86.h instantiated for Avx512).
#define KESTREL_X86_MISC_NS misc_avx512
#include "x86/f32_activation_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ActivationKernel kF32Activation_Avx512 = {
    "f32_activation_avx512", Isa::kAvx512, misc_avx512::activation_supports, 1e-4, misc_avx512::activate_array_x86<misc_avx512::VecAvx512>,
};

}  // namespace kestrel::kernels::x86
