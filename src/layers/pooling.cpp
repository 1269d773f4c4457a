// Pooling: max and average over windows, or over the whole plane (global). prepare()
// picks a fast kernel from the pooling registry when one claims the geometry; the
// reference loops (kernels::pool_reference) cover the rest and the reference kernel set.
// The layout pass (core/net_layout.cpp) may then re-target a fast kernel to blocked maps,
// and the fp16 pass (core/net_half.cpp) one prepared at kFp16 to pack8 maps of halves.
// At kInt8 a global pooling may read an int8 map (set_int8_maps): the plane's exact
// integer sum or maximum (I8MapKernel::sum, max), then i8_global_pool_value, written as
// an fp32 or an int8 map. Windowed poolings keep fp32 maps.
#include <cstdio>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "kernels/pool_kernels.h"
#include "layers/kernel_bridge.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisGeometry;
using layer_util::corrupt;
using layer_util::ParamCheck;

class Pooling final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::PoolingParam* p = ctx.layer->params_as_PoolingParam();
    if (!p) return corrupt("missing PoolingParam");
    pool_ = p->pool();
    global_ = p->global();
    kh_ = p->kernel_h();
    kw_ = p->kernel_w();
    sh_ = p->stride_h();
    sw_ = p->stride_w();
    pad_top_ = p->pad_top();
    pad_left_ = p->pad_left();
    pad_bottom_ = p->pad_bottom();
    pad_right_ = p->pad_right();
    pad_mode_ = p->pad_mode();
    ceil_ = p->round_mode() == fb::RoundMode::Ceil;
    count_include_pad_ = p->count_include_pad();
    const int pool = static_cast<int>(pool_), mode = static_cast<int>(pad_mode_);
    const int round = static_cast<int>(p->round_mode());

    ParamCheck check;
    check.require(pool >= 0 && pool <= static_cast<int>(fb::PoolType::MAX), "unknown pool type " + std::to_string(pool))
        .require(mode >= 0 && mode <= static_cast<int>(fb::PadMode::MAX), "unknown pad_mode " + std::to_string(mode))
        .require(round >= 0 && round <= static_cast<int>(fb::RoundMode::MAX),
                 "unknown round_mode " + std::to_string(round));
    if (!global_) {
      check.positive("kernel_h", kh_).positive("kernel_w", kw_)
          .positive("stride_h", sh_).positive("stride_w", sw_)
          .non_negative("pad_top", pad_top_).non_negative("pad_left", pad_left_)
          .non_negative("pad_bottom", pad_bottom_).non_negative("pad_right", pad_right_);
      // As Caffe and ONNX require: a window lying wholly in the padding would have no
      // input cell to take a max or an average of.
      const auto below = [&](const char* pad_name, int pad, const char* k_name, int k) {
        check.require(!check.ok() || pad < k, [&] {
          return std::string(pad_name) + " (" + std::to_string(pad) + ") must be smaller than " + k_name + " (" +
                 std::to_string(k) + ")";
        });
      };
      below("pad_top", pad_top_, "kernel_h", kh_);
      below("pad_bottom", pad_bottom_, "kernel_h", kh_);
      below("pad_left", pad_left_, "kernel_w", kw_);
      below("pad_right", pad_right_, "kernel_w", kw_);
    }
    return check.status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("Pooling", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const Shape& in = inputs[0];
    if (in.dims != 3) return corrupt("input must be 3-D [c,h,w], got " + std::to_string(in.dims) + "-D");
    if (global_) {
      kh_ = in.h;
      kw_ = in.w;
      sh_ = sw_ = 1;
      gy_ = AxisGeometry{0, 0, 1};
      gx_ = AxisGeometry{0, 0, 1};
    } else {
      s = layer_util::axis_geometry("height", in.h, kh_, sh_, 1, pad_top_, pad_bottom_, pad_mode_, ceil_, &gy_);
      if (!s.ok()) return s;
      s = layer_util::axis_geometry("width", in.w, kw_, sw_, 1, pad_left_, pad_right_, pad_mode_, ceil_, &gx_);
      if (!s.ok()) return s;
    }
    outputs[0] = Shape::make3(gx_.out, gy_.out, in.c);
    g_ = kernels::PoolGeometry{};
    g_.channels = in.c;
    g_.in_h = in.h;
    g_.in_w = in.w;
    g_.out_h = gy_.out;
    g_.out_w = gx_.out;
    g_.kh = kh_;
    g_.kw = kw_;
    g_.sh = sh_;
    g_.sw = sw_;
    g_.pad_top = gy_.pad_begin;
    g_.pad_bottom = gy_.pad_end;
    g_.pad_left = gx_.pad_begin;
    g_.pad_right = gx_.pad_end;
    g_.pool = pool_;
    g_.count_include_pad = count_include_pad_;
    g_.global = global_;
    half_candidate_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kFast;
    // A plane's int32 sum must not overflow.
    i8_candidate_ = ctx.precision == Precision::kInt8 && global_ &&
                    (pool_ == fb::PoolType::Max || pool_ == fb::PoolType::Average) &&
                    static_cast<long long>(in.w) * in.h <= kMaxI8PoolPlane;
    i8_reference_ = ctx.kernels == KernelSet::kReference;
    // Chosen once, at Net load.
    kernel_ = ctx.kernels == KernelSet::kFast ? kernels::select_pool_kernel(g_, kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    workspace_bytes = kernel_ ? kernel_->workspace_bytes(g_) : 0;
    workspace_per_thread_bytes = kernel_ ? kernel_->workspace_per_thread_bytes(g_) : 0;
    return Status::Ok();
  }

  // Re-targets the layer to these layouts of its input and output (Layer::set_packs):
  // the blocked kernels are kernels of their own, so the registry picks again whatever
  // rechoose says (as a Convolution does with NEON's pack4 kernels).
  bool set_packs(int in_pack, int out_pack, bool /*rechoose*/, bool dry_run) override {
    if (!kernel_ || g_.f16) return false;
    kernels::PoolGeometry g = g_;
    g.in_pack = in_pack;
    g.out_pack = out_pack;
    if (g.in_pack == g_.in_pack && g.out_pack == g_.out_pack) return true;
    const kernels::PoolKernel* k = kernels::select_pool_kernel(g, kernels::active_isa());
    if (!k) return false;
    if (dry_run) return true;
    kernel_ = k;
    g_ = g;
    workspace_bytes = kernel_->workspace_bytes(g_);
    workspace_per_thread_bytes = kernel_->workspace_per_thread_bytes(g_);
    // "[4>4]": reads and writes blocks of 4, as the Convolutions' names say.
    std::snprintf(name_, sizeof name_, "%s[%d>%d]", kernel_->name, g_.in_pack, g_.out_pack);
    kernel_name = name_;
    return true;
  }

  // Re-targets the layer to maps of halves (Layer::set_half): the registry's fp16 kernel
  // for the geometry in those layouts (pack8 in and out). Its results are pool_reference's
  // rounded to halves, which is what the reference set computes at kFp16 (the Net rounds
  // the output), so the reference set keeps its loops.
  bool set_half(int in_pack, int out_pack, bool dry_run) override {
    if (!half_candidate_) return false;
    kernels::PoolGeometry g = g_;
    g.f16 = true;
    g.in_pack = in_pack;
    g.out_pack = out_pack;
    const kernels::PoolKernel* k = kernels::select_pool_kernel(g, kernels::active_isa());
    if (!k || !k->f16) return false;
    if (dry_run) return true;
    kernel_ = k;
    g_ = g;
    workspace_bytes = kernel_->workspace_bytes(g_);
    workspace_per_thread_bytes = kernel_->workspace_per_thread_bytes(g_);
    std::snprintf(name_, sizeof name_, "%s[h%d>h%d]", kernel_->name, g_.in_pack, g_.out_pack);
    kernel_name = name_;
    return true;
  }

  // Re-targets a global pooling to read an int8 map (planar), its output an fp32 map or
  // (out_scale > 0) an int8 one. An fp32 input keeps the fp32 path.
  bool set_int8_maps(const std::vector<float>& in_scales, float out_scale, bool dry_run) override {
    if (!i8_candidate_ || in_scales.size() != 1 || !(in_scales[0] > 0.f) || g_.f16 || !g_.planar()) return false;
    if (dry_run) return true;
    in_dequant_ = 1.f / in_scales[0];
    out_scale_ = out_scale;
    kernel_ = nullptr;  // the fp32 kernel's workspace is no longer asked for
    workspace_bytes = workspace_per_thread_bytes = 0;
    kernel_name = i8_reference_ ? nullptr : kernels::i8_map_kernel().name;
    return true;
  }
  bool computes_int8() const override { return i8_candidate_; }
  bool int8_needs_maps() const override { return true; }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    if (in_dequant_ > 0.f) {
      forward_int8(in, out, ctx.num_threads);
    } else if (kernel_) {
      kernel_->run(g_, in.data, in.cstep, out.data, out.cstep, kernel_context(ctx));
    } else {
      kernels::pool_reference(g_, in.data, in.cstep, out.data, out.cstep, ctx.num_threads);
    }
    return Status::Ok();
  }

 private:
  // Planes of at most this many values: 127 times it fits in int32.
  static constexpr long long kMaxI8PoolPlane = 16 << 20;

  // A channel an iteration: its plane's reduction, then its value.
  void forward_int8(const Mat& in, Mat& out, int num_threads) const {
    const size_t n = static_cast<size_t>(g_.in_h) * g_.in_w;
    const bool max = pool_ == fb::PoolType::Max;
    const kernels::I8MapKernel& mk = kernels::i8_map_kernel();
    const auto sum = i8_reference_ ? kernels::i8_sum_reference : mk.sum;
    const auto largest = i8_reference_ ? kernels::i8_max_reference : mk.max;
    const auto at = [](const Mat& m, int q) { return reinterpret_cast<char*>(m.data) + q * m.cstep * sizeof(float); };
#pragma omp parallel for num_threads(num_threads)
    for (int q = 0; q < g_.channels; ++q) {
      const int8_t* p = reinterpret_cast<const int8_t*>(at(in, q));
      const int32_t r = max ? largest(p, n) : sum(p, n);
      const float y = kernels::i8_global_pool_value(max, r, n, in_dequant_);
      if (out_scale_ > 0.f) {
        *reinterpret_cast<int8_t*>(at(out, q)) = kernels::i8_requantize_plain(y, out_scale_);
      } else {
        *reinterpret_cast<float*>(at(out, q)) = y;
      }
    }
  }

  fb::PoolType pool_ = fb::PoolType::Max;
  bool global_ = false, ceil_ = false, count_include_pad_ = true;
  bool half_candidate_ = false;  // prepared at kFp16 on the fast set: set_half may re-target
  bool i8_candidate_ = false;    // prepared at kInt8, global: set_int8_maps may re-target
  bool i8_reference_ = false;    // prepared on the reference kernel set
  float in_dequant_ = 0.f;       // > 0: reads an int8 map (1 / its scale)
  float out_scale_ = 0.f;        // > 0: writes an int8 map at this scale
  int kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1;
  int pad_top_ = 0, pad_left_ = 0, pad_bottom_ = 0, pad_right_ = 0;
  fb::PadMode pad_mode_ = fb::PadMode::Explicit;
  AxisGeometry gy_, gx_;  // resolved in prepare()
  kernels::PoolGeometry g_;
  const kernels::PoolKernel* kernel_ = nullptr;
  char name_[64] = {};  // kernel_name with the operands' layouts, once re-targeted
};

}  // namespace

std::unique_ptr<Layer> create_pooling_layer() { return std::make_unique<Pooling>(); }

}  // namespace kestrel
