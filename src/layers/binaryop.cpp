// BinaryOp: y = a op b with numpy broadcasting (shapes aligned at the innermost axis),
// b being the second input, a constant weight or a scalar; `reverse` computes b op a.
// Runs in place when the output has the first input's shape. forward() reduces the
// broadcast to rows in one of three forms (array op array, array op scalar, scalar
// op array) and runs a row kernel of the binary registry on each, chosen at prepare();
// kernels::binary_reference is the row function of the reference kernel set. At fp16,
// two maps of the output's shape may be re-targeted to halves (set_half); at int8, an
// Add of two 3-D maps of the output's shape to int8 maps (set_int8_maps: the residual
// add of kernels/i8_reference.h, so a block's maps stay int8 between its convolutions).
#include <cstdint>
#include <cstdio>
#include <utility>

#include "kernels/elementwise_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "layers/activation.h"
#include "layers/i8_add_maps.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

// An operand seen through the output's four axes (leading axes of extent 1 added):
// stride 0 along the axes it is broadcast over.
struct Operand {
  const float* data = nullptr;
  size_t stride[4] = {0, 0, 0, 0};
};

Operand broadcast_operand(const float* data, const AxisView& v) {
  Operand o;
  o.data = data;
  const int lead = 4 - v.ndim;
  for (int k = 0; k < v.ndim; ++k) o.stride[lead + k] = v.extent[k] == 1 ? 0 : v.stride[k];
  return o;
}

// Row-major strides of a dense tensor with extents `e`.
AxisView dense_view(const std::vector<int>& e) {
  AxisView v;
  v.ndim = static_cast<int>(e.size());
  size_t s = 1;
  for (int k = v.ndim - 1; k >= 0; --k) {
    v.extent[k] = e[k];
    v.stride[k] = s;
    s *= static_cast<size_t>(e[k]);
  }
  return v;
}

