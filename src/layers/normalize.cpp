// Normalize, SSD's L2 normalization: y = x / sqrt(sum x^2 + eps) * scale[c], the sum
// running over the channels at each position, or over the whole blob when
// across_spatial. eps is added inside the square root, as Caffe-SSD does.
#include <algorithm>
#include <cmath>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::ChannelView;
using layer_util::corrupt;

// Positions per work item when summing over channels: long enough rows for the
// inner loops, enough items to spread over the threads.
constexpr size_t kBlock = 256;

class Normalize final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::NormalizeParam* p = ctx.layer->params_as_NormalizeParam();
    if (!p) return corrupt("missing NormalizeParam");
    across_spatial_ = p->across_spatial();
    channel_shared_ = p->channel_shared();
    eps_ = p->eps();
    if (!(eps_ >= 0.f) || !std::isfinite(eps_)) return corrupt("eps must be a finite value >= 0, got " + std::to_string(eps_));
    if (ctx.weights.size() != 1) return corrupt("expects 1 weight (scale), got " + std::to_string(ctx.weights.size()));
    const WeightView& w = ctx.weights[0];
    if (w.count == 0 || w.count > 0x7fffffffu || !w.data || (channel_shared_ && w.count != 1)) {
      return corrupt("scale has " + std::to_string(w.count) + " values, expected " +
                     (channel_shared_ ? "1 (channel_shared)" : "one per channel"));
    }
    count_ = static_cast<int>(w.count);
    scale_ = w.data;
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::prepare_same_shape("Normalize", inputs, outputs);
    if (!s.ok()) return s;
    const ChannelView v = layer_util::channel_view(inputs[0], 0);
    if (!channel_shared_ && count_ != v.channels) {
      return corrupt("input has " + std::to_string(v.channels) + " channels, scale has " + std::to_string(count_) +
                     " values");
    }
    // Scratch: one partial sum per channel (across_spatial) or per position.
    workspace_bytes = (across_spatial_ ? static_cast<size_t>(v.channels) : v.size) * sizeof(float);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    float* scratch = static_cast<float*>(ctx.workspace);
    if (across_spatial_) {
      whole(inputs[0], outputs[0], scratch, ctx.num_threads);
    } else {
      per_position(inputs[0], outputs[0], scratch, ctx.num_threads);
    }
    return Status::Ok();
  }

 private:
  float scale_of(int c) const { return scale_[channel_shared_ ? 0 : c]; }

  // Sums per channel in parallel, then over channels in order: the same bits for any
  // thread count.
  void whole(const Mat& in, Mat& out, float* channel_sums, int num_threads) const {
    const ChannelView iv = layer_util::channel_view(in), ov = layer_util::channel_view(out);
    const size_t n = iv.size;
#pragma omp parallel for num_threads(num_threads)
    for (int q = 0; q < iv.channels; ++q) {
      const float* x = in.data + iv.stride * q;
      float s = 0.f;
      for (size_t i = 0; i < n; ++i) s += x[i] * x[i];
      channel_sums[q] = s;
    }
    float total = 0.f;
    for (int q = 0; q < iv.channels; ++q) total += channel_sums[q];
    const float inv = 1.f / std::sqrt(total + eps_);
#pragma omp parallel for num_threads(num_threads)
    for (int q = 0; q < iv.channels; ++q) {
      const float* x = in.data + iv.stride * q;
      float* y = out.data + ov.stride * q;
      const float k = inv * scale_of(q);
      for (size_t i = 0; i < n; ++i) y[i] = x[i] * k;
    }
  }

  // Each block of positions is summed over the channels in order and then written,
  // by one iteration.
  void per_position(const Mat& in, Mat& out, float* inv_norm, int num_threads) const {
    const ChannelView iv = layer_util::channel_view(in), ov = layer_util::channel_view(out);
    const size_t n = iv.size;
    const long long blocks = static_cast<long long>((n + kBlock - 1) / kBlock);
#pragma omp parallel for num_threads(num_threads)
    for (long long b = 0; b < blocks; ++b) {
      const size_t begin = static_cast<size_t>(b) * kBlock, end = std::min(n, begin + kBlock);
      float* acc = inv_norm + begin;
      std::fill(acc, acc + (end - begin), 0.f);
      for (int q = 0; q < iv.channels; ++q) {
        const float* x = in.data + iv.stride * q + begin;
        for (size_t i = 0; i < end - begin; ++i) acc[i] += x[i] * x[i];
      }
      for (size_t i = 0; i < end - begin; ++i) acc[i] = 1.f / std::sqrt(acc[i] + eps_);
      for (int q = 0; q < iv.channels; ++q) {
        const float* x = in.data + iv.stride * q + begin;
        float* y = out.data + ov.stride * q + begin;
        const float k = scale_of(q);
        for (size_t i = 0; i < end - begin; ++i) y[i] = x[i] * acc[i] * k;
      }
    }
  }

  bool across_spatial_ = false, channel_shared_ = false;
  float eps_ = 1e-10f;
  int count_ = 0;  // scale values: the channel count, or 1 when channel_shared
  const float* scale_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> create_normalize_layer() { return std::make_unique<Normalize>(); }

}  // namespace kestrel
