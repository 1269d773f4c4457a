// Split: copies the input to every top (Caffe's Split, for a blob read by several
// layers that may each work in place on their copy).
#include "layers/layers.h"

namespace kestrel {
namespace {

class Split final : public Layer {
 public:
  // SplitParam has no fields, so a missing table is as good as an empty one.
  Status load(const LoadContext&) override { return Status::Ok(); }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    // check_io wants exactly one output; any number of tops is fine here.
    std::vector<Shape> one(1);
    Status s = layer_util::check_io("Split", inputs, 1, 1, one);
    if (!s.ok()) return s;
    if (outputs.empty()) return layer_util::corrupt("Split has no outputs");
    for (Shape& o : outputs) o = inputs[0];
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    // Through views, since an external input and a planned blob may differ in cstep.
    const layer_util::AxisView iv = layer_util::axis_view(inputs[0]);
    for (Mat& out : outputs) {
      layer_util::copy_strided(inputs[0].data, iv, out.data, layer_util::axis_view(out), ctx.num_threads);
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Layer> create_split_layer() { return std::make_unique<Split>(); }

}  // namespace kestrel
