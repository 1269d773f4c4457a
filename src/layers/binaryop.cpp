// BinaryOp: y = a op b with numpy broadcasting (shapes aligned at the innermost axis),
// b being the second input, a constant weight or a scalar; `reverse` computes b op a.
// Runs in place when the output has the first input's shape.
#include <cmath>
#include <utility>

#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

struct AddOp { static float apply(float a, float b) { return a + b; } };
struct SubOp { static float apply(float a, float b) { return a - b; } };
struct MulOp { static float apply(float a, float b) { return a * b; } };
struct DivOp { static float apply(float a, float b) { return a / b; } };
// NaN propagates, as in PyTorch's torch.maximum / torch.minimum.
struct MaxOp { static float apply(float a, float b) { return (a > b || std::isnan(a)) ? a : b; } };
struct MinOp { static float apply(float a, float b) { return (a < b || std::isnan(a)) ? a : b; } };
struct PowOp { static float apply(float a, float b) { return std::pow(a, b); } };

// An operand seen through the output's four axes (leading axes of extent 1 added):
// stride 0 along the axes it is broadcast over.
struct Operand {
  const float* data = nullptr;
  size_t stride[4] = {0, 0, 0, 0};
};

Operand broadcast_operand(const float* data, const AxisView& v) {
  Operand o;
  o.data = data;
  const int lead = 4 - v.ndim;
  for (int k = 0; k < v.ndim; ++k) o.stride[lead + k] = v.extent[k] == 1 ? 0 : v.stride[k];
  return o;
}

// Row-major strides of a dense tensor with extents `e`.
AxisView dense_view(const std::vector<int>& e) {
  AxisView v;
  v.ndim = static_cast<int>(e.size());
  size_t s = 1;
  for (int k = v.ndim - 1; k >= 0; --k) {
    v.extent[k] = e[k];
    v.stride[k] = s;
    s *= static_cast<size_t>(e[k]);
  }
  return v;
}

