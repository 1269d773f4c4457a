// The ConvolutionParam fields Convolution and Deconvolution share, read and checked
// in one place so the two layers cannot drift apart.
#pragma once
#include <string>

#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel {

struct ConvSpec {
  int num_output = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int out_pad_h = 0, out_pad_w = 0;  // Deconvolution only
  int group = 1;
  fb::PadMode pad_mode = fb::PadMode::Explicit;
  bool bias = false;
  ActivationSpec act;
};

// Reads and checks the parameters and the weight count (kernel, plus bias when
// bias_term). The kernel's shape is the caller's to check: its layout differs.
inline Status read_conv_spec(const LoadContext& ctx, ConvSpec* c) {
  const fb::ConvolutionParam* p = ctx.layer->params_as_ConvolutionParam();
  if (!p) return layer_util::corrupt("missing ConvolutionParam");
  c->num_output = p->num_output();
  c->kh = p->kernel_h();
  c->kw = p->kernel_w();
  c->sh = p->stride_h();
  c->sw = p->stride_w();
  c->dh = p->dilation_h();
  c->dw = p->dilation_w();
  c->pad_top = p->pad_top();
  c->pad_left = p->pad_left();
  c->pad_bottom = p->pad_bottom();
  c->pad_right = p->pad_right();
  c->out_pad_h = p->output_pad_h();
  c->out_pad_w = p->output_pad_w();
  c->pad_mode = p->pad_mode();
  c->group = p->group();
  c->bias = p->bias_term();
  c->act = activation_spec(p->activation());
  const int mode = static_cast<int>(c->pad_mode);
  layer_util::ParamCheck check;
  check.positive("num_output", c->num_output)
      .positive("kernel_h", c->kh).positive("kernel_w", c->kw)
      .positive("stride_h", c->sh).positive("stride_w", c->sw)
      .positive("dilation_h", c->dh).positive("dilation_w", c->dw)
      .non_negative("pad_top", c->pad_top).non_negative("pad_left", c->pad_left)
      .non_negative("pad_bottom", c->pad_bottom).non_negative("pad_right", c->pad_right)
      .non_negative("output_pad_h", c->out_pad_h).non_negative("output_pad_w", c->out_pad_w)
      .require(mode >= 0 && mode <= static_cast<int>(fb::PadMode::MAX), "unknown pad_mode " + std::to_string(mode))
      .positive("group", c->group);
  check.require(!check.ok() || c->num_output % c->group == 0, [&] {
    return "num_output " + std::to_string(c->num_output) + " is not divisible by group " + std::to_string(c->group);
  });
  check.require(ctx.weights.size() == (c->bias ? 2u : 1u), [&] {
    return std::string("expects ") + (c->bias ? "2 weights (kernel, bias)" : "1 weight (kernel)") + ", got " +
           std::to_string(ctx.weights.size());
  });
  if (!check.ok()) return check.status();
  return check_activation(c->act);
}

// Binds the kernel (already shape-checked by the caller, whose layout it is: `d0` x
// `d1` x kh x kw values) and the bias, checking the value counts with overflow checks.
inline Status bind_conv_weights(const LoadContext& ctx, const ConvSpec& c, int d0, int d1, const float** weight,
                                const float** bias) {
  const WeightView& w = ctx.weights[0];
  size_t expected = 0;
  if (!checked_mul({size_t(d0), size_t(d1), size_t(c.kh), size_t(c.kw)}, &expected)) {
    return layer_util::corrupt("kernel weight count overflows");
  }
  if (w.count != expected || !w.data) {
    return layer_util::corrupt("kernel weight has " + std::to_string(w.count) + " values, expected " +
                               std::to_string(expected));
  }
  *weight = w.data;
  return layer_util::load_bias(ctx.weights, c.bias, c.num_output, bias);
}

}  // namespace kestrel
