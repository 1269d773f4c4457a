// InnerProduct (fully connected): y = W x + b over the input flattened in logical order.
#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class InnerProduct final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::InnerProductParam* p = ctx.layer->params_as_InnerProductParam();
    if (!p) return corrupt("missing InnerProductParam");
    num_output_ = p->num_output();
    act_ = activation_spec(p->activation());
    const bool bias = p->bias_term();
    layer_util::ParamCheck check;
    check.positive("num_output", num_output_);
    check.require(ctx.weights.size() == (bias ? 2u : 1u), [&] {
      return std::string("expects ") + (bias ? "2 weights (weight, bias)" : "1 weight") + ", got " +
             std::to_string(ctx.weights.size());
    });
    if (!check.ok()) return check.status();
    Status s = check_activation(act_);
    if (!s.ok()) return s;

    const WeightView& w = ctx.weights[0];
    if (w.shape.size() != 2 || w.shape[0] != num_output_ || w.shape[1] <= 0) {
      return corrupt("weight shape " + layer_util::join_dims(w.shape) + " does not match [num_output=" +
                     std::to_string(num_output_) + ", inputs]");
    }
    num_input_ = w.shape[1];
    size_t expected = 0;
    if (!checked_mul({size_t(num_output_), size_t(num_input_)}, &expected)) return corrupt("weight count overflows");
    if (w.count != expected || !w.data) {
      return corrupt("weight has " + std::to_string(w.count) + " values, expected " + std::to_string(expected));
    }
    weight_ = w.data;
    return layer_util::load_bias(ctx.weights, bias, num_output_, &bias_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("InnerProduct", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    if (inputs[0].total() != size_t(num_input_)) {
      return corrupt("input has " + std::to_string(inputs[0].total()) + " values, the weights expect " +
                     std::to_string(num_input_));
    }
    outputs[0] = Shape::make1(num_output_);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    float* out = outputs[0].data;
    // The input is a sequence of contiguous planes (cstep apart when padded).
    const int planes = layer_util::plane_count(in);
    const size_t plane = layer_util::plane_size(in);
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int o = 0; o < num_output_; ++o) {
      const float* w = weight_ + static_cast<size_t>(o) * num_input_;
      float sum = 0.f;
      for (int q = 0; q < planes; ++q) {
        const float* x = in.channel(q);
        for (size_t i = 0; i < plane; ++i) sum += w[i] * x[i];
        w += plane;
      }
      out[o] = activate(bias_ ? sum + bias_[o] : sum, act_);
    }
    return Status::Ok();
  }

 private:
  int num_output_ = 0, num_input_ = 0;
  ActivationSpec act_;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_innerproduct_layer() { return std::make_unique<InnerProduct>(); }

}  // namespace kestrel
