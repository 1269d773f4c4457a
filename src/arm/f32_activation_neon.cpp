// Activation over an array: every activation type, 8 floats per step (two
// independent vectors keep the exp polynomial's FMA chain busy).
#include "arm/f32_activation_neon.h"

#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {

void activate_array_neon(const ActivationSpec& a, const float* src, float* dst, size_t n) {
  const ActivationQ p(a);
  activation_detail::dispatch(a.type, [&](auto tag) {
    constexpr fb::ActivationType T = decltype(tag)::value;
    if (T == fb::ActivationType::None && src == dst) return;
    activate_row_q<T>(src, dst, n, p);
  });
}

namespace {

bool supports(const ActivationSpec&) { return true; }

}  // namespace

const ActivationKernel kF32Activation_Neon = {
    "f32_activation_neon", Isa::kNeon, supports, 1e-4, activate_array_neon,
};

}  // namespace kestrel::kernels::arm