class BinaryOp final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::BinaryOpParam* p = ctx.layer->params_as_BinaryOpParam();
    if (!p) return corrupt("missing BinaryOpParam");
    op_ = p->op();
    with_scalar_ = p->with_scalar();
    scalar_ = p->scalar();
    reverse_ = p->reverse();
    act_ = activation_spec(p->activation());
    const int op = static_cast<int>(op_);
    if (op < 0 || op > static_cast<int>(fb::BinaryOpType::MAX)) return corrupt("unknown op " + std::to_string(op));
    Status s = check_activation(act_);
    if (!s.ok()) return s;
    if (ctx.weights.size() > 1) {
      return corrupt("expects at most 1 weight (operand b), got " + std::to_string(ctx.weights.size()));
    }
    if (ctx.weights.empty()) return Status::Ok();
    const WeightView& w = ctx.weights[0];
    // A weight without a shape is a scalar.
    weight_extents_ = w.shape.empty() ? std::vector<int>{1} : w.shape;
    long long count = 0;
    if (weight_extents_.size() > 4 ||
        !layer_util::product_fits_int(weight_extents_.data(), static_cast<int>(weight_extents_.size()), &count) ||
        count == 0) {
      return corrupt("operand weight shape " + layer_util::join_dims(w.shape) + " is not 1 to 4 positive extents");
    }
    if (w.count != size_t(count) || !w.data) {
      return corrupt("operand weight has " + std::to_string(w.count) + " values, its shape " +
                     layer_util::join_dims(w.shape) + " needs " + std::to_string(count));
    }
    weight_ = w.data;
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("BinaryOp", inputs, 1, 2, outputs);
    if (!s.ok()) return s;
    // Exactly one source for b, so that a converter bug cannot silently pick the wrong one.
    const int sources = int(inputs.size() == 2) + int(weight_ != nullptr) + int(with_scalar_);
    if (sources != 1) {
      return corrupt("needs exactly one second operand (a second input, a weight or with_scalar), got " +
                     std::to_string(sources));
    }
    const std::vector<int> a = layer_util::extents_of(inputs[0]);
    const std::vector<int> b = inputs.size() == 2 ? layer_util::extents_of(inputs[1])
                                                  : weight_ ? weight_extents_ : std::vector<int>{1};
    const int ndim = static_cast<int>(std::max(a.size(), b.size()));
    int out[4];
    for (int k = 0; k < ndim; ++k) {
      // Aligned at the innermost axis; a missing leading axis counts as 1.
      const int ka = k - (ndim - static_cast<int>(a.size())), kb = k - (ndim - static_cast<int>(b.size()));
      const int ea = ka < 0 ? 1 : a[ka], eb = kb < 0 ? 1 : b[kb];
      if (ea != eb && ea != 1 && eb != 1) {
        return corrupt("cannot broadcast " + layer_util::join_dims(a) + " with " + layer_util::join_dims(b));
      }
      out[k] = ea == 1 ? eb : ea;
    }
    outputs[0] = layer_util::shape_from_extents(out, ndim);
    same_shape_ = outputs[0] == inputs[0];
    two_same_ = inputs.size() == 2 && same_shape_ && inputs[1] == inputs[0];
    // Chosen once, at Net load; a kernel that claims an op runs all three row forms.
    kernels::BinaryGeometry g;
    g.op = op_;
    g.act = act_;
    kernel_ = ctx.kernels == KernelSet::kFast ? kernels::select_binary_kernel(g, kernels::active_isa()) : nullptr;
    kernel_name = kernel_ ? kernel_->name : nullptr;
    half_candidate_ = ctx.precision == Precision::kFp16 && ctx.kernels == KernelSet::kFast;
    i8_candidate_ = ctx.precision == Precision::kInt8 && two_same_ && outputs[0].dims == 3 &&
                    op_ == fb::BinaryOpType::Add && kernels::i8_output_activation(act_);
    i8_.reference = ctx.kernels == KernelSet::kReference;
    return Status::Ok();
  }

  // Re-targets an Add of two maps of the output's shape to int8 maps (planar; any mix of
  // int8 and fp32 inputs and output). Its values are i8_add_reference's: an fp32 map is
  // read as it is, so only int8 maps change what it computes.
  bool set_int8_maps(const std::vector<float>& in_scales, float out_scale, bool dry_run) override {
    if (!i8_candidate_ || in_scales.size() != 2) return false;
    if (dry_run) return true;
    i8_maps_ = i8_.set(in_scales, out_scale);
    if (i8_maps_ && !i8_.reference) kernel_name = i8_.kernel_name();
    return true;
  }
  bool computes_int8() const override { return i8_candidate_; }
  bool int8_needs_maps() const override { return true; }

  // Re-targets the layer to maps of halves (Layer::set_half): two inputs of the output's
  // shape (no broadcast), in the output's layout, through the registry's fp16 kernel,
  // which claims only the ops and activations whose fp16 results are the reference's
  // fp32 ones rounded to halves (f16_binary_neonfp16.cpp says why), as the reference set
  // computes at kFp16. Any layout: each value pairs with the values at its position.
  bool set_half(int in_pack, int out_pack, bool dry_run) override {
    if (!half_candidate_ || !two_same_ || in_pack != out_pack) return false;
    kernels::BinaryGeometry g;
    g.op = op_;
    g.act = act_;
    g.f16 = true;
    const kernels::BinaryKernel* k = kernels::select_binary_kernel(g, kernels::active_isa());
    if (!k || !k->f16) return false;
    if (dry_run) return true;
    kernel_ = k;
    std::snprintf(name_, sizeof name_, "%s[h%d>h%d]", kernel_->name, in_pack, out_pack);
    kernel_name = name_;
    return true;
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    if (kernel_ && kernel_->f16) {
      run_half(inputs[reverse_ ? 1 : 0], inputs[reverse_ ? 0 : 1], outputs[0], ctx.num_threads);
      return Status::Ok();
    }
    if (i8_maps_) {
      layer_util::run_i8_add(i8_, inputs[0], inputs[1], outputs[0], act_, ctx.num_threads);
      return Status::Ok();
    }
    Operand a = broadcast_operand(inputs[0].data, layer_util::axis_view(inputs[0]));
    Operand b;
    if (inputs.size() == 2) {
      b = broadcast_operand(inputs[1].data, layer_util::axis_view(inputs[1]));
    } else if (weight_) {
      b = broadcast_operand(weight_, dense_view(weight_extents_));
    } else {
      b.data = &scalar_;
    }
    if (reverse_) std::swap(a, b);
    run(a, b, outputs[0], ctx.num_threads);
    return Status::Ok();
  }

  // With the output shaped as input 0, each output value reads input 0 only at its
  // own position (and b, which is not the output), so writing over input 0 is safe.
  // A broadcast output is larger than input 0 and cannot share its memory.
  bool supports_inplace() const override { return same_shape_; }

  // Two maps of the output's shape, no broadcast: a blocked map's rows (axis_view) are
  // then the same values in the same order in all three.
  bool elementwise_any_layout() const override { return two_same_; }

 private:
  // The output's axes of extent > 1 with the three operands' strides, adjacent axes
  // merged where every operand is dense across them; then rows of the innermost
  // axis (cut into kElementwiseChunk pieces), one piece per iteration, each value
  // written once.
  void run(const Operand& a, const Operand& b, Mat& out, int num_threads) const {
    const AxisView ov = layer_util::axis_view(out);
    const int lead = 4 - ov.ndim;
    int n = 0;
    long long e[5];
    size_t so[5], sa[5], sb[5];
    for (int k = 0; k < ov.ndim; ++k) {
      if (ov.extent[k] == 1) continue;
      const size_t oa = a.stride[lead + k], ob = b.stride[lead + k];
      if (n > 0 && so[n - 1] == ov.stride[k] * ov.extent[k] && sa[n - 1] == oa * ov.extent[k] &&
          sb[n - 1] == ob * ov.extent[k]) {
        e[n - 1] *= ov.extent[k];
        so[n - 1] = ov.stride[k], sa[n - 1] = oa, sb[n - 1] = ob;
        continue;
      }
      e[n] = ov.extent[k], so[n] = ov.stride[k], sa[n] = oa, sb[n] = ob;
      ++n;
    }
    // A row needs a unit-stride output and operands that are arrays or scalars;
    // otherwise (a column of single values, as [C,1,1] planes) rows are one value.
    if (n == 0 || so[n - 1] != 1 || sa[n - 1] > 1 || sb[n - 1] > 1) {
      e[n] = 1, so[n] = 1, sa[n] = 1, sb[n] = 1;
      ++n;
    }
    kernels::BinaryGeometry g;
    g.op = op_;
    g.act = act_;
    g.form = sa[n - 1] == 0 ? kernels::BinaryForm::kScalarArray
             : sb[n - 1] == 0 ? kernels::BinaryForm::kArrayScalar
                              : kernels::BinaryForm::kArrayArray;
    const auto row_fn = kernel_ ? kernel_->run : kernels::binary_reference;
    const size_t len = static_cast<size_t>(e[n - 1]);
    const size_t chunk = kernels::kElementwiseChunk;
    const long long pieces = static_cast<long long>((len + chunk - 1) / chunk);
    long long rows = 1;
    for (int k = 0; k + 1 < n; ++k) rows *= e[k];
#pragma omp parallel for num_threads(num_threads)
    for (long long it = 0; it < rows * pieces; ++it) {
      long long r = it / pieces;
      const size_t first = static_cast<size_t>(it % pieces) * chunk;
      size_t off_o = first, off_a = first * sa[n - 1], off_b = first * sb[n - 1];
      for (int k = n - 2; k >= 0; --k) {
        const size_t i = static_cast<size_t>(r % e[k]);
        r /= e[k];
        off_o += i * so[k], off_a += i * sa[k], off_b += i * sb[k];
      }
      row_fn(g, a.data + off_a, b.data + off_b, out.data + off_o, std::min(chunk, len - first));
    }
  }

  // Maps of halves (set_half): planes (channels, or blocks of 8) of plane_size * elempack
  // halves each, the three maps' planes cstep 4-byte units apart; planes cut into
  // kElementwiseChunk pieces, one per iteration. Channel padding is not computed.
  void run_half(const Mat& a, const Mat& b, Mat& out, int num_threads) const {
    const int planes = layer_util::plane_count(out);
    const size_t n = layer_util::plane_size(out) * static_cast<size_t>(out.elempack);
    const size_t chunk = kernels::kElementwiseChunk;
    const long long pieces = static_cast<long long>((n + chunk - 1) / chunk);
    kernels::BinaryGeometry g;
    g.op = op_;
    g.act = act_;
    g.f16 = true;
#pragma omp parallel for num_threads(num_threads)
    for (long long it = 0; it < planes * pieces; ++it) {
      const int q = static_cast<int>(it / pieces);
      const size_t first = static_cast<size_t>(it % pieces) * chunk;
      auto at = [&](const Mat& m) { return reinterpret_cast<const uint16_t*>(m.channel(q)) + first; };
      kernel_->run(g, reinterpret_cast<const float*>(at(a)), reinterpret_cast<const float*>(at(b)),
                   reinterpret_cast<float*>(reinterpret_cast<uint16_t*>(out.channel(q)) + first),
                   std::min(chunk, n - first));
    }
  }

  fb::BinaryOpType op_ = fb::BinaryOpType::Add;
  bool with_scalar_ = false;
  float scalar_ = 0.f;
  bool reverse_ = false;
  ActivationSpec act_;
  const float* weight_ = nullptr;
  std::vector<int> weight_extents_;  // outermost first
  bool same_shape_ = false;          // the prepared output has input 0's shape
  bool two_same_ = false;            // two inputs, both of the output's shape
  const kernels::BinaryKernel* kernel_ = nullptr;  // an f16 one once set_half re-targeted the layer
  bool half_candidate_ = false;  // prepared at kFp16 on the fast set: set_half may re-target
  char name_[64] = {};           // kernel_name with the operands' layouts, once re-targeted
  bool i8_candidate_ = false;    // prepared at kInt8, an Add set_int8_maps may re-target
  bool i8_maps_ = false;         // re-targeted: some operand is an int8 map
  layer_util::I8AddMaps i8_;     // its operands, once re-targeted
};

}  // namespace

std::unique_ptr<Layer> create_binaryop_layer() { return std::make_unique<BinaryOp>(); }

}  // namespace kestrel
