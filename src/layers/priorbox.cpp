// PriorBox: the SSD anchor boxes of one feature map, exactly as Caffe-SSD's
// PriorBoxLayer computes them. Depends only on the input shapes, never their data.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

// The most coordinates a PriorBox computes at load (4 per box; its output holds them
// and their variances): SSD300's largest has 23,104; 2^26 is a 1024x1024 map with 16
// priors a cell, 512 MiB of output. A model asking for more is refused before the load
// allocates it (a fuzzed model asked for 8 GiB).
constexpr size_t kMaxPriorValues = size_t{1} << 26;

std::vector<float> to_vector(const flatbuffers::Vector<float>* v) {
  return v ? std::vector<float>(v->begin(), v->end()) : std::vector<float>();
}

class PriorBox final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::PriorBoxParam* p = ctx.layer->params_as_PriorBoxParam();
    if (!p) return corrupt("missing PriorBoxParam");
    min_sizes_ = to_vector(p->min_sizes());
    max_sizes_ = to_vector(p->max_sizes());
    variances_ = to_vector(p->variances());
    clip_ = p->clip();
    image_w_ = p->image_w();
    image_h_ = p->image_h();
    step_w_ = p->step_w();
    step_h_ = p->step_h();
    offset_ = p->offset();

    layer_util::ParamCheck check;
    check.require(!min_sizes_.empty(), "min_sizes must not be empty");
    // The upper bound keeps the conversion to int (see forward) defined.
    for (float m : min_sizes_) {
      check.require(m > 0.f && m < 1e9f, [&] { return "min_size " + std::to_string(m) + " must be in (0, 1e9)"; });
    }
    for (float m : max_sizes_) {
      check.require(m > 0.f && m < 1e9f, [&] { return "max_size " + std::to_string(m) + " must be in (0, 1e9)"; });
    }
    check.require(max_sizes_.empty() || max_sizes_.size() == min_sizes_.size(), [&] {
      return "max_sizes has " + std::to_string(max_sizes_.size()) + " entries, expected 0 or as many as min_sizes (" +
             std::to_string(min_sizes_.size()) + ")";
    });
    for (size_t i = 0; check.ok() && i < max_sizes_.size(); ++i) {
      check.require(max_sizes_[i] > min_sizes_[i], [&] {
        return "max_size " + std::to_string(max_sizes_[i]) + " must be > min_size " + std::to_string(min_sizes_[i]);
      });
    }
    check.require(variances_.size() <= 1 || variances_.size() == 4, [&] {
      return "variances must have 1 or 4 values, got " + std::to_string(variances_.size());
    });
    for (float v : variances_) check.require(v > 0.f, [&] { return "variance " + std::to_string(v) + " must be > 0"; });
    check.non_negative("image_w", image_w_).non_negative("image_h", image_h_)
        .require(step_w_ >= 0.f && step_h_ >= 0.f, "step_w and step_h must be >= 0")
        .require(std::isfinite(offset_), "offset must be finite");

    // Caffe's list: 1 first, then each new ratio (within 1e-6 of none already listed)
    // followed by its reciprocal when flipping.
    aspect_ratios_.assign(1, 1.f);
    if (p->aspect_ratios()) {
      for (float ar : *p->aspect_ratios()) {
        check.require(ar > 0.f && std::isfinite(ar),
                      [&] { return "aspect ratio " + std::to_string(ar) + " must be finite and > 0"; });
        bool exists = false;
        for (float have : aspect_ratios_) exists = exists || std::fabs(ar - have) < 1e-6f;
        if (exists) continue;
        aspect_ratios_.push_back(ar);
        if (p->flip()) aspect_ratios_.push_back(1.f / ar);
      }
    }
    if (variances_.empty()) variances_.assign(1, 0.1f);  // Caffe's default
    priors_per_cell_ = static_cast<int>(aspect_ratios_.size() * min_sizes_.size() + max_sizes_.size());
    return check.status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    const bool image_given = image_w_ > 0 && image_h_ > 0;
    Status s = layer_util::check_io("PriorBox", inputs, image_given ? 1 : 2, 2, outputs);
    if (!s.ok()) return s;
    for (const Shape& in : inputs) {
      if (in.dims < 2) return corrupt("PriorBox inputs need a height and a width (2-D or more)");
    }
    layer_w_ = inputs[0].w;
    layer_h_ = inputs[0].h;
    img_w_ = image_given ? image_w_ : inputs[1].w;
    img_h_ = image_given ? image_h_ : inputs[1].h;
    size_t values = 0;
    if (!checked_mul({size_t(layer_w_), size_t(layer_h_), size_t(priors_per_cell_), 4}, &values) ||
        values > kMaxPriorValues) {
      return corrupt("too many priors: a " + std::to_string(layer_w_) + "x" + std::to_string(layer_h_) + " map with " +
                     std::to_string(priors_per_cell_) + " priors per cell, more than " +
                     std::to_string(kMaxPriorValues / 4) + " boxes");
    }
    outputs[0] = Shape::make2(static_cast<int>(values), 2);
    // The priors depend on nothing forward sees: computed once here, copied there
    // (SSD300's six PriorBox layers took 0.13 M aarch64 instructions an inference).
    priors_.assign(2 * values, 0.f);
    compute(priors_.data(), priors_.data() + values, static_cast<int>(values));
    return Status::Ok();
  }

  // Only the inputs' heights and widths (prepare), which a blocked layout keeps: the
  // feature map may stay blocked between the convolutions reading it.
  bool reads_shape_only(size_t) const override { return true; }

  Status forward(const std::vector<Mat>&, std::vector<Mat>& outputs, const ForwardContext&) const override {
    Mat& out = outputs[0];
    const size_t n = priors_.size() / 2;
    std::memcpy(out.row(0), priors_.data(), n * sizeof(float));
    std::memcpy(out.row(1), priors_.data() + n, n * sizeof(float));
    return Status::Ok();
  }

 private:
  // The n box coordinates and the n variances.
  void compute(float* box, float* var, int n) const {
    // Caffe: a zero step means the image spans the feature map evenly.
    const float step_w = step_w_ > 0.f ? step_w_ : static_cast<float>(img_w_) / layer_w_;
    const float step_h = step_h_ > 0.f ? step_h_ : static_cast<float>(img_h_) / layer_h_;
    int k = 0;
    for (int y = 0; y < layer_h_; ++y) {
      for (int x = 0; x < layer_w_; ++x) {
        const float cx = (x + offset_) * step_w;
        const float cy = (y + offset_) * step_h;
        for (size_t s = 0; s < min_sizes_.size(); ++s) {
          // Caffe-SSD stores the sizes in ints before use ("int min_size_ =
          // min_sizes_[s]"), truncating fractional sizes such as SSD512's 35.84.
          const int min_size = static_cast<int>(min_sizes_[s]);
          k = put_box(box, k, cx, cy, static_cast<float>(min_size), static_cast<float>(min_size));
          if (!max_sizes_.empty()) {
            const int max_size = static_cast<int>(max_sizes_[s]);
            const float size = static_cast<float>(std::sqrt(static_cast<double>(min_size) * max_size));
            k = put_box(box, k, cx, cy, size, size);
          }
          for (float ar : aspect_ratios_) {
            if (std::fabs(ar - 1.f) < 1e-6f) continue;
            const double r = std::sqrt(static_cast<double>(ar));
            k = put_box(box, k, cx, cy, static_cast<float>(min_size * r), static_cast<float>(min_size / r));
          }
        }
      }
    }
    if (clip_) {
      for (int i = 0; i < n; ++i) box[i] = std::min(std::max(box[i], 0.f), 1.f);
    }
    for (int i = 0; i < n; ++i) var[i] = variances_.size() == 1 ? variances_[0] : variances_[i % 4];
  }

  // Caffe divides in double ((center - size / 2.) / img_width) and stores floats;
  // doing the same keeps the priors bit-identical to Caffe's.
  int put_box(float* box, int k, float cx, float cy, float bw, float bh) const {
    box[k + 0] = static_cast<float>((cx - bw / 2.) / img_w_);
    box[k + 1] = static_cast<float>((cy - bh / 2.) / img_h_);
    box[k + 2] = static_cast<float>((cx + bw / 2.) / img_w_);
    box[k + 3] = static_cast<float>((cy + bh / 2.) / img_h_);
    return k + 4;
  }

  std::vector<float> min_sizes_, max_sizes_, aspect_ratios_, variances_;
  bool clip_ = false;
  int image_w_ = 0, image_h_ = 0;
  float step_w_ = 0.f, step_h_ = 0.f, offset_ = 0.5f;
  int priors_per_cell_ = 0;
  int layer_w_ = 0, layer_h_ = 0, img_w_ = 0, img_h_ = 0;  // from prepare()
  std::vector<float> priors_;  // from prepare(): the output's two rows
};

}  // namespace

std::unique_ptr<Layer> create_priorbox_layer() { return std::make_unique<PriorBox>(); }

}  // namespace kestrel
