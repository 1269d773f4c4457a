// Scale: y = x * scale[c] (+ bias[c]) per channel, or one shared scale (and bias).
// Runs in place, through a kernel of the affine registry chosen at prepare()
// (kernels::affine_reference for the reference kernel set).
#include "kernels/elementwise_kernels.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class Scale final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ScaleParam* p = ctx.layer->params_as_ScaleParam();
    if (!p) return corrupt("missing ScaleParam");
    const bool bias = p->bias_term();
    if (ctx.weights.size() != (bias ? 2u : 1u)) {
      return corrupt(std::string("expects ") + (bias ? "2 weights (scale, bias)" : "1 weight (scale)") + ", got " +
                     std::to_string(ctx.weights.size()));
    }
    const WeightView& s = ctx.weights[0];
    if (s.count == 0 || s.count > 0x7fffffffu || !s.data) {
      return corrupt("scale has " + std::to_string(s.count) + " values");
    }
    count_ = static_cast<int>(s.count);
    scale_ = s.data;
    if (bias) {
      const WeightView& b = ctx.weights[1];
      if (b.count != s.count || !b.data) {
        return corrupt("bias has " + std::to_string(b.count) + " values, scale has " + std::to_string(s.count));
      }
      bias_ = b.data;
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    kernel_ = ctx.kernels == KernelSet::kFast ? kernels::select_affine_kernel(kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    Status s = layer_util::prepare_same_shape("Scale", inputs, outputs);
    if (!s.ok()) return s;
    return layer_util::check_channel_count(inputs[0], count_, "scale");
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const bool shared = count_ == 1;
    const auto affine = kernel_ ? kernel_->run : kernels::affine_reference;
    layer_util::for_each_channel(inputs[0], outputs[0], ctx.num_threads,
                                 [&](const float* src, float* dst, size_t n, int c) {
                                   const int k = shared ? 0 : c;
                                   affine(src, dst, n, scale_[k], bias_ ? bias_[k] : 0.f);
                                 });
    return Status::Ok();
  }

  bool supports_inplace() const override { return true; }

 private:
  int count_ = 0;  // values in scale (and bias): the channel count, or 1 when shared
  const float* scale_ = nullptr;
  const float* bias_ = nullptr;
  const kernels::AffineKernel* kernel_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_scale_layer() { return std::make_unique<Scale>(); }

}  // namespace kestrel
