// Convolution: reference implementation for any kernel, stride, dilation, padding and
// grouping (depthwise, with or without channel multiplier, is group == in channels).
#include <algorithm>

#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;
using layer_util::AxisGeometry;
using layer_util::ParamCheck;

// Taps k in [begin, end) of a kernel placed at input position `start` with dilation
// `dil` that fall inside [0, in).
inline void valid_taps(int start, int in, int k, int dil, int* begin, int* end) {
  const long long s = start, d = dil;
  const long long b = s < 0 ? (-s + d - 1) / d : 0;
  const long long room = in - s;
  const long long e = room <= 0 ? 0 : std::min<long long>(k, (room + d - 1) / d);
  *end = static_cast<int>(e);
  *begin = static_cast<int>(std::min(b, e));
}

class Convolution final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ConvolutionParam* p = ctx.layer->params_as_ConvolutionParam();
    if (!p) return corrupt("missing ConvolutionParam");
    num_output_ = p->num_output();
    kh_ = p->kernel_h();
    kw_ = p->kernel_w();
    sh_ = p->stride_h();
    sw_ = p->stride_w();
    dh_ = p->dilation_h();
    dw_ = p->dilation_w();
    pad_top_ = p->pad_top();
    pad_left_ = p->pad_left();
    pad_bottom_ = p->pad_bottom();
    pad_right_ = p->pad_right();
    pad_mode_ = p->pad_mode();
    group_ = p->group();
    act_ = activation_spec(p->activation());
    const bool bias = p->bias_term();
    const int mode = static_cast<int>(pad_mode_);

    ParamCheck check;
    check.positive("num_output", num_output_)
        .positive("kernel_h", kh_).positive("kernel_w", kw_)
        .positive("stride_h", sh_).positive("stride_w", sw_)
        .positive("dilation_h", dh_).positive("dilation_w", dw_)
        .non_negative("pad_top", pad_top_).non_negative("pad_left", pad_left_)
        .non_negative("pad_bottom", pad_bottom_).non_negative("pad_right", pad_right_)
        .require(mode >= 0 && mode <= static_cast<int>(fb::PadMode::MAX),
                 "unknown pad_mode " + std::to_string(mode))
        .positive("group", group_);
    check.require(!check.ok() || num_output_ % group_ == 0, [&] {
      return "num_output " + std::to_string(num_output_) + " is not divisible by group " + std::to_string(group_);
    });
    check.require(ctx.weights.size() == (bias ? 2u : 1u), [&] {
      return std::string("expects ") + (bias ? "2 weights (kernel, bias)" : "1 weight (kernel)") + ", got " +
             std::to_string(ctx.weights.size());
    });
    if (!check.ok()) return check.status();
    Status s = check_activation(act_);
    if (!s.ok()) return s;

    const WeightView& w = ctx.weights[0];
    if (w.shape.size() != 4 || w.shape[0] != num_output_ || w.shape[2] != kh_ || w.shape[3] != kw_ ||
        w.shape[1] <= 0) {
      return corrupt("kernel weight shape " + layer_util::join_dims(w.shape) + " does not match [num_output=" +
                     std::to_string(num_output_) + ", in/group, " + std::to_string(kh_) + ", " + std::to_string(kw_) +
                     "]");
    }
    in_per_group_ = w.shape[1];
    size_t expected = 0;
    if (!checked_mul({size_t(num_output_), size_t(in_per_group_), size_t(kh_), size_t(kw_)}, &expected)) {
      return corrupt("kernel weight count overflows");
    }
    if (w.count != expected || !w.data) {
      return corrupt("kernel weight has " + std::to_string(w.count) + " values, expected " + std::to_string(expected));
    }
    weight_ = w.data;
    return layer_util::load_bias(ctx.weights, bias, num_output_, &bias_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Convolution", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (in.dims != 3) return corrupt("input must be 3-D [c,h,w], got " + std::to_string(in.dims) + "-D");
    const long long need = static_cast<long long>(group_) * in_per_group_;
    if (in.c != need) {
      return corrupt("input has " + std::to_string(in.c) + " channels, the weights need group * in/group = " +
                     std::to_string(group_) + " * " + std::to_string(in_per_group_) + " = " + std::to_string(need));
    }
    AxisGeometry gy, gx;
    s = layer_util::axis_geometry("height", in.h, kh_, sh_, dh_, pad_top_, pad_bottom_, pad_mode_, false, &gy);
    if (!s.ok()) return s;
    s = layer_util::axis_geometry("width", in.w, kw_, sw_, dw_, pad_left_, pad_right_, pad_mode_, false, &gx);
    if (!s.ok()) return s;
    eff_pad_top_ = gy.pad_begin;
    eff_pad_left_ = gx.pad_begin;
    outputs[0] = Shape::make3(gx.out, gy.out, num_output_);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    const int ih = in.h, iw = in.w, oh = out.h, ow = out.w;
    const int out_per_group = num_output_ / group_;
    const size_t kernel_size = static_cast<size_t>(kh_) * kw_;
    const size_t plane = static_cast<size_t>(oh) * ow;

    // One output channel per iteration: each value is summed by one thread in a fixed
    // order, so the result does not depend on the thread count.
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int oc = 0; oc < num_output_; ++oc) {
      const int first_in = (oc / out_per_group) * in_per_group_;
      const float* wk = weight_ + static_cast<size_t>(oc) * in_per_group_ * kernel_size;
      const float b = bias_ ? bias_[oc] : 0.f;
      float* outp = out.channel(oc);
      for (int oy = 0; oy < oh; ++oy) {
        const int iy0 = oy * sh_ - eff_pad_top_;
        int ky0, ky1;
        valid_taps(iy0, ih, kh_, dh_, &ky0, &ky1);
        for (int ox = 0; ox < ow; ++ox) {
          const int ix0 = ox * sw_ - eff_pad_left_;
          int kx0, kx1;
          valid_taps(ix0, iw, kw_, dw_, &kx0, &kx1);
          float sum = 0.f;
          for (int ic = 0; ic < in_per_group_; ++ic) {
            const float* chan = in.channel(first_in + ic);
            const float* wp = wk + static_cast<size_t>(ic) * kernel_size;
            for (int ky = ky0; ky < ky1; ++ky) {
              // Offsets stay signed: ix0 is negative in the left padding.
              const ptrdiff_t row = static_cast<ptrdiff_t>(iy0 + ky * dh_) * iw + ix0;
              const float* wrow = wp + static_cast<size_t>(ky) * kw_;
              for (int kx = kx0; kx < kx1; ++kx) sum += wrow[kx] * chan[row + kx * dw_];
            }
          }
          outp[static_cast<size_t>(oy) * ow + ox] = sum + b;
        }
      }
      activate_inplace(outp, plane, act_);
    }
    return Status::Ok();
  }

 private:
  int num_output_ = 0, in_per_group_ = 0, group_ = 1;
  int kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1;
  int pad_top_ = 0, pad_left_ = 0, pad_bottom_ = 0, pad_right_ = 0;
  fb::PadMode pad_mode_ = fb::PadMode::Explicit;
  int eff_pad_top_ = 0, eff_pad_left_ = 0;  // after resolving pad_mode in prepare()
  ActivationSpec act_;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_convolution_layer() { return std::make_unique<Convolution>(); }

}  // namespace kestrel
