// Softmax (or LogSoftmax) along one axis of a 1-D to 4-D blob. prepare() sees the
// blob as [outer0][outer1][len][inner] (kernels::SoftmaxGeometry) and picks a fast
// kernel from the softmax registry; kernels::softmax_reference covers the reference
// kernel set.
#include "kernels/softmax_kernels.h"
#include "layers/kernel_bridge.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

class Softmax final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::SoftmaxParam* p = ctx.layer->params_as_SoftmaxParam();
    if (!p) return corrupt("missing SoftmaxParam");
    axis_param_ = p->axis();
    log_ = p->log();
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("Softmax", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    if (!layer_util::normalize_axis(axis_param_, inputs[0].dims, &axis_)) {
      return corrupt("axis " + std::to_string(axis_param_) + " is out of range for a " +
                     std::to_string(inputs[0].dims) + "-D input");
    }
    outputs[0] = inputs[0];
    // Axes after the softmax axis lie inside a channel (dense, stride 1 innermost);
    // before it, the outermost axis may be the channel axis (its own stride), and
    // the axes between it and the softmax axis are dense and coalesce.
    const std::vector<int> e = layer_util::extents_of(inputs[0]);
    g_ = kernels::SoftmaxGeometry{};
    g_.len = e[axis_];
    for (size_t k = axis_ + 1; k < e.size(); ++k) g_.inner *= e[k];
    if (axis_ >= 1) g_.outer1 = e[axis_ - 1];
    if (axis_ >= 2) g_.outer0 = e[0];
    if (axis_ == 3) g_.outer1 *= e[1];
    g_.log = log_;
    kernel_ = ctx.kernels == KernelSet::kFast ? kernels::select_softmax_kernel(g_, kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const kernels::SoftmaxStrides is = strides(layer_util::axis_view(inputs[0]));
    const kernels::SoftmaxStrides os = strides(layer_util::axis_view(outputs[0]));
    if (kernel_) {
      kernel_->run(g_, inputs[0].data, is, outputs[0].data, os, kernel_context(ctx));
    } else {
      kernels::softmax_reference(g_, inputs[0].data, is, outputs[0].data, os, ctx.num_threads);
    }
    return Status::Ok();
  }

 private:
  // The strides of g_'s outer levels and axis in a blob of the prepared shape.
  kernels::SoftmaxStrides strides(const AxisView& v) const {
    kernels::SoftmaxStrides s;
    s.axis = v.stride[axis_];
    if (axis_ >= 1) s.outer1 = v.stride[axis_ - 1];
    if (axis_ >= 2) s.outer0 = v.stride[0];
    return s;
  }

  int axis_param_ = 0;
  int axis_ = 0;
  bool log_ = false;
  kernels::SoftmaxGeometry g_;  // resolved in prepare()
  const kernels::SoftmaxKernel* kernel_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_softmax_layer() { return std::make_unique<Softmax>(); }

}  // namespace kestrel
