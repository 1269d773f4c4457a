// Crop, in two forms that both reduce to a strided window of the input:
// - two bottoms (Caffe): bottom 0 cropped to bottom 1's extents from `axis` on, at
//   `offsets`;
// - one bottom (ONNX Slice): [starts, ends) with positive steps on `axes`.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

class Crop final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::CropParam* p = ctx.layer->params_as_CropParam();
    if (!p) return corrupt("missing CropParam");
    axis_param_ = p->axis();
    auto read = [](const flatbuffers::Vector<int32_t>* v) {
      return v ? std::vector<int>(v->begin(), v->end()) : std::vector<int>();
    };
    offsets_ = read(p->offsets());
    starts_ = read(p->starts());
    ends_ = read(p->ends());
    axes_ = read(p->axes());
    steps_ = read(p->steps());
    layer_util::ParamCheck check;
    for (int o : offsets_) check.non_negative("offset", o);
    for (int st : steps_) check.positive("step", st);
    check.require(starts_.size() == ends_.size(), [&] {
      return "starts has " + std::to_string(starts_.size()) + " entries but ends has " + std::to_string(ends_.size());
    });
    check.require(axes_.empty() || axes_.size() == starts_.size(), [&] {
      return "axes has " + std::to_string(axes_.size()) + " entries but starts has " + std::to_string(starts_.size());
    });
    check.require(steps_.empty() || steps_.size() == starts_.size(), [&] {
      return "steps has " + std::to_string(steps_.size()) + " entries but starts has " +
             std::to_string(starts_.size());
    });
    return check.status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Crop", inputs, 1, 2, outputs);
    if (!s.ok()) return s;
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    const int ndim = inputs[0].dims;
    int out[4];
    for (int a = 0; a < 4; ++a) {
      begin_[a] = 0;
      step_[a] = 1;
      out[a] = a < ndim ? in[a] : 1;
    }
    s = inputs.size() == 2 ? window_like(in, inputs[1], out) : window_from_slice(in, out);
    if (!s.ok()) return s;
    for (int a = 0; a < ndim; ++a) {
      if (out[a] <= 0) return corrupt("the crop keeps nothing of axis " + std::to_string(a));
    }
    outputs[0] = layer_util::shape_from_extents(out, ndim);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const AxisView ov = layer_util::axis_view(outputs[0]);
    // The window: the input's strides times the steps, over the output's extents.
    AxisView window = layer_util::axis_view(inputs[0]);
    const float* src = inputs[0].data;
    for (int a = 0; a < window.ndim; ++a) {
      src += static_cast<size_t>(begin_[a]) * window.stride[a];
      window.stride[a] *= static_cast<size_t>(step_[a]);
      window.extent[a] = ov.extent[a];
    }
    layer_util::copy_strided(src, window, outputs[0].data, ov, ctx.num_threads);
    return Status::Ok();
  }

 private:
  // Caffe: axes from `axis` on take the reference's extent, starting at one offset
  // for all of them or one each.
  Status window_like(const std::vector<int>& in, const Shape& reference, int* out) {
    const int ndim = static_cast<int>(in.size());
    if (reference.dims != ndim) {
      return corrupt("the reference input has " + std::to_string(reference.dims) + " dims, the cropped one " +
                     std::to_string(ndim));
    }
    int axis = 0;
    if (!layer_util::normalize_axis(axis_param_, ndim, &axis)) {
      return corrupt("axis " + std::to_string(axis_param_) + " is out of range for a " + std::to_string(ndim) +
                     "-D input");
    }
    const size_t cropped = static_cast<size_t>(ndim - axis);
    if (offsets_.size() > 1 && offsets_.size() != cropped) {
      return corrupt(std::to_string(offsets_.size()) + " offsets for " + std::to_string(cropped) +
                     " cropped axes (give 1 or one per axis)");
    }
    const std::vector<int> ref = layer_util::extents_of(reference);
    for (int a = axis; a < ndim; ++a) {
      const int off = offsets_.empty() ? 0 : offsets_.size() == 1 ? offsets_[0] : offsets_[a - axis];
      if (static_cast<long long>(off) + ref[a] > in[a]) {
        return corrupt("axis " + std::to_string(a) + ": offset " + std::to_string(off) + " + reference extent " +
                       std::to_string(ref[a]) + " exceeds the input's extent " + std::to_string(in[a]));
      }
      begin_[a] = off;
      out[a] = ref[a];
    }
    return Status::Ok();
  }

  // ONNX Slice with positive steps: negative indices count from the end, and both
  // ends are clamped to [0, extent], so out-of-range ends (INT_MAX) mean "to the end".
  Status window_from_slice(const std::vector<int>& in, int* out) {
    const int ndim = static_cast<int>(in.size());
    if (starts_.empty()) return corrupt("a one-input Crop needs starts and ends");
    if (axes_.empty() && starts_.size() != in.size()) {
      return corrupt("starts has " + std::to_string(starts_.size()) + " entries without axes, the input has " +
                     std::to_string(ndim) + " dims");
    }
    bool seen[4] = {false, false, false, false};
    for (size_t i = 0; i < starts_.size(); ++i) {
      const int given = axes_.empty() ? static_cast<int>(i) : axes_[i];
      int a = 0;
      if (!layer_util::normalize_axis(given, ndim, &a) || seen[a]) {
        return corrupt("axes " + layer_util::join_dims(axes_) + " are out of range or repeated for a " +
                       std::to_string(ndim) + "-D input");
      }
      seen[a] = true;
      const long long n = in[a];
      auto clamp_index = [n](long long v) { return std::min(std::max(v < 0 ? v + n : v, 0LL), n); };
      const long long b = clamp_index(starts_[i]), e = clamp_index(ends_[i]);
      const int step = steps_.empty() ? 1 : steps_[i];
      begin_[a] = static_cast<int>(b);
      step_[a] = step;
      out[a] = e > b ? static_cast<int>((e - b + step - 1) / step) : 0;
    }
    return Status::Ok();
  }

  int axis_param_ = 1;
  std::vector<int> offsets_, starts_, ends_, axes_, steps_;
  // Prepared window: first index and step per axis, outermost first.
  int begin_[4] = {0, 0, 0, 0};
  int step_[4] = {1, 1, 1, 1};
};

}  // namespace

std::unique_ptr<Layer> create_crop_layer() { return std::make_unique<Crop>(); }

}  // namespace kestrel
