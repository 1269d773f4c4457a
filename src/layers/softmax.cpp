// Softmax (or LogSoftmax) along one axis of a 1-D to 4-D blob.
#include <cmath>

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

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Softmax", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    if (!layer_util::normalize_axis(axis_param_, inputs[0].dims, &axis_)) {
      return corrupt("axis " + std::to_string(axis_param_) + " is out of range for a " +
                     std::to_string(inputs[0].dims) + "-D input");
    }
    outputs[0] = inputs[0];
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const AxisView iv = layer_util::axis_view(inputs[0]);
    const AxisView ov = layer_util::axis_view(outputs[0]);
    const float* src = inputs[0].data;
    float* dst = outputs[0].data;

    // The axes other than the softmax one, innermost last; each combination of their
    // indices is one independent line.
    int n_other = 0;
    int ext[3] = {1, 1, 1};
    size_t is[3] = {0, 0, 0}, os[3] = {0, 0, 0};
    long long lines = 1;
    for (int a = 0; a < iv.ndim; ++a) {
      if (a == axis_) continue;
      ext[n_other] = iv.extent[a];
      is[n_other] = iv.stride[a];
      os[n_other] = ov.stride[a];
      lines *= iv.extent[a];
      ++n_other;
    }
    const int len = iv.extent[axis_];
    const size_t istep = iv.stride[axis_], ostep = ov.stride[axis_];

#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long l = 0; l < lines; ++l) {
      size_t ioff = 0, ooff = 0;
      long long rest = l;
      for (int k = n_other - 1; k >= 0; --k) {
        const size_t idx = static_cast<size_t>(rest % ext[k]);
        rest /= ext[k];
        ioff += idx * is[k];
        ooff += idx * os[k];
      }
      if (log_) {
        log_softmax_line(src + ioff, istep, dst + ooff, ostep, len);
      } else {
        softmax_line(src + ioff, istep, dst + ooff, ostep, len);
      }
    }
    return Status::Ok();
  }

 private:
  // Subtracting the maximum keeps exp() from overflowing; each input is read before
  // the output at the same position is written, so src may equal dst.
  static void softmax_line(const float* src, size_t istep, float* dst, size_t ostep, int len) {
    float m = src[0];
    for (int i = 1; i < len; ++i) m = std::fmax(m, src[i * istep]);
    float sum = 0.f;
    for (int i = 0; i < len; ++i) {
      const float e = std::exp(src[i * istep] - m);
      dst[i * ostep] = e;
      sum += e;
    }
    for (int i = 0; i < len; ++i) dst[i * ostep] /= sum;
  }

  // The sum is taken before anything is written, so src may equal dst here too.
  static void log_softmax_line(const float* src, size_t istep, float* dst, size_t ostep, int len) {
    float m = src[0];
    for (int i = 1; i < len; ++i) m = std::fmax(m, src[i * istep]);
    float sum = 0.f;
    for (int i = 0; i < len; ++i) sum += std::exp(src[i * istep] - m);
    const float shift = m + std::log(sum);
    for (int i = 0; i < len; ++i) dst[i * ostep] = src[i * istep] - shift;
  }

  int axis_param_ = 0;
  int axis_ = 0;
  bool log_ = false;
};

}  // namespace

std::unique_ptr<Layer> create_softmax_layer() { return std::make_unique<Softmax>(); }

}  // namespace kestrel
