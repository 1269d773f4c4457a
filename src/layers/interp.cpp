// Interp: nearest or bilinear resize of the two inner axes of a [c][h][w] blob, with
// PyTorch's F.interpolate coordinate mapping (scales recomputed as in / out).
#include <cmath>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

// Where output position i reads along one axis: a blend of in[lo] and in[hi].
// Nearest sets lo == hi and weight_hi = 0.
struct Tap {
  int lo = 0, hi = 0;
  float weight_hi = 0.f;
};

class Interp final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::InterpParam* p = ctx.layer->params_as_InterpParam();
    if (!p) return corrupt("missing InterpParam");
    mode_ = p->mode();
    align_corners_ = p->align_corners();
    coords_ = p->coords();
    size_[0] = p->output_h(), size_[1] = p->output_w();
    scale_[0] = p->scale_h(), scale_[1] = p->scale_w();
    layer_util::ParamCheck check;
    check.require(mode_ == fb::InterpMode::Nearest || mode_ == fb::InterpMode::Bilinear,
                  [&] { return "unknown interpolation mode " + std::to_string(static_cast<int>(mode_)); });
    check.require(coords_ >= fb::InterpCoords::MIN && coords_ <= fb::InterpCoords::MAX,
                  [&] { return "unknown coordinate mapping " + std::to_string(static_cast<int>(coords_)); });
    check.require(coords_ == fb::InterpCoords::PyTorch || !align_corners_,
                  [] { return std::string("coords other than PyTorch need align_corners false"); });
    const char* names[2][2] = {{"output_h", "scale_h"}, {"output_w", "scale_w"}};
    for (int a = 0; a < 2; ++a) {
      check.non_negative(names[a][0], size_[a]);
      // The negated test also rejects NaN.
      check.require(!(scale_[a] < 0.f) && std::isfinite(scale_[a]),
                    [&] { return std::string(names[a][1]) + " must be finite and >= 0"; });
      check.require(size_[a] > 0 || scale_[a] > 0.f, [&] {
        return std::string("neither ") + names[a][0] + " nor " + names[a][1] + " is set";
      });
    }
    return check.status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Interp", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (in.dims != 3) return corrupt("Interp needs a 3-D [c,h,w] input, got " + std::to_string(in.dims) + " dims");
    // Every output pixel reads some input pixel.
    if (in.h < 1 || in.w < 1) return corrupt("Interp input has an empty plane");
    const int in_size[2] = {in.h, in.w};
    int out_size[2];
    for (int a = 0; a < 2; ++a) {
      const double n = size_[a] > 0 ? size_[a] : std::floor(static_cast<double>(in_size[a]) * scale_[a]);
      if (n < 1 || n > 0x7fffffff) {
        return corrupt(std::string(a == 0 ? "output height " : "output width ") + std::to_string(n) +
                       " is out of range");
      }
      out_size[a] = static_cast<int>(n);
      taps_[a].resize(static_cast<size_t>(out_size[a]));
      for (int i = 0; i < out_size[a]; ++i) taps_[a][i] = tap(i, in_size[a], out_size[a]);
    }
    outputs[0] = Shape::make3(out_size[1], out_size[0], in.c);
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    const std::vector<Tap>& ty = taps_[0];
    const std::vector<Tap>& tx = taps_[1];
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int q = 0; q < in.c; ++q) {
      const float* src = in.channel(q);
      float* dst = out.channel(q);
      for (int y = 0; y < out.h; ++y) {
        const float* r0 = src + static_cast<size_t>(ty[y].lo) * in.w;
        const float* r1 = src + static_cast<size_t>(ty[y].hi) * in.w;
        const float wy = ty[y].weight_hi;
        float* d = dst + static_cast<size_t>(y) * out.w;
        for (int x = 0; x < out.w; ++x) {
          const Tap& t = tx[x];
          const float top = r0[t.lo] + t.weight_hi * (r0[t.hi] - r0[t.lo]);
          const float bottom = r1[t.lo] + t.weight_hi * (r1[t.hi] - r1[t.lo]);
          d[x] = top + wy * (bottom - top);
        }
      }
    }
    return Status::Ok();
  }

 private:
  // PyTorch's index arithmetic, in float as its CPU kernels do, so that nearest picks
  // the same pixel where dst * in / out lands on an integer.
  Tap tap(int i, int in, int out) const {
    Tap t;
    if (mode_ == fb::InterpMode::Nearest) {
      const float scale = static_cast<float>(in) / static_cast<float>(out);
      const float at = coords_ == fb::InterpCoords::HalfPixel ? static_cast<float>(i) + 0.5f : static_cast<float>(i);
      t.lo = t.hi = std::min(static_cast<int>(std::floor(at * scale)), in - 1);
      return t;
    }
    float src = 0.f;
    if (align_corners_) {
      const float scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
      src = scale * static_cast<float>(i);
    } else if (coords_ == fb::InterpCoords::Asymmetric) {
      src = static_cast<float>(in) / static_cast<float>(out) * static_cast<float>(i);
    } else {
      const float scale = static_cast<float>(in) / static_cast<float>(out);
      src = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.f);
    }
    t.lo = std::min(static_cast<int>(src), in - 1);
    t.hi = std::min(t.lo + 1, in - 1);
    t.weight_hi = t.hi > t.lo ? src - static_cast<float>(t.lo) : 0.f;
    return t;
  }

  fb::InterpMode mode_ = fb::InterpMode::Nearest;
  bool align_corners_ = false;
  fb::InterpCoords coords_ = fb::InterpCoords::PyTorch;
  int size_[2] = {0, 0};       // h, w
  float scale_[2] = {0.f, 0.f};
  std::vector<Tap> taps_[2];   // prepared: per output row, per output column
};

}  // namespace

std::unique_ptr<Layer> create_interp_layer() { return std::make_unique<Interp>(); }

}  // namespace kestrel