class BinaryOp final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::BinaryOpParam* p = ctx.layer->params_as_BinaryOpParam();
    if (!p) return corrupt("missing BinaryOpParam");
    op_ = p->op();
    with_scalar_ = p->with_scalar();
    scalar_ = p->scalar();
    reverse_ = p->reverse();
    act_ = activation_spec(p->activation());
    const int op = static_cast<int>(op_);
    if (op < 0 || op > static_cast<int>(fb::BinaryOpType::MAX)) return corrupt("unknown op " + std::to_string(op));
    Status s = check_activation(act_);
    if (!s.ok()) return s;
    if (ctx.weights.size() > 1) {
      return corrupt("expects at most 1 weight (operand b), got " + std::to_string(ctx.weights.size()));
    }
    if (ctx.weights.empty()) return Status::Ok();
    const WeightView& w = ctx.weights[0];
    // A weight without a shape is a scalar.
    weight_extents_ = w.shape.empty() ? std::vector<int>{1} : w.shape;
    long long count = 0;
    if (weight_extents_.size() > 4 ||
        !layer_util::product_fits_int(weight_extents_.data(), static_cast<int>(weight_extents_.size()), &count) ||
        count == 0) {
      return corrupt("operand weight shape " + layer_util::join_dims(w.shape) + " is not 1 to 4 positive extents");
    }
    if (w.count != size_t(count) || !w.data) {
      return corrupt("operand weight has " + std::to_string(w.count) + " values, its shape " +
                     layer_util::join_dims(w.shape) + " needs " + std::to_string(count));
    }
    weight_ = w.data;
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("BinaryOp", inputs, 1, 2, outputs);
    if (!s.ok()) return s;
    // Exactly one source for b, so that a converter bug cannot silently pick the wrong one.
    const int sources = int(inputs.size() == 2) + int(weight_ != nullptr) + int(with_scalar_);
    if (sources != 1) {
      return corrupt("needs exactly one second operand (a second input, a weight or with_scalar), got " +
                     std::to_string(sources));
    }
    const std::vector<int> a = layer_util::extents_of(inputs[0]);
    const std::vector<int> b = inputs.size() == 2 ? layer_util::extents_of(inputs[1])
                                                  : weight_ ? weight_extents_ : std::vector<int>{1};
    const int ndim = static_cast<int>(std::max(a.size(), b.size()));
    int out[4];
    for (int k = 0; k < ndim; ++k) {
      // Aligned at the innermost axis; a missing leading axis counts as 1.
      const int ka = k - (ndim - static_cast<int>(a.size())), kb = k - (ndim - static_cast<int>(b.size()));
      const int ea = ka < 0 ? 1 : a[ka], eb = kb < 0 ? 1 : b[kb];
      if (ea != eb && ea != 1 && eb != 1) {
        return corrupt("cannot broadcast " + layer_util::join_dims(a) + " with " + layer_util::join_dims(b));
      }
      out[k] = ea == 1 ? eb : ea;
    }
    outputs[0] = layer_util::shape_from_extents(out, ndim);
    same_shape_ = outputs[0] == inputs[0];
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    Operand a = broadcast_operand(inputs[0].data, layer_util::axis_view(inputs[0]));
    Operand b;
    if (inputs.size() == 2) {
      b = broadcast_operand(inputs[1].data, layer_util::axis_view(inputs[1]));
    } else if (weight_) {
      b = broadcast_operand(weight_, dense_view(weight_extents_));
    } else {
      b.data = &scalar_;
    }
    if (reverse_) std::swap(a, b);
    using T = fb::BinaryOpType;
    switch (op_) {
      case T::Sub: run<SubOp>(a, b, outputs[0], ctx.num_threads); break;
      case T::Mul: run<MulOp>(a, b, outputs[0], ctx.num_threads); break;
      case T::Div: run<DivOp>(a, b, outputs[0], ctx.num_threads); break;
      case T::Max: run<MaxOp>(a, b, outputs[0], ctx.num_threads); break;
      case T::Min: run<MinOp>(a, b, outputs[0], ctx.num_threads); break;
      case T::Pow: run<PowOp>(a, b, outputs[0], ctx.num_threads); break;
      default: run<AddOp>(a, b, outputs[0], ctx.num_threads); break;
    }
    return Status::Ok();
  }

  // With the output shaped as input 0, each output value reads input 0 only at its
  // own position (and b, which is not the output), so writing over input 0 is safe.
  // A broadcast output is larger than input 0 and cannot share its memory.
  bool supports_inplace() const override { return same_shape_; }

 private:
  // One output row (innermost axis) per iteration, each value written once.
  template <class Op>
  void run(const Operand& a, const Operand& b, Mat& out, int num_threads) const {
    const AxisView ov = layer_util::axis_view(out);
    int e[4] = {1, 1, 1, 1};
    size_t os[4] = {0, 0, 0, 0};
    const int lead = 4 - ov.ndim;
    for (int k = 0; k < ov.ndim; ++k) e[lead + k] = ov.extent[k], os[lead + k] = ov.stride[k];
    const long long rows = static_cast<long long>(e[0]) * e[1] * e[2];
    const int n = e[3];
    const size_t sa = a.stride[3], sb = b.stride[3];
#pragma omp parallel for num_threads(num_threads)
    for (long long r = 0; r < rows; ++r) {
      const size_t i2 = static_cast<size_t>(r % e[2]), i1 = static_cast<size_t>(r / e[2] % e[1]),
                   i0 = static_cast<size_t>(r / e[2] / e[1]);
      const float* pa = a.data + i0 * a.stride[0] + i1 * a.stride[1] + i2 * a.stride[2];
      const float* pb = b.data + i0 * b.stride[0] + i1 * b.stride[1] + i2 * b.stride[2];
      float* dst = out.data + i0 * os[0] + i1 * os[1] + i2 * os[2];
      for (int i = 0; i < n; ++i) dst[i] = Op::apply(pa[i * sa], pb[i * sb]);
      activate_inplace(dst, static_cast<size_t>(n), act_);
    }
  }

  fb::BinaryOpType op_ = fb::BinaryOpType::Add;
  bool with_scalar_ = false;
  float scalar_ = 0.f;
  bool reverse_ = false;
  ActivationSpec act_;
  const float* weight_ = nullptr;
  std::vector<int> weight_extents_;  // outermost first
  bool same_shape_ = false;          // the prepared output has input 0's shape
};

}  // namespace

std::unique_ptr<Layer> create_binaryop_layer() { return std::make_unique<BinaryOp>(); }

}  // namespace kestrel
