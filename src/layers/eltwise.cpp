// Eltwise: combines any number of same-shape inputs elementwise (weighted sum,
// product or maximum), with a fused activation.
#include <cmath>

#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::ChannelView;
using layer_util::corrupt;

// Each op starts from the first input and folds in the others; `k` is the input's
// coefficient (1 unless a Sum has coefficients).
struct SumOp {
  static float first(float x, float k) { return k * x; }
  static float next(float acc, float x, float k) { return acc + k * x; }
};
struct ProdOp {
  static float first(float x, float) { return x; }
  static float next(float acc, float x, float) { return acc * x; }
};
struct MaxOp {
  static float first(float x, float) { return x; }
  // NaN propagates, as in PyTorch's torch.maximum.
  static float next(float acc, float x, float) { return (acc > x || std::isnan(acc)) ? acc : x; }
};

class Eltwise final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::EltwiseParam* p = ctx.layer->params_as_EltwiseParam();
    if (!p) return corrupt("missing EltwiseParam");
    op_ = p->op();
    act_ = activation_spec(p->activation());
    const int op = static_cast<int>(op_);
    if (op < 0 || op > static_cast<int>(fb::EltwiseOp::MAX)) return corrupt("unknown op " + std::to_string(op));
    if (p->coefficients()) coefficients_.assign(p->coefficients()->begin(), p->coefficients()->end());
    // As in Caffe: coefficients weight a sum only.
    if (!coefficients_.empty() && op_ != fb::EltwiseOp::Sum) {
      return corrupt(std::string("coefficients are only allowed with op Sum, got op ") + fb::EnumNameEltwiseOp(op_));
    }
    if (!ctx.weights.empty()) return corrupt("takes no weights, got " + std::to_string(ctx.weights.size()));
    return check_activation(act_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Eltwise", inputs, 1, 1 << 20, outputs);
    if (!s.ok()) return s;
    const Shape& first = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) {
      if (inputs[i] != first) {
        return corrupt("input " + std::to_string(i) + " has shape " +
                       layer_util::join_dims(layer_util::extents_of(inputs[i])) + ", input 0 has " +
                       layer_util::join_dims(layer_util::extents_of(first)));
      }
    }
    if (!coefficients_.empty() && coefficients_.size() != inputs.size()) {
      return corrupt("has " + std::to_string(coefficients_.size()) + " coefficients for " +
                     std::to_string(inputs.size()) + " inputs");
    }
    outputs[0] = first;
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    switch (op_) {
      case fb::EltwiseOp::Prod: run<ProdOp>(inputs, outputs[0], ctx.num_threads); break;
      case fb::EltwiseOp::Max: run<MaxOp>(inputs, outputs[0], ctx.num_threads); break;
      default: run<SumOp>(inputs, outputs[0], ctx.num_threads); break;
    }
    return Status::Ok();
  }

 private:
  // One channel per iteration; inputs are folded in their order, so the result does
  // not depend on the thread count. Inputs may differ in channel stride.
  template <class Op>
  void run(const std::vector<Mat>& inputs, Mat& out, int num_threads) const {
    const ChannelView ov = layer_util::channel_view(out);
    const size_t n = ov.size;
    const size_t count = inputs.size();
#pragma omp parallel for num_threads(num_threads)
    for (int q = 0; q < ov.channels; ++q) {
      float* dst = out.data + ov.stride * q;
      for (size_t k = 0; k < count; ++k) {
        const float* src = inputs[k].data + layer_util::channel_view(inputs[k]).stride * q;
        const float coef = coefficients_.empty() ? 1.f : coefficients_[k];
        if (k == 0) {
          for (size_t i = 0; i < n; ++i) dst[i] = Op::first(src[i], coef);
        } else {
          for (size_t i = 0; i < n; ++i) dst[i] = Op::next(dst[i], src[i], coef);
        }
      }
      activate_inplace(dst, n, act_);
    }
  }

  fb::EltwiseOp op_ = fb::EltwiseOp::Sum;
  std::vector<float> coefficients_;
  ActivationSpec act_;
};

}  // namespace

std::unique_ptr<Layer> create_eltwise_layer() { return std::make_unique<Eltwise>(); }

}  // namespace kestrel
