// Convolution: reference implementation for any kernel, stride, dilation, padding and
// grouping (depthwise, with or without channel multiplier, is group == in channels).
#include <algorithm>

#include "layers/activation.h"
#include "layers/conv_spec.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;
using layer_util::AxisGeometry;
using layer_util::ParamCheck;

class Convolution final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    Status s = read_conv_spec(ctx, &c_);
    if (!s.ok()) return s;
    const WeightView& w = ctx.weights[0];
    if (w.shape.size() != 4 || w.shape[0] != c_.num_output || w.shape[2] != c_.kh || w.shape[3] != c_.kw ||
        w.shape[1] <= 0) {
      return corrupt("kernel weight shape " + layer_util::join_dims(w.shape) + " does not match [num_output=" +
                     std::to_string(c_.num_output) + ", in/group, " + std::to_string(c_.kh) + ", " + std::to_string(c_.kw) +
                     "]");
    }
    in_per_group_ = w.shape[1];
    return bind_conv_weights(ctx, c_, c_.num_output, in_per_group_, &weight_, &bias_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Convolution", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (in.dims != 3) return corrupt("input must be 3-D [c,h,w], got " + std::to_string(in.dims) + "-D");
    const long long need = static_cast<long long>(c_.group) * in_per_group_;
    if (in.c != need) {
      return corrupt("input has " + std::to_string(in.c) + " channels, the weights need group * in/group = " +
                     std::to_string(c_.group) + " * " + std::to_string(in_per_group_) + " = " + std::to_string(need));
    }
    AxisGeometry gy, gx;
    s = layer_util::axis_geometry("height", in.h, c_.kh, c_.sh, c_.dh, c_.pad_top, c_.pad_bottom, c_.pad_mode, false, &gy);
    if (!s.ok()) return s;
    s = layer_util::axis_geometry("width", in.w, c_.kw, c_.sw, c_.dw, c_.pad_left, c_.pad_right, c_.pad_mode, false, &gx);
    if (!s.ok()) return s;
    eff_pad_top_ = gy.pad_begin;
    eff_pad_left_ = gx.pad_begin;
    outputs[0] = Shape::make3(gx.out, gy.out, c_.num_output);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    const int ih = in.h, iw = in.w, oh = out.h, ow = out.w;
    const int out_per_group = c_.num_output / c_.group;
    const size_t kernel_size = static_cast<size_t>(c_.kh) * c_.kw;
    const size_t plane = static_cast<size_t>(oh) * ow;

    // One output channel per iteration: each value is summed by one thread in a fixed
    // order, so the result does not depend on the thread count.
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int oc = 0; oc < c_.num_output; ++oc) {
      const int first_in = (oc / out_per_group) * in_per_group_;
      const float* wk = weight_ + static_cast<size_t>(oc) * in_per_group_ * kernel_size;
      const float b = bias_ ? bias_[oc] : 0.f;
      float* outp = out.channel(oc);
      for (int oy = 0; oy < oh; ++oy) {
        const int iy0 = oy * c_.sh - eff_pad_top_;
        int ky0, ky1;
        layer_util::valid_taps(iy0, ih, c_.kh, c_.dh, &ky0, &ky1);
        for (int ox = 0; ox < ow; ++ox) {
          const int ix0 = ox * c_.sw - eff_pad_left_;
          int kx0, kx1;
          layer_util::valid_taps(ix0, iw, c_.kw, c_.dw, &kx0, &kx1);
          float sum = 0.f;
          for (int ic = 0; ic < in_per_group_; ++ic) {
            const float* chan = in.channel(first_in + ic);
            const float* wp = wk + static_cast<size_t>(ic) * kernel_size;
            for (int ky = ky0; ky < ky1; ++ky) {
              // Offsets stay signed: ix0 is negative in the left padding.
              const ptrdiff_t row = static_cast<ptrdiff_t>(iy0 + ky * c_.dh) * iw + ix0;
              const float* wrow = wp + static_cast<size_t>(ky) * c_.kw;
              for (int kx = kx0; kx < kx1; ++kx) sum += wrow[kx] * chan[row + kx * c_.dw];
            }
          }
          outp[static_cast<size_t>(oy) * ow + ox] = sum + b;
        }
      }
      activate_inplace(outp, plane, c_.act);
    }
    return Status::Ok();
  }

 private:
  ConvSpec c_;
  int in_per_group_ = 0;
  int eff_pad_top_ = 0, eff_pad_left_ = 0;  // after resolving pad_mode in prepare()
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_convolution_layer() { return std::make_unique<Convolution>(); }

}  // namespace kestrel
