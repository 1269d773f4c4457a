// BatchNorm (inference): y = (x - mean) / sqrt(var + eps) * gamma + beta per channel,
// folded at load into y = x * a + b, run by a kernel of the affine registry chosen at
// prepare() (kernels::affine_reference for the reference kernel set). Runs in place.
#include <cmath>

#include "kernels/elementwise_kernels.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class BatchNorm final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::BatchNormParam* p = ctx.layer->params_as_BatchNormParam();
    if (!p) return corrupt("missing BatchNormParam");
    const float eps = p->eps();
    if (!(eps >= 0.f) || !std::isfinite(eps)) return corrupt("eps must be a finite value >= 0, got " + std::to_string(eps));
    if (ctx.weights.size() != 4) {
      return corrupt("expects 4 weights (mean, var, gamma, beta), got " + std::to_string(ctx.weights.size()));
    }
    const char* names[4] = {"mean", "var", "gamma", "beta"};
    const size_t channels = ctx.weights[0].count;
    if (channels == 0 || channels > 0x7fffffffu) return corrupt("mean has " + std::to_string(channels) + " values");
    for (int i = 0; i < 4; ++i) {
      const WeightView& w = ctx.weights[i];
      if (w.count != channels || !w.data) {
        return corrupt(std::string(names[i]) + " has " + std::to_string(w.count) + " values, mean has " +
                       std::to_string(channels));
      }
    }
    const float* mean = ctx.weights[0].data;
    const float* var = ctx.weights[1].data;
    const float* gamma = ctx.weights[2].data;
    const float* beta = ctx.weights[3].data;
    a_.resize(channels);
    b_.resize(channels);
    for (size_t c = 0; c < channels; ++c) {
      // A negative variance (or var + eps == 0) would make every value of the channel
      // NaN or infinite: the file is damaged.
      const double denom = double(var[c]) + eps;
      if (!(denom > 0.0)) {
        return corrupt("var[" + std::to_string(c) + "] + eps = " + std::to_string(denom) + " is not positive");
      }
      const double a = gamma[c] / std::sqrt(denom);
      a_[c] = static_cast<float>(a);
      b_[c] = static_cast<float>(beta[c] - mean[c] * a);
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    kernel_ = ctx.kernels == KernelSet::kFast ? kernels::select_affine_kernel(kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    Status s = layer_util::prepare_same_shape("BatchNorm", inputs, outputs);
    if (!s.ok()) return s;
    const int channels = layer_util::channel_view(inputs[0], 0).channels;
    if (size_t(channels) != a_.size()) {
      return corrupt("input has " + std::to_string(channels) + " channels, the weights have " +
                     std::to_string(a_.size()));
    }
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const auto affine = kernel_ ? kernel_->run : kernels::affine_reference;
    layer_util::for_each_channel(inputs[0], outputs[0], ctx.num_threads,
                                 [&](const float* src, float* dst, size_t n, int c) {
                                   affine(src, dst, n, a_[c], b_[c]);
                                 });
    return Status::Ok();
  }

  bool supports_inplace() const override { return true; }
  size_t packed_weight_bytes() const override { return (a_.size() + b_.size()) * sizeof(float); }
  // forward() reads the folded a_, b_ only.
  bool reads_weight_in_place(size_t) const override { return false; }

 private:
  std::vector<float> a_, b_;  // per-channel multiplier and offset
  const kernels::AffineKernel* kernel_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_batchnorm_layer() { return std::make_unique<BatchNorm>(); }

}  // namespace kestrel
