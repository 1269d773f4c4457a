// Padding: constant, edge or reflect padding on any axes (ONNX Pad, PyTorch F.pad).
// Negative pads remove values, as in ONNX.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

class Padding final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::PaddingParam* p = ctx.layer->params_as_PaddingParam();
    if (!p || !p->pads()) return corrupt("missing PaddingParam.pads");
    pads_.assign(p->pads()->begin(), p->pads()->end());
    mode_ = p->mode();
    value_ = p->value();
    if (mode_ != fb::PadType::Constant && mode_ != fb::PadType::Edge && mode_ != fb::PadType::Reflect) {
      return corrupt("unknown padding mode " + std::to_string(static_cast<int>(mode_)));
    }
    if (pads_.size() % 2 != 0 || pads_.empty() || pads_.size() > 8) {
      return corrupt("pads must hold 2 to 8 values (begin then end of each axis), got " +
                     std::to_string(pads_.size()));
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Padding", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const int ndim = inputs[0].dims;
    if (static_cast<int>(pads_.size()) != 2 * ndim) {
      return corrupt("pads has " + std::to_string(pads_.size()) + " values, a " + std::to_string(ndim) +
                     "-D input needs " + std::to_string(2 * ndim));
    }
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    const int lead = 4 - ndim;
    for (int a = 0; a < lead; ++a) source_[a].assign(1, 0);
    int out[4];
    for (int a = 0; a < ndim; ++a) {
      const int before = pads_[a], after = pads_[a + ndim];
      const long long n = static_cast<long long>(in[a]) + before + after;
      if (n <= 0 || n > 0x7fffffffLL) {
        return corrupt("pads " + std::to_string(before) + ", " + std::to_string(after) + " make axis " +
                       std::to_string(a) + " (extent " + std::to_string(in[a]) + ") " +
                       (n <= 0 ? "empty" : "too large"));
      }
      // Edge and reflect read the input wherever they pad, so it must not be empty.
      if (mode_ != fb::PadType::Constant && in[a] < 1) {
        return corrupt("axis " + std::to_string(a) + " is empty: only constant padding can fill it");
      }
      // Reflection mirrors about the edge value, so it can add at most extent - 1.
      if (mode_ == fb::PadType::Reflect && std::max(before, after) >= in[a]) {
        return corrupt("reflect pads " + std::to_string(before) + ", " + std::to_string(after) +
                       " must be smaller than axis " + std::to_string(a) + "'s extent " + std::to_string(in[a]));
      }
      out[a] = static_cast<int>(n);
    }
    // The output must be a blob the net can hold (at most INT_MAX values) before the
    // per-axis maps, one int per output position, are built.
    long long total = 1;
    for (int a = 0; a < ndim; ++a) {
      total *= out[a];
      if (total > 0x7fffffffLL) return corrupt("pads make the output larger than INT_MAX values");
    }
    for (int a = 0; a < ndim; ++a) {
      std::vector<int>& map = source_[lead + a];
      map.resize(static_cast<size_t>(out[a]));
      for (int o = 0; o < out[a]; ++o) map[o] = source_index(o - pads_[a], in[a]);
    }
    outputs[0] = layer_util::shape_from_extents(out, ndim);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    // Axes aligned at the innermost, leading ones of extent 1.
    const AxisView iv = layer_util::axis_view(inputs[0]), ov = layer_util::axis_view(outputs[0]);
    const int lead = 4 - iv.ndim;
    size_t is[4] = {0, 0, 0, 0}, os[4] = {0, 0, 0, 0};
    for (int a = lead; a < 4; ++a) is[a] = iv.stride[a - lead], os[a] = ov.stride[a - lead];
    const int* map[4];
    int e[4];
    for (int a = 0; a < 4; ++a) map[a] = source_[a].data(), e[a] = static_cast<int>(source_[a].size());
    const float* src = inputs[0].data;
    float* dst = outputs[0].data;
    const float value = value_;
    const long long outer = static_cast<long long>(e[0]) * e[1];
#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long o = 0; o < outer; ++o) {
      const size_t i0 = static_cast<size_t>(o / e[1]), i1 = static_cast<size_t>(o % e[1]);
      const int s0 = map[0][i0], s1 = map[1][i1];
      for (int i2 = 0; i2 < e[2]; ++i2) {
        const int s2 = map[2][i2];
        float* d = dst + i0 * os[0] + i1 * os[1] + static_cast<size_t>(i2) * os[2];
        if (s0 < 0 || s1 < 0 || s2 < 0) {  // a whole row of the constant
          for (int i3 = 0; i3 < e[3]; ++i3) d[i3] = value;
          continue;
        }
        const float* s = src + s0 * is[0] + s1 * is[1] + s2 * is[2];
        for (int i3 = 0; i3 < e[3]; ++i3) d[i3] = map[3][i3] < 0 ? value : s[map[3][i3]];
      }
    }
    return Status::Ok();
  }

 private:
  // The input index an output position reads, or -1 for the constant.
  int source_index(int i, int n) const {
    if (i >= 0 && i < n) return i;
    switch (mode_) {
      case fb::PadType::Edge: return i < 0 ? 0 : n - 1;
      case fb::PadType::Reflect: return i < 0 ? -i : 2 * (n - 1) - i;  // pads < n: one reflection
      default: return -1;
    }
  }

  std::vector<int> pads_;
  fb::PadType mode_ = fb::PadType::Constant;
  float value_ = 0.f;
  // Per axis, aligned at the innermost (leading unused axes hold one 0): the input
  // index each output position reads, or -1.
  std::vector<int> source_[4];
};

}  // namespace

std::unique_ptr<Layer> create_padding_layer() { return std::make_unique<Padding>(); }

}  // namespace kestrel
