// Activation over an array: every activation type, two vectors per step
// (x86/f32_activation_x86.h instantiated for Avx2).
#define KESTREL_X86_MISC_NS misc_avx2
#include "x86/f32_activation_x86.h"
#include "x86/x86_kernels.h"

namespace kestrel::kernels::x86 {

const ActivationKernel kF32Activation_Avx2 = {
    "f32_activation_avx2", Isa::kAvx2, misc_avx2::activation_supports, 1e-4, misc_avx2::activate_array_x86<misc_avx2::VecAvx2>,
};

}  // namespace kestrel::kernels::x86
