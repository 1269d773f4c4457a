#include "kernels/f16_reference.h"

#include "kernels/f16_arith.h"
#include "kernels/reference_loops.h"
#include "layers/activation.h"

namespace kestrel::kernels {

ActivationSpec f16_activation(const ActivationSpec& a) {
  ActivationSpec h = a;
  h.alpha = f16::round(a.alpha);
  h.beta = f16::round(a.beta);
  return h;
}

namespace {

// fp16: from the bias, one fused multiply-add a product, the activation on the half.
struct F16Accumulation {
  ActivationSpec act;
  float start(const float* b) const { return b ? *b : 0.f; }
  float add(float acc, float w, float x) const { return f16::fma(w, x, acc); }
  float finish(float acc, const float*, int) const { return f16::round(activate(acc, act)); }
};

}  // namespace

void conv_reference_f16(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                        size_t in_cstep, float* out, size_t out_cstep, int num_threads) {
  conv_reference_loop(g, weight, bias, in, in_cstep, out, out_cstep, num_threads,
                      F16Accumulation{f16_activation(g.act)});
}

void fc_reference_f16(const FcGeometry& g, const float* weight, const float* bias, const float* in, size_t in_cstep,
                      float* out, int num_threads) {
  fc_reference_loop(g, weight, bias, in, in_cstep, out, num_threads, F16Accumulation{f16_activation(g.act)});
}

}  // namespace kestrel::kernels
