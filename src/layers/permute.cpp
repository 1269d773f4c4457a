// Permute: output axis i is input axis order[i].
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

class Permute final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::PermuteParam* p = ctx.layer->params_as_PermuteParam();
    if (!p || !p->order()) return corrupt("missing PermuteParam.order");
    order_.assign(p->order()->begin(), p->order()->end());
    const int n = static_cast<int>(order_.size());
    if (n < 1 || n > 4) return corrupt("order must have 1 to 4 entries, got " + std::to_string(n));
    bool seen[4] = {false, false, false, false};
    for (int v : order_) {
      if (v < 0 || v >= n || seen[v]) {
        return corrupt("order " + layer_util::join_dims(order_) + " is not a permutation of 0.." +
                       std::to_string(n - 1));
      }
      seen[v] = true;
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Permute", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    if (inputs[0].dims != static_cast<int>(order_.size())) {
      return corrupt("order has " + std::to_string(order_.size()) + " entries but the input has " +
                     std::to_string(inputs[0].dims) + " dims");
    }
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    int ext[4];
    for (size_t i = 0; i < order_.size(); ++i) ext[i] = in[order_[i]];
    outputs[0] = layer_util::shape_from_extents(ext, inputs[0].dims);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const AxisView iv = layer_util::axis_view(inputs[0]);
    // The input seen through the permutation: reading it in output order is the copy.
    AxisView pv = iv;
    for (int i = 0; i < iv.ndim; ++i) {
      pv.extent[i] = iv.extent[order_[i]];
      pv.stride[i] = iv.stride[order_[i]];
    }
    layer_util::copy_strided(inputs[0].data, pv, outputs[0].data, layer_util::axis_view(outputs[0]),
                             ctx.num_threads);
    return Status::Ok();
  }

 private:
  std::vector<int> order_;
};

}  // namespace

std::unique_ptr<Layer> create_permute_layer() { return std::make_unique<Permute>(); }

}  // namespace kestrel
