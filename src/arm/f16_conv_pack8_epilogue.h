// The fp16 pack8 convolution kernels' choice of epilogue (f16_conv1x1_pack8_16x8 and
// f16_conv_im2col_pack8): one switch over the fused activation, outside the header of
// tiles that the llvm-mca loop files compile without the generated schema.
#pragma once
#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"
#include "kernels/f16_activation_table.h"
#include "layers/activation.h"

namespace kestrel::kernels::arm::conv1x1_pack8_f16 {

// The activations with_epilogue fuses: every type of the schema (ReLU, Clip and
// LeakyReLU on the vector, the others through their table).
inline bool fuses(const ActivationSpec& act) {
  const auto t = act.type;
  return t == fb::ActivationType::None || t == fb::ActivationType::ReLU || t == fb::ActivationType::Clip ||
         t == fb::ActivationType::LeakyReLU || f16_activation_uses_table(t);
}

// Builds what with_epilogue(act) will look up (an activation's table), from pack(): at
// Net load, so that no run allocates. May throw std::bad_alloc.
inline void build_epilogue(const ActivationSpec& act) {
  if (f16_activation_uses_table(act.type)) f16_activation_table(act);
}

// Calls f with the epilogue functor of `act` (one that fuses() accepts; anything else
// is declined by supports()).
template <class F>
inline void with_epilogue(const ActivationSpec& act, F&& f) {
  const half alpha = static_cast<half>(act.alpha), beta = static_cast<half>(act.beta);
  switch (act.type) {
    case fb::ActivationType::None: f(NoAct{}); break;
    case fb::ActivationType::ReLU: f(ReLU{}); break;
    case fb::ActivationType::Clip:
      if (beta != static_cast<half>(0) && beta == beta) {
        f(ClipMin{vdupq_n_f16(alpha), vdupq_n_f16(beta)});
      } else {
        f(Clip{vdupq_n_f16(alpha), vdupq_n_f16(beta)});
      }
      break;
    case fb::ActivationType::LeakyReLU: f(Leaky{vdupq_n_f16(alpha)}); break;
    default: f(Lut{f16_activation_table(act)}); break;
  }
}

}  // namespace kestrel::kernels::arm::conv1x1_pack8_f16
