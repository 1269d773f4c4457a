// Activation: the standalone elementwise layer (may run in place). prepare() picks a
// kernel of the activation registry; kernels::activation_reference (activate_array)
// is the reference kernel set's.
#include "layers/activation.h"

#include <algorithm>

#include "kernels/elementwise_kernels.h"
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

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    const bool fast = ctx.kernels == KernelSet::kFast;
    kernel_ = fast ? kernels::select_activation_kernel(act_, kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    return layer_util::prepare_same_shape("Activation", inputs, outputs);
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    // Input and output may differ in channel stride (an external input has no
    // channel padding), so walk plane by plane, long planes in pieces.
    const int planes = layer_util::plane_count(in);
    const size_t n = layer_util::plane_size(in), chunk = kernels::kElementwiseChunk;
    const long long pieces = static_cast<long long>((n + chunk - 1) / chunk);
    const auto fn = kernel_ ? kernel_->run : kernels::activation_reference;
#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long it = 0; it < planes * pieces; ++it) {
      const int q = static_cast<int>(it / pieces);
      const size_t first = static_cast<size_t>(it % pieces) * chunk;
      fn(act_, in.channel(q) + first, out.channel(q) + first, std::min(chunk, n - first));
    }
    return Status::Ok();
  }

  bool supports_inplace() const override { return true; }

 private:
  ActivationSpec act_;
  const kernels::ActivationKernel* kernel_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_activation_layer() { return std::make_unique<ActivationLayer>(); }

}  // namespace kestrel
