// LRN, local response normalization: y = x / (bias + alpha / size * sum x^2)^beta, the
// sum running over `local_size` neighbouring channels (AcrossChannels, PyTorch's
// LocalResponseNorm; Caffe's for odd sizes) or over a local_size x local_size spatial
// window of the same channel (WithinChannel, Caffe; the divisor is then size^2).
// A window of n covers n/2 positions before the centre and (n-1)/2 after it; positions
// outside the blob count as zero.
#include <algorithm>
#include <cmath>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::ChannelView;
using layer_util::corrupt;

class LRN final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::LRNParam* p = ctx.layer->params_as_LRNParam();
    if (!p) return corrupt("missing LRNParam");
    region_ = p->region();
    size_ = p->local_size();
    alpha_ = p->alpha();
    beta_ = p->beta();
    bias_ = p->bias();
    const int region = static_cast<int>(region_);
    layer_util::ParamCheck check;
    check.require(region >= 0 && region <= static_cast<int>(fb::LRNRegion::MAX),
                  "unknown region " + std::to_string(region))
        .positive("local_size", size_)
        .require(std::isfinite(alpha_) && std::isfinite(beta_) && std::isfinite(bias_),
                 "alpha, beta and bias must be finite")
        .require(ctx.weights.empty(), [&] { return "takes no weights, got " + std::to_string(ctx.weights.size()); });
    return check.status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::prepare_same_shape("LRN", inputs, outputs);
    if (!s.ok()) return s;
    if (region_ == fb::LRNRegion::WithinChannel && inputs[0].dims != 3) {
      return corrupt("WithinChannel needs a 3-D [c,h,w] input, got " + std::to_string(inputs[0].dims) + "-D");
    }
    return Status::Ok();
  }

  // One output channel per iteration, its sums taken in a fixed order: the result
  // does not depend on the thread count. Not in place: neighbours are read after
  // the centre is written.
  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    if (region_ == fb::LRNRegion::WithinChannel) {
      within(inputs[0], outputs[0], ctx.num_threads);
    } else {
      across(inputs[0], outputs[0], ctx.num_threads);
    }
    return Status::Ok();
  }

 private:
  float normalize(float x, float sum, float alpha_over_n) const {
    return x / std::pow(bias_ + alpha_over_n * sum, beta_);
  }

  void across(const Mat& in, Mat& out, int num_threads) const {
    const ChannelView iv = layer_util::channel_view(in), ov = layer_util::channel_view(out);
    const size_t n = iv.size;
    const float alpha_over_n = alpha_ / static_cast<float>(size_);
#pragma omp parallel for num_threads(num_threads)
    for (int q = 0; q < iv.channels; ++q) {
      float* dst = out.data + ov.stride * q;
      const float* src = in.data + iv.stride * q;
      // The output channel holds the sum of squares until the last pass.
      std::fill(dst, dst + n, 0.f);
      const int first = std::max(0, q - size_ / 2), last = std::min(iv.channels - 1, q + (size_ - 1) / 2);
      for (int j = first; j <= last; ++j) {
        const float* x = in.data + iv.stride * j;
        for (size_t i = 0; i < n; ++i) dst[i] += x[i] * x[i];
      }
      for (size_t i = 0; i < n; ++i) dst[i] = normalize(src[i], dst[i], alpha_over_n);
    }
  }

  void within(const Mat& in, Mat& out, int num_threads) const {
    const int h = in.h, w = in.w;
    const float alpha_over_n = alpha_ / (static_cast<float>(size_) * static_cast<float>(size_));
    const int before = size_ / 2, after = (size_ - 1) / 2;
#pragma omp parallel for num_threads(num_threads)
    for (int q = 0; q < in.c; ++q) {
      const float* src = in.channel(q);
      float* dst = out.channel(q);
      for (int y = 0; y < h; ++y) {
        const int y0 = std::max(0, y - before), y1 = std::min(h - 1, y + after);
        for (int x = 0; x < w; ++x) {
          const int x0 = std::max(0, x - before), x1 = std::min(w - 1, x + after);
          float sum = 0.f;
          for (int yy = y0; yy <= y1; ++yy) {
            const float* row = src + static_cast<size_t>(yy) * w;
            for (int xx = x0; xx <= x1; ++xx) sum += row[xx] * row[xx];
          }
          const size_t i = static_cast<size_t>(y) * w + x;
          dst[i] = normalize(src[i], sum, alpha_over_n);
        }
      }
    }
  }

  fb::LRNRegion region_ = fb::LRNRegion::AcrossChannels;
  int size_ = 5;
  float alpha_ = 1.f, beta_ = 0.75f, bias_ = 1.f;
};

}  // namespace

std::unique_ptr<Layer> create_lrn_layer() { return std::make_unique<LRN>(); }

}  // namespace kestrel
