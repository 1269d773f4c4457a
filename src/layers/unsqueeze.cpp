// Unsqueeze: inserts size-1 axes at the listed positions of the output (negative
// positions count from the output's innermost); the values keep their logical order.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class Unsqueeze final : public LayoutOnlyLayer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::UnsqueezeParam* p = ctx.layer->params_as_UnsqueezeParam();
    if (!p || !p->axes() || p->axes()->size() == 0) return corrupt("missing UnsqueezeParam.axes");
    axes_.assign(p->axes()->begin(), p->axes()->end());
    if (axes_.size() > 3) {
      return corrupt("axes " + layer_util::join_dims(axes_) + " would make more than 4 dims");
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Unsqueeze", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const int ndim = inputs[0].dims;
    const int out_dims = ndim + static_cast<int>(axes_.size());
    if (out_dims > 4) {
      return corrupt("inserting " + std::to_string(axes_.size()) + " axes into a " + std::to_string(ndim) +
                     "-D input makes " + std::to_string(out_dims) + " dims, the most is 4");
    }
    bool inserted[4] = {false, false, false, false};
    for (int given : axes_) {
      int a = 0;
      if (!layer_util::normalize_axis(given, out_dims, &a) || inserted[a]) {
        return corrupt("axes " + layer_util::join_dims(axes_) + " are out of range or repeated for a " +
                       std::to_string(out_dims) + "-D output");
      }
      inserted[a] = true;
    }
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    int out[4];
    for (int a = 0, next = 0; a < out_dims; ++a) out[a] = inserted[a] ? 1 : in[next++];
    outputs[0] = layer_util::shape_from_extents(out, out_dims);
    return Status::Ok();
  }


 private:
  std::vector<int> axes_;
};

}  // namespace

std::unique_ptr<Layer> create_unsqueeze_layer() { return std::make_unique<Unsqueeze>(); }

}  // namespace kestrel
