// Interp: nearest or bilinear resize of the two inner axes of a [c][h][w] blob, with
// PyTorch's F.interpolate coordinate mapping (scales recomputed as in / out). The loops
// are the Interp kernel family's references (kernels/interp_kernels.h): fp32, or the
// binary16 twin at Precision::kFp16 on the reference kernel set; the fp16 pass
// (core/net_half.cpp) may re-target a layer prepared at kFp16 to the fp16 kernel on
// pack8 maps of halves.
#include <cmath>
#include <cstdio>

#include "kernels/interp_kernels.h"
#include "layers/kernel_bridge.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using kernels::InterpTap;
using layer_util::corrupt;

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

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
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
      for (int i = 0; i < out_size[a]; ++i) {
        taps_[a][i] = kernels::interp_tap(mode_, align_corners_, coords_, i, in_size[a], out_size[a]);
      }
    }
    outputs[0] = Shape::make3(out_size[1], out_size[0], in.c);
    g_ = kernels::InterpGeometry{};
    g_.channels = in.c;
    g_.in_h = in.h;
    g_.in_w = in.w;
    g_.out_h = out_size[0];
    g_.out_w = out_size[1];
    g_.bilinear = mode_ == fb::InterpMode::Bilinear;
    g_.rows = taps_[0].data();
    g_.columns = taps_[1].data();
    kernel_ = nullptr;
    kernel_name = nullptr;
    // The reference set's fp16 layers compute in fp16: the fp16 oracle.
    f16_reference_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kReference;
    half_candidate_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kFast;
    return Status::Ok();
  }

  // Re-targets the layer to maps of halves (Layer::set_half): the registry's fp16 kernel
  // for the geometry in those layouts (pack8 in and out), bit for bit the fp16 twin the
  // reference set computes with. Without one the layer stays fp32 on halves.
  bool set_half(int in_pack, int out_pack, bool dry_run) override {
    if (!half_candidate_) return false;
    kernels::InterpGeometry g = g_;
    g.f16 = true;
    g.in_pack = in_pack;
    g.out_pack = out_pack;
    const kernels::InterpKernel* k = kernels::select_interp_kernel(g, kernels::active_isa());
    if (!k || !k->f16) return false;
    if (dry_run) return true;
    kernel_ = k;
    g_ = g;
    std::snprintf(name_, sizeof name_, "%s[h%d>h%d]", kernel_->name, g_.in_pack, g_.out_pack);
    kernel_name = name_;
    return true;
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    if (kernel_) {
      kernel_->run(g_, in.data, in.cstep, out.data, out.cstep, kernel_context(ctx));
    } else if (f16_reference_) {
      kernels::interp_reference_f16(g_, in.data, in.cstep, out.data, out.cstep, ctx.num_threads);
    } else {
      kernels::interp_reference(g_, in.data, in.cstep, out.data, out.cstep, ctx.num_threads);
    }
    return Status::Ok();
  }

 private:
  fb::InterpMode mode_ = fb::InterpMode::Nearest;
  bool align_corners_ = false;
  fb::InterpCoords coords_ = fb::InterpCoords::PyTorch;
  int size_[2] = {0, 0};       // h, w
  float scale_[2] = {0.f, 0.f};
  std::vector<InterpTap> taps_[2];  // prepared: per output row, per output column
  kernels::InterpGeometry g_;       // prepared; its taps are taps_
  bool f16_reference_ = false;      // kFp16 on the reference set: the fp16 twin
  bool half_candidate_ = false;     // kFp16 on the fast set: set_half may re-target
  const kernels::InterpKernel* kernel_ = nullptr;
  char name_[64] = {};  // kernel_name with the operands' layouts, once re-targeted
};

}  // namespace

std::unique_ptr<Layer> create_interp_layer() { return std::make_unique<Interp>(); }

}  // namespace kestrel
