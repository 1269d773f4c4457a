// Convolution: any kernel, stride, dilation, padding and grouping (depthwise, with or
// without channel multiplier, is group == in channels). prepare() picks a fast kernel
// from the convolution registry when one claims the geometry; the reference loop
// (kernels::conv_reference) covers the rest and the reference kernel set.
#include <algorithm>
#include <cstdio>
#include <new>
#include <vector>

#include "layers/activation.h"
#include "kernels/conv_kernels.h"
#include "kernels/f16_reference.h"
#include "kernels/i8_reference.h"
#include "kernels/fc_kernels.h"
#include "layers/conv_fusion.h"
#include "layers/conv_int8.h"
#include "layers/conv_spec.h"
#include "layers/kernel_bridge.h"
#include "layers/layers.h"
#include "layers/widened_weight.h"

namespace kestrel {
namespace {

using layer_util::corrupt;
using layer_util::AxisGeometry;
using layer_util::ParamCheck;

class Convolution final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    Status s = read_conv_spec(ctx, &c_);
    if (!s.ok()) return s;
    const WeightView& w = ctx.weights[0];
    if (w.shape.size() != 4 || w.shape[0] != c_.num_output || w.shape[2] != c_.kh || w.shape[3] != c_.kw ||
        w.shape[1] <= 0) {
      return corrupt("kernel weight shape " + layer_util::join_dims(w.shape) + " does not match [num_output=" +
                     std::to_string(c_.num_output) + ", in/group, " + std::to_string(c_.kh) + ", " + std::to_string(c_.kw) +
                     "]");
    }
    in_per_group_ = w.shape[1];
    half_weights_ = w.halves;
    LoadContext lc = ctx;
    lc.weights[0].data = widened_.bind(w);
    return bind_conv_weights(lc, c_, c_.num_output, in_per_group_, &weight_, &bias_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("Convolution", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (in.dims != 3) return corrupt("input must be 3-D [c,h,w], got " + std::to_string(in.dims) + "-D");
    const long long need = static_cast<long long>(c_.group) * in_per_group_;
    if (in.c != need) {
      return corrupt("input has " + std::to_string(in.c) + " channels, the weights need group * in/group = " +
                     std::to_string(c_.group) + " * " + std::to_string(in_per_group_) + " = " + std::to_string(need));
    }
    AxisGeometry gy, gx;
    s = layer_util::axis_geometry("height", in.h, c_.kh, c_.sh, c_.dh, c_.pad_top, c_.pad_bottom, c_.pad_mode, false, &gy);
    if (!s.ok()) return s;
    s = layer_util::axis_geometry("width", in.w, c_.kw, c_.sw, c_.dw, c_.pad_left, c_.pad_right, c_.pad_mode, false, &gx);
    if (!s.ok()) return s;
    g_ = kernels::ConvGeometry{};
    g_.in_c = in.c;
    g_.in_h = in.h;
    g_.in_w = in.w;
    g_.out_c = c_.num_output;
    g_.out_h = gy.out;
    g_.out_w = gx.out;
    g_.kh = c_.kh;
    g_.kw = c_.kw;
    g_.sh = c_.sh;
    g_.sw = c_.sw;
    g_.dh = c_.dh;
    g_.dw = c_.dw;
    g_.pad_top = gy.pad_begin;
    g_.pad_left = gx.pad_begin;
    g_.group = c_.group;
    g_.bias = bias_ != nullptr;
    g_.act = c_.act;
    g_.half_weights = half_weights_;
    outputs[0] = Shape::make3(gx.out, gy.out, c_.num_output);
    multiply_adds = double(gx.out) * gy.out * c_.num_output * in_per_group_ * c_.kh * c_.kw;
    // The reference set's fp16 layers compute in fp16: the fp16 oracle.
    f16_reference_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kReference;
    // bf16 (Precision::kBf16) takes the pointwise layers kernels::bf16_pointwise names:
    // a bf16 kernel where the CPU has one, the bf16 oracle on the reference set.
    g_.bf16 = ctx.precision == Precision::kBf16 && kernels::bf16_pointwise(g_);
    bf16_reference_ = g_.bf16 && ctx.kernels == KernelSet::kReference;
    // int8 (Precision::kInt8) where the input has a scale and no sum can overflow int32.
    const size_t taps = static_cast<size_t>(in_per_group_) * c_.kh * c_.kw;
    i8_ = ctx.precision == Precision::kInt8 && ctx.int8_in_scale > 0.f && taps <= kernels::kMaxProducts;
    if (i8_) return prepare_int8(ctx);
    return choose_kernel(ctx);
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    if (i8_) {
      int8_.forward(in, out, ctx);
    } else if (fc_kernel_) {
      // The GEMV writes contiguous outputs; the output's channels are cstep apart.
      float* y = reinterpret_cast<float*>(static_cast<char*>(ctx.workspace) + fc_workspace_bytes_);
      fc_kernel_->run(fc_g_, packed_.data, in.data, in.cstep, y, kernel_context(ctx));
      for (int o = 0; o < g_.out_c; ++o) out.data[o * out.cstep] = y[o];
    } else if (kernel_) {
      kernel_->run(g_, packed_.data, in.data, in.cstep, out.data, out.cstep, kernel_context(ctx));
    } else if (f16_reference_) {
      kernels::conv_reference_f16(g_, weight_, bias_, in.data, in.cstep, out.data, out.cstep, ctx.num_threads);
    } else if (bf16_reference_) {
      kernels::conv_reference_bf16(g_, weight_, bias_, in.data, in.cstep, out.data, out.cstep, ctx.num_threads);
    } else if (halves_reference_) {
      kernels::conv_reference_halves(g_, widened_.halves(), bias_, in.data, in.cstep, out.data, out.cstep,
                                     kernel_context(ctx));
    } else {
      kernels::conv_reference(g_, weight_, bias_, in.data, in.cstep, out.data, out.cstep, ctx.num_threads);
    }
    return Status::Ok();
  }

  bool parts(ConvParts* p) const {
    if (!kernel_) return false;
    p->g = &g_;
    p->kernel = kernel_;
    p->packed = packed_.data;
    return true;
  }

  // Re-targets the layer to these layouts of its input and output: the chosen kernel
  // where it takes them, else, with rechoose, the kernel the registry picks for the
  // geometry with those layouts, its weights packed again (a channel-tile 1x1 kernel
  // reads a blocked 56x56 map in place, where from a planar one it would first copy the
  // map into pixel groups, so it is picked for such maps only once they are blocked).
  // False, nothing changed, where no fast kernel takes them. dry_run: only asks. Throws
  // std::bad_alloc where the new packing cannot be allocated.
  bool set_packs(int in_pack, int out_pack, bool rechoose, bool dry_run) override {
    if (!kernel_) return false;
    kernels::ConvGeometry g = g_;
    g.in_pack = in_pack;
    g.out_pack = out_pack;
    if (g.in_pack == g_.in_pack && g.out_pack == g_.out_pack) return true;
    const int lanes = std::max(in_pack, out_pack);
    const kernels::ConvKernel* k = kernel_;
    if (rechoose && (k->blocked_lanes != lanes || !k->supports(g))) {
      k = kernels::select_conv_kernel(g, kernels::active_isa());
    }
    if (!k || k->blocked_lanes != lanes || !k->supports(g)) return false;
    if (dry_run) return true;
    if (k != kernel_ &&
        !bind_packed_kernel(k, g, widened_.floats(), bias_, "convolution weights", this, &packed_, &kernel_).ok()) {
      throw std::bad_alloc();
    }
    drop_floats();
    g_ = g;
    workspace_bytes = kernel_->workspace_bytes(g_);
    workspace_per_thread_bytes = kernel_->workspace_per_thread_bytes(g_);
    // Profiles show the layouts: "[1>16]" reads planar and writes blocks of 16. A fixed
    // buffer: no allocation at load beyond the packed weights.
    std::snprintf(name_, sizeof name_, "%s[%d>%d]", kernel_->name, g_.in_pack, g_.out_pack);
    kernel_name = name_;
    return true;
  }

  // Re-targets the layer to fp16 arithmetic on halves (Layer::set_half): the fp16 kernel
  // the registry picks for the geometry in those layouts, its weights (already rounded to
  // halves at load) packed as halves. The reference set keeps the fp16 oracle.
  bool set_half(int in_pack, int out_pack, bool dry_run) override {
    if (f16_reference_ || (!kernel_ && !fc_kernel_)) return false;
    kernels::ConvGeometry g = g_;
    g.f16 = true;
    g.in_pack = in_pack;
    g.out_pack = out_pack;
    const kernels::ConvKernel* k = kernels::select_conv_kernel(g, kernels::active_isa());
    if (!k || !k->f16) return false;
    if (dry_run) return true;
    fc_kernel_ = nullptr;
    if (!bind_packed_kernel(k, g, widened_.floats(), bias_, "convolution weights", this, &packed_, &kernel_).ok()) {
      throw std::bad_alloc();
    }
    drop_floats();
    g_ = g;
    std::snprintf(name_, sizeof name_, "%s[h%d>h%d]", kernel_->name, g_.in_pack, g_.out_pack);
    kernel_name = name_;
    return true;
  }

  bool set_int8_maps(const std::vector<float>& in_scales, float out_scale, bool dry_run) override {
    if (!i8_ || in_scales.size() != 1 || !int8_.set_maps(in_scales[0] > 0.f, out_scale, dry_run)) return false;
    if (!dry_run) workspace_bytes = int8_.workspace_bytes();
    return true;
  }

  size_t packed_weight_bytes() const override {
    return (kernel_ || fc_kernel_ ? packed_.total() * sizeof(float) : 0) + widened_.held_bytes() +
           (i8_ ? int8_.held_bytes() : 0);
  }
  // A fast kernel's packing holds the weights and the bias; an F16 kernel weight is
  // never read from the model (WidenedWeight).
  bool reads_weight_in_place(size_t i) const override {
    if (i == 0 && i8_) return false;  // quantized (Int8Conv)
    return !kernel_ && !fc_kernel_ && !(i == 0 && widened_.compact() && !halves_reference_);
  }
  bool widens_weight(size_t i) const override { return i == 0; }
  bool computes_bf16() const override { return g_.bf16; }
  bool computes_int8() const override { return i8_; }

 private:
  // int8 (layers/conv_int8.h): the route and its packing, the fp32 weights let go.
  Status prepare_int8(const PrepareContext& ctx) {
    kernel_ = nullptr;
    fc_kernel_ = nullptr;
    packed_.release();
    weight_ = nullptr;
    return prepare_int8_layer(g_, &widened_, bias_, ctx, &int8_, this);
  }

  // Picks the fast kernel for this geometry (once, at Net load) and packs its weights.
  Status choose_kernel(const PrepareContext& ctx) {
    Status s = choose_kernel_with_floats(ctx);
    // Halves no kernel takes run the fp32 reference loop on the halves in place, a
    // channel's widened into the thread's scratch at a time.
    halves_reference_ = s.ok() && !kernel_ && !fc_kernel_ && widened_.from_halves() && !f16_reference_ &&
                        !bf16_reference_;
    if (halves_reference_) workspace_per_thread_bytes = kernels::conv_reference_halves_scratch(g_);
    drop_floats();
    return s;
  }

  // Frees widened F16 weights once a packing (or the reference loop on halves) holds
  // them (WidenedWeight): the fp16 and bf16 oracles alone read weight_.
  void drop_floats() {
    if (widened_.compact() && (kernel_ || fc_kernel_ || halves_reference_)) {
      widened_.drop();
      weight_ = nullptr;
    }
  }

  Status choose_kernel_with_floats(const PrepareContext& ctx) {
    weight_ = widened_.floats();
    const bool fast = ctx.kernels == KernelSet::kFast;
    kernel_ = nullptr;
    fc_kernel_ = nullptr;
    // A bf16 layer's kernel, where the CPU has one, before the fp32 GEMV.
    const kernels::ConvKernel* bf16 =
        fast && g_.bf16 ? kernels::select_conv_kernel(g_, kernels::active_isa()) : nullptr;
    const bool bf16_kernel = bf16 && bf16->bf16;
    if (fast && is_gemv(g_) && !bf16_kernel) {
      fc_g_ = kernels::FcGeometry{};
      fc_g_.in_planes = g_.in_c;
      fc_g_.in_plane = 1;
      fc_g_.num_output = g_.out_c;
      fc_g_.bias = g_.bias;
      fc_g_.act = g_.act;
      fc_g_.half_weights = half_weights_;
      const kernels::FcKernel* k = kernels::select_fc_kernel(fc_g_, kernels::active_isa());
      if (k) {
        Status s = bind_packed_kernel(k, fc_g_, weight_, bias_, "convolution weights", this, &packed_, &fc_kernel_);
        fc_workspace_bytes_ = (workspace_bytes + kAlignment - 1) / kAlignment * kAlignment;
        workspace_bytes = fc_workspace_bytes_ + sizeof(float) * static_cast<size_t>(g_.out_c);
        return s;
      }
    }
    const kernels::ConvKernel* k = fast ? kernels::select_conv_kernel(g_, kernels::active_isa()) : nullptr;
    return bind_packed_kernel(k, g_, weight_, bias_, "convolution weights", this, &packed_, &kernel_);
  }

  // A 1x1 convolution of a 1x1 map (a classifier head written as a convolution, like
  // MobileNet's fc7) reads every weight once: the InnerProduct GEMV, which streams
  // the weights in order, beats tile kernels built for reuse.
  static bool is_gemv(const kernels::ConvGeometry& g) {
    return g.in_h == 1 && g.in_w == 1 && g.out_h == 1 && g.out_w == 1 && g.kh == 1 && g.kw == 1 && g.group == 1 &&
           g.pad_top == 0 && g.pad_left == 0;
  }

 private:
  ConvSpec c_;
  int in_per_group_ = 0;
  kernels::ConvGeometry g_;  // resolved in prepare()
  const kernels::ConvKernel* kernel_ = nullptr;
  const kernels::FcKernel* fc_kernel_ = nullptr;  // is_gemv geometries
  kernels::FcGeometry fc_g_;
  size_t fc_workspace_bytes_ = 0;  // the GEMV's share of the workspace; its output follows
  Mat packed_;  // kernel_'s or fc_kernel_'s packed weights
  char name_[64] = {};  // kernel_name with the operands' layouts, once re-targeted
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  bool f16_reference_ = false;
  bool bf16_reference_ = false;  // the bf16 oracle (reference set, Precision::kBf16)
  bool halves_reference_ = false;  // conv_reference_halves on widened_'s halves
  bool half_weights_ = false;  // the kernel weight's values are halves (WeightView::halves)
  bool i8_ = false;            // int8 (Precision::kInt8, the input has a scale)
  Int8Conv int8_;              // its route
  WidenedWeight widened_;      // weight_'s source
};

}  // namespace

std::unique_ptr<Layer> create_convolution_layer() { return std::make_unique<Convolution>(); }

bool convolution_parts(const Layer& layer, ConvParts* parts) {
  const auto* conv = dynamic_cast<const Convolution*>(&layer);
  return conv != nullptr && conv->parts(parts);
}

}  // namespace kestrel
