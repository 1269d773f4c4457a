// The fp16 reference kernels (Option::precision kFp16 on the reference kernel set):
// operands, weights and results are halves held in floats, and the arithmetic is a
// binary16 unit's (kernels/f16_arith.h). The accumulation order is the one the fp16
// NEON kernels use, so that they match these bit for bit:
// - convolution: each output starts from its bias and adds weight * input with one
//   fused multiply-add per tap, input channel by input channel, row by row (ncnn's fp16
//   kernels accumulate in fp16 the same way);
// - InnerProduct: from the bias, one fused multiply-add per input in order.
// Activations act on the fp16 result, with alpha/beta rounded to halves; those beyond
// one rounded operation (sigmoid, swish, ...) are computed in fp32 and rounded once.
#pragma once
#include <cstddef>

#include "kernels/conv_kernels.h"
#include "kernels/fc_kernels.h"

namespace kestrel::kernels {

// A copy of `a` with alpha and beta rounded to halves.
ActivationSpec f16_activation(const ActivationSpec& a);

// conv_reference's operands and geometry; one output channel per OpenMP iteration.
void conv_reference_f16(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                        size_t in_cstep, float* out, size_t out_cstep, int num_threads);

// fc_reference's operands and geometry; one output per OpenMP iteration.
void fc_reference_f16(const FcGeometry& g, const float* weight, const float* bias, const float* in, size_t in_cstep,
                      float* out, int num_threads);

}  // namespace kestrel::kernels
