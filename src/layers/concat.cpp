// Concat: joins any number of inputs along one axis.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

std::string dims_text(const Shape& s) { return layer_util::join_dims(layer_util::extents_of(s)); }

class Concat final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ConcatParam* p = ctx.layer->params_as_ConcatParam();
    if (!p) return corrupt("missing ConcatParam");
    axis_param_ = p->axis();
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Concat", inputs, 1, 1 << 20, outputs);
    if (!s.ok()) return s;
    const Shape& first = inputs[0];
    if (!layer_util::normalize_axis(axis_param_, first.dims, &axis_)) {
      return corrupt("axis " + std::to_string(axis_param_) + " is out of range for a " + std::to_string(first.dims) +
                     "-D input");
    }
    std::vector<int> ext = layer_util::extents_of(first);
    long long joined = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<int> e = layer_util::extents_of(inputs[i]);
      bool same = inputs[i].dims == first.dims;
      for (int a = 0; same && a < first.dims; ++a) same = a == axis_ || e[a] == ext[a];
      if (!same) {
        return corrupt("input " + std::to_string(i) + " has shape " + dims_text(inputs[i]) +
                       ", which does not match input 0 " + dims_text(first) + " outside axis " +
                       std::to_string(axis_));
      }
      joined += e[axis_];
      if (joined > 0x7fffffffLL) return corrupt("concatenated axis is too large");
    }
    ext[axis_] = static_cast<int>(joined);
    channels_ = first.dims == 3 && axis_ == 0;
    outputs[0] = layer_util::shape_from_extents(ext.data(), first.dims);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    Mat& out = outputs[0];
    const AxisView ov = layer_util::axis_view(out);
    size_t offset = 0;  // floats from out.data to where the current input goes
    for (const Mat& in : inputs) {
      const AxisView iv = layer_util::axis_view(in);
      // The output region an input fills: the output's strides over the input's extents.
      AxisView dv = ov;
      dv.extent[axis_] = iv.extent[axis_];
      // A producer that wrote straight into its place (zero-copy concat) left nothing to do.
      if (in.data != out.data + offset) layer_util::copy_strided(in.data, iv, out.data + offset, dv, ctx.num_threads);
      offset += static_cast<size_t>(iv.extent[axis_]) * ov.stride[axis_];
    }
    return Status::Ok();
  }

  bool concatenates_channels() const override { return channels_; }

 private:
  bool channels_ = false;
  int axis_param_ = 0;
  int axis_ = 0;
};

}  // namespace

std::unique_ptr<Layer> create_concat_layer() { return std::make_unique<Concat>(); }

}  // namespace kestrel
