// InnerProduct (fully connected): y = W x + b over the input flattened in logical order.
// prepare() picks a GEMV kernel from the inner-product registry and packs the weights
// for it once; kernels::fc_reference covers the rest and the reference kernel set. At
// Precision::kInt8 (the input has a scale) it runs as the convolution it equals
// (layers/conv_int8.h): an [n] or [c, 1, 1] input as a 1x1 convolution of one pixel, a
// [c, h, w] one as a window as wide as each channel's plane, laid out as one row.
#include "kernels/f16_reference.h"
#include "kernels/fc_kernels.h"
#include "kernels/i8_reference.h"
#include "layers/activation.h"
#include "layers/conv_int8.h"
#include "layers/kernel_bridge.h"
#include "layers/layers.h"
#include "layers/widened_weight.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class InnerProduct final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::InnerProductParam* p = ctx.layer->params_as_InnerProductParam();
    if (!p) return corrupt("missing InnerProductParam");
    num_output_ = p->num_output();
    act_ = activation_spec(p->activation());
    const bool bias = p->bias_term();
    layer_util::ParamCheck check;
    check.positive("num_output", num_output_);
    check.require(ctx.weights.size() == (bias ? 2u : 1u), [&] {
      return std::string("expects ") + (bias ? "2 weights (weight, bias)" : "1 weight") + ", got " +
             std::to_string(ctx.weights.size());
    });
    if (!check.ok()) return check.status();
    Status s = check_activation(act_);
    if (!s.ok()) return s;

    const WeightView& w = ctx.weights[0];
    if (w.shape.size() != 2 || w.shape[0] != num_output_ || w.shape[1] <= 0) {
      return corrupt("weight shape " + layer_util::join_dims(w.shape) + " does not match [num_output=" +
                     std::to_string(num_output_) + ", inputs]");
    }
    num_input_ = w.shape[1];
    size_t expected = 0;
    if (!checked_mul({size_t(num_output_), size_t(num_input_)}, &expected)) return corrupt("weight count overflows");
    if (w.count != expected || (!w.data && !w.half_data && !w.i8_data)) {
      return corrupt("weight has " + std::to_string(w.count) + " values, expected " + std::to_string(expected));
    }
    weight_ = widened_.bind(w);
    half_weights_ = w.halves;
    return layer_util::load_bias(ctx.weights, bias, num_output_, &bias_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("InnerProduct", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    if (inputs[0].total() != size_t(num_input_)) {
      return corrupt("input has " + std::to_string(inputs[0].total()) + " values, the weights expect " +
                     std::to_string(num_input_));
    }
    outputs[0] = Shape::make1(num_output_);
    multiply_adds = double(num_output_) * num_input_;
    g_ = kernels::FcGeometry{};
    g_.in_planes = inputs[0].dims >= 3 ? inputs[0].c : 1;
    g_.in_plane = layer_util::plane_size(inputs[0]);
    g_.num_output = num_output_;
    g_.bias = bias_ != nullptr;
    g_.act = act_;
    g_.half_weights = half_weights_;
    // The reference set's fp16 layers compute in fp16: the fp16 oracle.
    f16_reference_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kReference;
    i8_ = ctx.precision == Precision::kInt8 && ctx.int8_in_scale > 0.f &&
          static_cast<size_t>(num_input_) <= kernels::kMaxProducts;
    if (i8_) return prepare_int8(ctx);
    return choose_kernel(ctx);
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    float* out = outputs[0].data;
    // The input is a sequence of contiguous planes (cstep apart when padded).
    if (i8_) {
      // A single plane's values, as channels of one pixel, are adjacent; planes (of one
      // value or of many) are cstep apart.
      int8_.forward(in.data, g_.in_planes == 1 ? 1 : in.cstep, out, 1, ctx);
    } else if (kernel_) {
      kernel_->run(g_, packed_.data, in.data, in.cstep, out, kernel_context(ctx));
    } else if (f16_reference_) {
      kernels::fc_reference_f16(g_, weight_, bias_, in.data, in.cstep, out, ctx.num_threads);
    } else if (halves_reference_) {
      kernels::fc_reference_halves(g_, widened_.halves(), bias_, in.data, in.cstep, out, kernel_context(ctx));
    } else {
      kernels::fc_reference(g_, weight_, bias_, in.data, in.cstep, out, ctx.num_threads);
    }
    return Status::Ok();
  }

  size_t packed_weight_bytes() const override {
    return (kernel_ ? packed_.total() * sizeof(float) : 0) + widened_.held_bytes() + (i8_ ? int8_.held_bytes() : 0);
  }
  // A fast kernel's packing holds the weights and the bias; an F16 weight is never read
  // from the model (WidenedWeight).
  bool reads_weight_in_place(size_t i) const override {
    if (i == 0 && i8_) return false;  // quantized (Int8Conv)
    return !kernel_ && !(i == 0 && widened_.compact() && !halves_reference_);
  }
  bool widens_weight(size_t i) const override { return i == 0; }
  bool computes_int8() const override { return i8_; }

 private:
  // The convolution this layer equals, on the input's planes (FcGeometry): in_plane
  // values of in_planes channels, or one plane of n values as n channels of one pixel.
  Status prepare_int8(const PrepareContext& ctx) {
    kernel_ = nullptr;
    packed_.release();
    kernels::ConvGeometry g;
    if (g_.in_plane == 1 || g_.in_planes == 1) {
      g.in_c = num_input_;
      g.in_h = g.in_w = 1;
    } else {
      // Each plane as one row, the window as wide.
      g.in_c = g_.in_planes;
      g.in_h = 1;
      g.in_w = static_cast<int>(g_.in_plane);
      g.kw = g.in_w;
    }
    g.out_c = num_output_;
    g.out_h = g.out_w = 1;
    g.bias = bias_ != nullptr;
    g.act = act_;
    weight_ = nullptr;
    return prepare_int8_layer(g, &widened_, bias_, ctx, &int8_, this);
  }

  // Picks the fast kernel for this geometry (once, at Net load) and packs its weights.
  Status choose_kernel(const PrepareContext& ctx) {
    const kernels::FcKernel* k =
        ctx.kernels == KernelSet::kFast ? kernels::select_fc_kernel(g_, kernels::active_isa()) : nullptr;
    weight_ = widened_.floats();
    Status s = bind_packed_kernel(k, g_, weight_, bias_, "inner product weights", this, &packed_, &kernel_);
    // Halves no kernel takes run the fp32 reference loop on the halves in place.
    halves_reference_ = s.ok() && !kernel_ && widened_.from_halves() && !f16_reference_;
    if (halves_reference_) workspace_per_thread_bytes = kernels::fc_reference_halves_scratch(g_);
    if (widened_.compact() && (kernel_ || halves_reference_)) {
      widened_.drop();  // the packing holds them; the fp16 oracle alone reads weight_
      weight_ = nullptr;
    }
    return s;
  }

 private:
  int num_output_ = 0, num_input_ = 0;
  ActivationSpec act_;
  const float* weight_ = nullptr;
  const float* bias_ = nullptr;
  bool half_weights_ = false;  // WeightView::halves
  bool halves_reference_ = false;  // fc_reference_halves on widened_'s halves
  WidenedWeight widened_;      // weight_'s source
  kernels::FcGeometry g_;  // resolved in prepare()
  const kernels::FcKernel* kernel_ = nullptr;
  Mat packed_;  // kernel_'s packed weights
  bool f16_reference_ = false;
  bool i8_ = false;  // int8 (Precision::kInt8, the input has a scale)
  Int8Conv int8_;    // its route
};

}  // namespace

std::unique_ptr<Layer> create_innerproduct_layer() { return std::make_unique<InnerProduct>(); }

}  // namespace kestrel
