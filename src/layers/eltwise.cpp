// Eltwise: combines any number of same-shape inputs elementwise (weighted sum,
// product or maximum), with a fused activation. A kernel of the eltwise registry,
// chosen at prepare(), folds every input in one pass; kernels::eltwise_reference is
// the reference kernel set's. At fp16, a fold of two maps may be re-targeted to halves
// (set_half); at int8, an unweighted Sum of two maps to int8 maps (set_int8_maps: the
// residual add of kernels/i8_reference.h, as BinaryOp's, Caffe's ResNet blocks).
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kernels/elementwise_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "layers/activation.h"
#include "layers/i8_add_maps.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

// Inputs folded per kernel call: the source pointers live on the stack, so a longer
// fold continues from the output in further passes (see EltwiseKernel).
constexpr int kInputsPerPass = 8;

class Eltwise final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::EltwiseParam* p = ctx.layer->params_as_EltwiseParam();
    if (!p) return corrupt("missing EltwiseParam");
    op_ = p->op();
    act_ = activation_spec(p->activation());
    const int op = static_cast<int>(op_);
    if (op < 0 || op > static_cast<int>(fb::EltwiseOp::MAX)) return corrupt("unknown op " + std::to_string(op));
    if (p->coefficients()) coefficients_.assign(p->coefficients()->begin(), p->coefficients()->end());
    // As in Caffe: coefficients weight a sum only.
    if (!coefficients_.empty() && op_ != fb::EltwiseOp::Sum) {
      return corrupt(std::string("coefficients are only allowed with op Sum, got op ") + fb::EnumNameEltwiseOp(op_));
    }
    if (!ctx.weights.empty()) return corrupt("takes no weights, got " + std::to_string(ctx.weights.size()));
    return check_activation(act_);
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("Eltwise", inputs, 1, 1 << 20, outputs);
    if (!s.ok()) return s;
    const Shape& first = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) {
      if (inputs[i] != first) {
        return corrupt("input " + std::to_string(i) + " has shape " +
                       layer_util::join_dims(layer_util::extents_of(inputs[i])) + ", input 0 has " +
                       layer_util::join_dims(layer_util::extents_of(first)));
      }
    }
    if (!coefficients_.empty() && coefficients_.size() != inputs.size()) {
      return corrupt("has " + std::to_string(coefficients_.size()) + " coefficients for " +
                     std::to_string(inputs.size()) + " inputs");
    }
    outputs[0] = first;
    g_.op = op_;
    g_.act = act_;
    kernel_ = ctx.kernels == KernelSet::kFast ? kernels::select_eltwise_kernel(g_, kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    half_candidate_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kFast && inputs.size() == 2;
    i8_candidate_ = ctx.precision == Precision::kInt8 && inputs.size() == 2 && first.dims == 3 &&
                    op_ == fb::EltwiseOp::Sum && unweighted() && kernels::i8_output_activation(act_);
    i8_.reference = ctx.kernels == KernelSet::kReference;
    return Status::Ok();
  }

  // Re-targets an unweighted Sum of two maps to int8 maps (planar; any mix of int8 and
  // fp32 inputs and output), as BinaryOp's Add.
  bool set_int8_maps(const std::vector<float>& in_scales, float out_scale, bool dry_run) override {
    if (!i8_candidate_ || in_scales.size() != 2) return false;
    if (dry_run) return true;
    i8_maps_ = i8_.set(in_scales, out_scale);
    if (i8_maps_) kernel_name = i8_.kernel_name();
    return true;
  }
  bool computes_int8() const override { return i8_candidate_; }
  bool int8_needs_maps() const override { return true; }

  // Re-targets the layer to maps of halves (Layer::set_half): a fold of two inputs,
  // coefficients absent or all 1, through the registry's fp16 kernel, whose results are
  // then the reference's fp32 ones rounded to halves (f16_binary_neonfp16.cpp says why;
  // a longer fold, or a weighted one, would round more than once). Any layout.
  bool set_half(int in_pack, int out_pack, bool dry_run) override {
    if (!half_candidate_ || in_pack != out_pack || !unweighted()) return false;
    kernels::EltwiseGeometry g = g_;
    g.f16 = true;
    const kernels::EltwiseKernel* k = kernels::select_eltwise_kernel(g, kernels::active_isa());
    if (!k || !k->f16) return false;
    if (dry_run) return true;
    kernel_ = k;
    g_ = g;
    std::snprintf(name_, sizeof name_, "%s[h%d>h%d]", kernel_->name, in_pack, out_pack);
    kernel_name = name_;
    return true;
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    Mat& out = outputs[0];
    if (i8_maps_) {
      layer_util::run_i8_add(i8_, inputs[0], inputs[1], out, act_, ctx.num_threads);
      return Status::Ok();
    }
    if (g_.f16) {
      forward_half(inputs, out, ctx.num_threads);
      return Status::Ok();
    }
    const int planes = layer_util::plane_count(out);
    const size_t n = layer_util::plane_size(out), chunk = kernels::kElementwiseChunk;
    const long long pieces = static_cast<long long>((n + chunk - 1) / chunk);
    const int count = static_cast<int>(inputs.size());
    const auto fold = kernel_ ? kernel_->run : kernels::eltwise_reference;
    // Planes cut into pieces, one per iteration; every value is folded over the
    // inputs in their order, so the result does not depend on the thread count.
    // Inputs may differ in channel stride.
#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long it = 0; it < planes * pieces; ++it) {
      const int q = static_cast<int>(it / pieces);
      const size_t first = static_cast<size_t>(it % pieces) * chunk;
      const size_t len = std::min(chunk, n - first);
      float* dst = out.channel(q) + first;
      const float* srcs[kInputsPerPass];
      float coef[kInputsPerPass];
      // Pass p folds inputs [k0, k1) into dst, after the first pass starting from dst
      // itself with coefficient 1 and no activation until the last pass.
      for (int k0 = 0; k0 < count;) {
        int m = 0;
        if (k0 > 0) srcs[m] = dst, coef[m] = 1.f, ++m;
        const int k1 = std::min(count, k0 + kInputsPerPass - m);
        for (int k = k0; k < k1; ++k, ++m) {
          srcs[m] = inputs[k].channel(q) + first;
          coef[m] = coefficients_.empty() ? 1.f : coefficients_[k];
        }
        kernels::EltwiseGeometry g = g_;
        if (k1 < count) g.act = ActivationSpec{};
        fold(g, srcs, coef, m, dst, len);
        k0 = k1;
      }
    }
    return Status::Ok();
  }

 private:
  // Coefficients absent or all 1: a sum with no multiply.
  bool unweighted() const {
    return std::all_of(coefficients_.begin(), coefficients_.end(), [](float c) { return c == 1.f; });
  }

  // Maps of halves (set_half), two inputs: planes (channels, or blocks of 8) of
  // plane_size * elempack halves, cut into kElementwiseChunk pieces, one per iteration.
  void forward_half(const std::vector<Mat>& inputs, Mat& out, int num_threads) const {
    const int planes = layer_util::plane_count(out);
    const size_t n = layer_util::plane_size(out) * static_cast<size_t>(out.elempack);
    const size_t chunk = kernels::kElementwiseChunk;
    const long long pieces = static_cast<long long>((n + chunk - 1) / chunk);
#pragma omp parallel for num_threads(num_threads)
    for (long long it = 0; it < planes * pieces; ++it) {
      const int q = static_cast<int>(it / pieces);
      const size_t first = static_cast<size_t>(it % pieces) * chunk;
      const float* srcs[2];
      for (int k = 0; k < 2; ++k) {
        srcs[k] = reinterpret_cast<const float*>(reinterpret_cast<const uint16_t*>(inputs[k].channel(q)) + first);
      }
      float* dst = reinterpret_cast<float*>(reinterpret_cast<uint16_t*>(out.channel(q)) + first);
      kernel_->run(g_, srcs, nullptr, 2, dst, std::min(chunk, n - first));
    }
  }

  fb::EltwiseOp op_ = fb::EltwiseOp::Sum;
  std::vector<float> coefficients_;
  ActivationSpec act_;
  kernels::EltwiseGeometry g_;  // op and activation, set in prepare()
  const kernels::EltwiseKernel* kernel_ = nullptr;
  bool half_candidate_ = false;  // two inputs, prepared at kFp16 on the fast set: set_half may re-target
  char name_[64] = {};           // kernel_name with the operands' layouts, once re-targeted
  bool i8_candidate_ = false;    // prepared at kInt8, an unweighted Sum of two: set_int8_maps may re-target
  bool i8_maps_ = false;         // re-targeted: some operand is an int8 map
  layer_util::I8AddMaps i8_;     // its operands, once re-targeted
};

}  // namespace

std::unique_ptr<Layer> create_eltwise_layer() { return std::make_unique<Eltwise>(); }

}  // namespace kestrel
