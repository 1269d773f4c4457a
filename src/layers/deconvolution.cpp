// Deconvolution (transposed convolution) with PyTorch's ConvTranspose2d semantics:
// any kernel, stride, dilation, explicit asymmetric padding, output padding and
// grouping (depthwise is group == input channels, with or without a multiplier).
#include <algorithm>

#include "layers/activation.h"
#include "layers/conv_spec.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;
using layer_util::ParamCheck;

// Output extent along one axis: the full transposed-convolution span,
// (in - 1) * stride + dilation * (kernel - 1) + 1, cropped by the pads and extended by
// the output padding. The full span must fit in an int too, since forward() computes
// positions in it.
Status output_extent(const char* axis, int in, int kernel, int stride, int dilation, int pad_begin, int pad_end,
                     int output_pad, int* out) {
  const long long full = (static_cast<long long>(in) - 1) * stride + static_cast<long long>(dilation) * (kernel - 1) + 1;
  const long long o = full - pad_begin - pad_end + output_pad;
  if (o <= 0 || o > 0x7fffffffLL || full > 0x7fffffffLL) {
    return corrupt(std::string("output ") + axis + " would be " + std::to_string(o) + " (input " +
                   std::to_string(in) + ", full span " + std::to_string(full) + ", pads " + std::to_string(pad_begin) +
                   " + " + std::to_string(pad_end) + ", output_pad " + std::to_string(output_pad) + ")");
  }
  *out = static_cast<int>(o);
  return Status::Ok();
}

class Deconvolution final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    Status s = read_conv_spec(ctx, &c_);
    if (!s.ok()) return s;
    // ONNX's auto_pad for ConvTranspose depends on the requested output shape, which
    // the converter resolves into explicit pads.
    if (c_.pad_mode != fb::PadMode::Explicit) {
      return Status(ErrorCode::kUnsupported, "Deconvolution supports only pad_mode Explicit, got " +
                                                 std::string(fb::EnumNamePadMode(c_.pad_mode)));
    }
    const WeightView& w = ctx.weights[0];
    const int out_per_group = c_.num_output / c_.group;
    if (w.shape.size() != 4 || w.shape[0] <= 0 || w.shape[0] % c_.group != 0 || w.shape[1] != out_per_group ||
        w.shape[2] != c_.kh || w.shape[3] != c_.kw) {
      return corrupt("kernel weight shape " + layer_util::join_dims(w.shape) +
                     " does not match [in (a multiple of group=" + std::to_string(c_.group) +
                     "), num_output/group=" + std::to_string(out_per_group) + ", " + std::to_string(c_.kh) + ", " +
                     std::to_string(c_.kw) + "]");
    }
    in_channels_ = w.shape[0];
    return bind_conv_weights(ctx, c_, in_channels_, out_per_group, &weight_, &bias_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Deconvolution", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (in.dims != 3) return corrupt("input must be 3-D [c,h,w], got " + std::to_string(in.dims) + "-D");
    if (in.c != in_channels_) {
      return corrupt("input has " + std::to_string(in.c) + " channels, the weights [in, out/group, kh, kw] need " +
                     std::to_string(in_channels_));
    }
    int oh = 0, ow = 0;
    s = output_extent("height", in.h, c_.kh, c_.sh, c_.dh, c_.pad_top, c_.pad_bottom, c_.out_pad_h, &oh);
    if (!s.ok()) return s;
    s = output_extent("width", in.w, c_.kw, c_.sw, c_.dw, c_.pad_left, c_.pad_right, c_.out_pad_w, &ow);
    if (!s.ok()) return s;
    outputs[0] = Shape::make3(ow, oh, c_.num_output);
    multiply_adds = double(in.w) * in.h * in.c * (c_.num_output / c_.group) * c_.kh * c_.kw;
    return Status::Ok();
  }

  // Scatter: every input pixel adds its value times the kernel into the output window
  // it reaches. Each output channel is owned by one iteration and accumulated in a
  // fixed order (input channel, row, column, tap), so the result does not depend on
  // the thread count.
  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    const int ih = in.h, iw = in.w, oh = out.h, ow = out.w;
    const int out_per_group = c_.num_output / c_.group;
    const int in_per_group = in_channels_ / c_.group;
    const size_t kernel_size = static_cast<size_t>(c_.kh) * c_.kw;
    const size_t plane = static_cast<size_t>(oh) * ow;

#pragma omp parallel for num_threads(ctx.num_threads)
    for (int oc = 0; oc < c_.num_output; ++oc) {
      const int g = oc / out_per_group, og = oc % out_per_group;
      float* outp = out.channel(oc);
      std::fill(outp, outp + plane, bias_ ? bias_[oc] : 0.f);
      for (int i = 0; i < in_per_group; ++i) {
        const int ic = g * in_per_group + i;
        const float* chan = in.channel(ic);
        const float* wk = weight_ + (static_cast<size_t>(ic) * out_per_group + og) * kernel_size;
        for (int iy = 0; iy < ih; ++iy) {
          // Output row of tap ky: iy * stride - pad_top + ky * dilation.
          const int oy0 = iy * c_.sh - c_.pad_top;
          int ky0, ky1;
          layer_util::valid_taps(oy0, oh, c_.kh, c_.dh, &ky0, &ky1);
          for (int ix = 0; ix < iw; ++ix) {
            const int ox0 = ix * c_.sw - c_.pad_left;
            int kx0, kx1;
            layer_util::valid_taps(ox0, ow, c_.kw, c_.dw, &kx0, &kx1);
            const float v = chan[static_cast<size_t>(iy) * iw + ix];
            for (int ky = ky0; ky < ky1; ++ky) {
              // Signed: ox0 is negative where the left padding crops the output.
              float* row = outp + static_cast<ptrdiff_t>(oy0 + ky * c_.dh) * ow + ox0;
              const float* wrow = wk + static_cast<size_t>(ky) * c_.kw;
              for (int kx = kx0; kx < kx1; ++kx) row[kx * c_.dw] += v * wrow[kx];
            }
          }
        }
      }
      activate_inplace(outp, plane, c_.act);
    }
    return Status::Ok();
  }

 private:
  ConvSpec c_;
  int in_channels_ = 0;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_deconvolution_layer() { return std::make_unique<Deconvolution>(); }

}  // namespace kestrel
