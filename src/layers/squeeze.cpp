// Squeeze: removes size-1 axes (the listed ones, or all of them); the values keep
// their logical order. Removing every axis leaves a 1-D [1], the engine's scalar.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class Squeeze final : public LayoutOnlyLayer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::SqueezeParam* p = ctx.layer->params_as_SqueezeParam();
    if (p && p->axes()) axes_.assign(p->axes()->begin(), p->axes()->end());
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Squeeze", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    const int ndim = inputs[0].dims;
    bool drop[4] = {false, false, false, false};
    for (int given : axes_) {
      int a = 0;
      if (!layer_util::normalize_axis(given, ndim, &a) || drop[a]) {
        return corrupt("axes " + layer_util::join_dims(axes_) + " are out of range or repeated for a " +
                       std::to_string(ndim) + "-D input");
      }
      if (in[a] != 1) {
        return corrupt("axis " + std::to_string(given) + " has extent " + std::to_string(in[a]) +
                       ", only size-1 axes can be squeezed");
      }
      drop[a] = true;
    }
    int out[4];
    int n = 0;
    for (int a = 0; a < ndim; ++a) {
      if (axes_.empty() ? in[a] != 1 : !drop[a]) out[n++] = in[a];
    }
    if (n == 0) out[n++] = 1;
    outputs[0] = layer_util::shape_from_extents(out, n);
    return Status::Ok();
  }


 private:
  std::vector<int> axes_;
};

}  // namespace

std::unique_ptr<Layer> create_squeeze_layer() { return std::make_unique<Squeeze>(); }

}  // namespace kestrel
