// Activation: the standalone elementwise layer (may run in place).
#include "layers/activation.h"

#include "layers/layers.h"

namespace kestrel {
namespace {

class ActivationLayer final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ActivationParam* p = ctx.layer->params_as_ActivationParam();
    if (!p) return layer_util::corrupt("missing ActivationParam");
    act_ = activation_spec(p->activation());
    return check_activation(act_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    return layer_util::prepare_same_shape("Activation", inputs, outputs);
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    // Input and output may differ in channel stride (an external input has no
    // channel padding), so walk plane by plane.
    const int planes = layer_util::plane_count(in);
    const size_t n = layer_util::plane_size(in);
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int q = 0; q < planes; ++q) activate_array(in.channel(q), out.channel(q), n, act_);
    return Status::Ok();
  }

  bool supports_inplace() const override { return true; }

 private:
  ActivationSpec act_;
};

}  // namespace

std::unique_ptr<Layer> create_activation_layer() { return std::make_unique<ActivationLayer>(); }

}  // namespace kestrel
