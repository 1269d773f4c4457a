// Reduce: Sum, Mean, Max or Min over a set of axes (all when none are given);
// keepdims keeps them as size 1, otherwise they are dropped (down to a 1-D [1]).
#include <cmath>
#include <limits>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

// Each op as init / combine / finish, so that one loop serves all of them. Sums
// accumulate in double so that long reductions stay accurate.
struct SumOp {
  using Acc = double;
  static Acc init() { return 0.0; }
  static Acc combine(Acc a, float v) { return a + v; }
  static float finish(Acc a, size_t) { return static_cast<float>(a); }
};
struct MeanOp : SumOp {
  static float finish(Acc a, size_t n) { return static_cast<float>(a / static_cast<double>(n)); }
};
// A NaN wins, as in torch.amax / amin.
struct MaxOp {
  using Acc = float;
  static Acc init() { return -std::numeric_limits<float>::infinity(); }
  static Acc combine(Acc a, float v) { return v > a || std::isnan(v) ? v : a; }
  static float finish(Acc a, size_t) { return a; }
};
struct MinOp {
  using Acc = float;
  static Acc init() { return std::numeric_limits<float>::infinity(); }
  static Acc combine(Acc a, float v) { return v < a || std::isnan(v) ? v : a; }
  static float finish(Acc a, size_t) { return a; }
};

// Axes padded to 4 at the outermost with extent 1 and stride 0.
struct Axes4 {
  int extent[4] = {1, 1, 1, 1};
  size_t stride[4] = {0, 0, 0, 0};
  size_t count() const { return size_t(extent[0]) * extent[1] * extent[2] * extent[3]; }
};

class Reduce final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ReduceParam* p = ctx.layer->params_as_ReduceParam();
    if (!p) return corrupt("missing ReduceParam");
    op_ = p->op();
    keepdims_ = p->keepdims();
    if (p->axes()) axes_.assign(p->axes()->begin(), p->axes()->end());
    if (op_ != fb::ReduceOp::Sum && op_ != fb::ReduceOp::Mean && op_ != fb::ReduceOp::Max &&
        op_ != fb::ReduceOp::Min) {
      return corrupt("unknown reduce op " + std::to_string(static_cast<int>(op_)));
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Reduce", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const int ndim = inputs[0].dims;
    for (int a = 0; a < 4; ++a) reduced_[a] = axes_.empty() && a < ndim;
    for (int given : axes_) {
      int a = 0;
      if (!layer_util::normalize_axis(given, ndim, &a) || reduced_[a]) {
        return corrupt("axes " + layer_util::join_dims(axes_) + " are out of range or repeated for a " +
                       std::to_string(ndim) + "-D input");
      }
      reduced_[a] = true;
    }
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    int out[4];
    int n = 0;
    num_kept_ = 0;
    for (int a = 0; a < ndim; ++a) {
      num_kept_ += reduced_[a] ? 0 : 1;
      if (!reduced_[a]) out[n++] = in[a];
      else if (keepdims_) out[n++] = 1;
    }
    if (n == 0) out[n++] = 1;
    outputs[0] = layer_util::shape_from_extents(out, n);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    switch (op_) {
      case fb::ReduceOp::Sum: run<SumOp>(inputs[0], outputs[0], ctx.num_threads); break;
      case fb::ReduceOp::Mean: run<MeanOp>(inputs[0], outputs[0], ctx.num_threads); break;
      case fb::ReduceOp::Max: run<MaxOp>(inputs[0], outputs[0], ctx.num_threads); break;
      default: run<MinOp>(inputs[0], outputs[0], ctx.num_threads); break;
    }
    return Status::Ok();
  }

 private:
  // Every output value is one thread's loop over the reduced axes in logical order,
  // so the result does not depend on the thread count.
  template <class Op>
  void run(const Mat& input, Mat& output, int num_threads) const {
    const AxisView iv = layer_util::axis_view(input), ov = layer_util::axis_view(output);
    // Kept axes map to output axes in order; with keepdims the reduced ones hold a
    // place too. Both sets are aligned at the innermost of Axes4.
    Axes4 kept, red;
    size_t ostride[4] = {0, 0, 0, 0};
    int k = 4 - num_kept_, r = 4 - (iv.ndim - num_kept_), oa = 0;
    for (int a = 0; a < iv.ndim; ++a) {
      if (reduced_[a]) {
        red.extent[r] = iv.extent[a];
        red.stride[r++] = iv.stride[a];
        oa += keepdims_ ? 1 : 0;
      } else {
        kept.extent[k] = iv.extent[a];
        kept.stride[k] = iv.stride[a];
        ostride[k++] = ov.stride[oa++];
      }
    }
    const size_t count = red.count();
    const long long values = static_cast<long long>(kept.count());
    const float* src = input.data;
    float* dst = output.data;
#pragma omp parallel for num_threads(num_threads)
    for (long long o = 0; o < values; ++o) {
      size_t ioff = 0, ooff = 0;
      long long rest = o;
      for (int i = 3; i >= 0; --i) {
        const size_t idx = static_cast<size_t>(rest % kept.extent[i]);
        rest /= kept.extent[i];
        ioff += idx * kept.stride[i];
        ooff += idx * ostride[i];
      }
      typename Op::Acc acc = Op::init();
      for (int r0 = 0; r0 < red.extent[0]; ++r0)
        for (int r1 = 0; r1 < red.extent[1]; ++r1)
          for (int r2 = 0; r2 < red.extent[2]; ++r2) {
            const float* p = src + ioff + r0 * red.stride[0] + r1 * red.stride[1] + r2 * red.stride[2];
            for (int r3 = 0; r3 < red.extent[3]; ++r3) acc = Op::combine(acc, p[r3 * red.stride[3]]);
          }
      dst[ooff] = Op::finish(acc, count);
    }
  }

  fb::ReduceOp op_ = fb::ReduceOp::Sum;
  bool keepdims_ = true;
  std::vector<int> axes_;
  // Prepared: which input axes are reduced, and how many are not.
  bool reduced_[4] = {false, false, false, false};
  int num_kept_ = 0;
};

}  // namespace

std::unique_ptr<Layer> create_reduce_layer() { return std::make_unique<Reduce>(); }

}  // namespace kestrel
