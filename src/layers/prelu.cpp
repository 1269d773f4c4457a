// PReLU: y = x > 0 ? x : slope[c] * x, per channel or with one shared slope.
// Runs in place. Per channel this is LeakyReLU with the channel's slope, so it runs
// the activation kernel chosen at prepare() (kernels::activation_reference for the
// reference kernel set: the same formula, x > 0 ? x : x * slope).
#include "kernels/elementwise_kernels.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class PReLU final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    if (!ctx.layer->params_as_PReLUParam()) return corrupt("missing PReLUParam");
    if (ctx.weights.size() != 1) return corrupt("expects 1 weight (slope), got " + std::to_string(ctx.weights.size()));
    const WeightView& w = ctx.weights[0];
    if (w.count == 0 || w.count > 0x7fffffffu || !w.data) return corrupt("slope has " + std::to_string(w.count) + " values");
    count_ = static_cast<int>(w.count);
    slope_ = w.data;
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    ActivationSpec leaky;
    leaky.type = fb::ActivationType::LeakyReLU;
    const bool fast = ctx.kernels == KernelSet::kFast;
    kernel_ = fast ? kernels::select_activation_kernel(leaky, kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    Status s = layer_util::prepare_same_shape("PReLU", inputs, outputs);
    if (!s.ok()) return s;
    return layer_util::check_channel_count(inputs[0], count_, "slope");
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const bool shared = count_ == 1;
    const auto activate = kernel_ ? kernel_->run : kernels::activation_reference;
    layer_util::for_each_channel(inputs[0], outputs[0], ctx.num_threads,
                                 [&](const float* src, float* dst, size_t n, int c) {
                                   ActivationSpec leaky;
                                   leaky.type = fb::ActivationType::LeakyReLU;
                                   leaky.alpha = slope_[shared ? 0 : c];
                                   activate(leaky, src, dst, n);
                                 });
    return Status::Ok();
  }

  bool supports_inplace() const override { return true; }

 private:
  int count_ = 0;  // the channel count, or 1 for a shared slope
  const float* slope_ = nullptr;
  const kernels::ActivationKernel* kernel_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_prelu_layer() { return std::make_unique<PReLU>(); }

}  // namespace kestrel
