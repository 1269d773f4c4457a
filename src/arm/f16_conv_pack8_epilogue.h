// The fp16 pack8 convolution kernels' choice of epilogue (f16_conv1x1_pack8_16x8 and
// f16_conv_im2col_pack8): one switch over the fused activation, outside the header of
// tiles that the llvm-mca loop files compile without the generated schema.
#pragma once
#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"
#include "layers/activation.h"

namespace kestrel::kernels::arm::conv1x1_pack8_f16 {

// Calls f with the epilogue functor of `act` (the types this family fuses; anything
// else is declined by supports()).
template <class F>
inline void with_epilogue(const ActivationSpec& act, F&& f) {
  const half alpha = static_cast<half>(act.alpha), beta = static_cast<half>(act.beta);
  switch (act.type) {
    case fb::ActivationType::ReLU: f(ReLU{}); break;
    case fb::ActivationType::Clip: f(Clip{vdupq_n_f16(alpha), vdupq_n_f16(beta)}); break;
    case fb::ActivationType::LeakyReLU: f(Leaky{vdupq_n_f16(alpha)}); break;
    default: f(NoAct{}); break;
  }
}

}  // namespace kestrel::kernels::arm::conv1x1_pack8_f16
