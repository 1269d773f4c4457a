// Slice: splits the input along one axis into one part per top, at `points` or in
// equal parts (Caffe's Slice, ONNX Split).
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

class Slice final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::SliceParam* p = ctx.layer->params_as_SliceParam();
    if (!p) return corrupt("missing SliceParam");
    axis_param_ = p->axis();
    if (p->points()) points_.assign(p->points()->begin(), p->points()->end());
    for (size_t i = 0; i < points_.size(); ++i) {
      if (points_[i] <= 0 || (i > 0 && points_[i] <= points_[i - 1])) {
        return corrupt("points " + layer_util::join_dims(points_) +
                       " must be positive and strictly ascending (every part non-empty)");
      }
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    // check_io wants exactly one output; the part count is checked here instead.
    std::vector<Shape> one(1);
    Status s = layer_util::check_io("Slice", inputs, 1, 1, one);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (!layer_util::normalize_axis(axis_param_, in.dims, &axis_)) {
      return corrupt("axis " + std::to_string(axis_param_) + " is out of range for a " + std::to_string(in.dims) +
                     "-D input");
    }
    const int parts = static_cast<int>(outputs.size());
    std::vector<int> ext = layer_util::extents_of(in);
    const int len = ext[axis_];
    starts_.assign(parts + 1, 0);
    if (points_.empty()) {
      // Equal parts, as the parameter says: a remainder would make them unequal.
      if (parts < 1 || len % parts != 0) {
        return corrupt("axis " + std::to_string(axis_) + " of extent " + std::to_string(len) +
                       " does not split into " + std::to_string(parts) + " equal parts");
      }
      for (int i = 0; i <= parts; ++i) starts_[i] = len / parts * i;
    } else {
      if (points_.size() + 1 != outputs.size()) {
        return corrupt(std::to_string(points_.size()) + " points make " + std::to_string(points_.size() + 1) +
                       " parts, but the layer has " + std::to_string(outputs.size()) + " outputs");
      }
      if (points_.back() >= len) {
        return corrupt("point " + std::to_string(points_.back()) + " leaves an empty last part of axis " +
                       std::to_string(axis_) + " (extent " + std::to_string(len) + ")");
      }
      std::copy(points_.begin(), points_.end(), starts_.begin() + 1);
      starts_[parts] = len;
    }
    for (int i = 0; i < parts; ++i) {
      ext[axis_] = starts_[i + 1] - starts_[i];
      outputs[i] = layer_util::shape_from_extents(ext.data(), in.dims);
    }
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const AxisView iv = layer_util::axis_view(inputs[0]);
    for (size_t i = 0; i < outputs.size(); ++i) {
      // The part of the input that top i receives: the input's strides over its extents.
      AxisView part = iv;
      part.extent[axis_] = starts_[i + 1] - starts_[i];
      const float* src = inputs[0].data + static_cast<size_t>(starts_[i]) * iv.stride[axis_];
      layer_util::copy_strided(src, part, outputs[i].data, layer_util::axis_view(outputs[i]), ctx.num_threads);
    }
    return Status::Ok();
  }

 private:
  int axis_param_ = 0;
  std::vector<int> points_;
  int axis_ = 0;
  std::vector<int> starts_;  // part i is [starts_[i], starts_[i + 1]) of the axis
};

}  // namespace

std::unique_ptr<Layer> create_slice_layer() { return std::make_unique<Slice>(); }

}  // namespace kestrel
