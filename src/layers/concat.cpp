// Concat: joins any number of inputs along one axis. At kInt8, a channel Concat may take
// and give int8 maps (set_int8_maps), any mix: each input's values carried to the
// output's type and scale (int8 to int8 at another scale by a 256-entry table of
// requantize_i8(q / in_scale, out_scale); int8 to fp32 as q / in_scale; fp32 to int8 as
// quantize_i8), so a join of int8 maps at one scale is a copy, or nothing where the
// producers wrote into the output (net_build.cpp's aliases).
#include <array>
#include <cstring>

#include "kernels/i8_reference.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

std::string dims_text(const Shape& s) { return layer_util::join_dims(layer_util::extents_of(s)); }

class Concat final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ConcatParam* p = ctx.layer->params_as_ConcatParam();
    if (!p) return corrupt("missing ConcatParam");
    axis_param_ = p->axis();
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    Status s = layer_util::check_io("Concat", inputs, 1, 1 << 20, outputs);
    if (!s.ok()) return s;
    const Shape& first = inputs[0];
    if (!layer_util::normalize_axis(axis_param_, first.dims, &axis_)) {
      return corrupt("axis " + std::to_string(axis_param_) + " is out of range for a " + std::to_string(first.dims) +
                     "-D input");
    }
    std::vector<int> ext = layer_util::extents_of(first);
    long long joined = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<int> e = layer_util::extents_of(inputs[i]);
      bool same = inputs[i].dims == first.dims;
      for (int a = 0; same && a < first.dims; ++a) same = a == axis_ || e[a] == ext[a];
      if (!same) {
        return corrupt("input " + std::to_string(i) + " has shape " + dims_text(inputs[i]) +
                       ", which does not match input 0 " + dims_text(first) + " outside axis " +
                       std::to_string(axis_));
      }
      joined += e[axis_];
      if (joined > 0x7fffffffLL) return corrupt("concatenated axis is too large");
    }
    ext[axis_] = static_cast<int>(joined);
    channels_ = first.dims == 3 && axis_ == 0;
    outputs[0] = layer_util::shape_from_extents(ext.data(), first.dims);
    i8_candidate_ = ctx.precision == Precision::kInt8 && channels_;
    return Status::Ok();
  }

  bool set_int8_maps(const std::vector<float>& in_scales, float out_scale, bool dry_run) override {
    if (!i8_candidate_ || in_scales.empty()) return false;
    if (dry_run) return true;
    out_scale_ = out_scale;
    i8_maps_ = out_scale > 0.f;
    ins_.assign(in_scales.size(), I8Input{});
    for (size_t i = 0; i < in_scales.size(); ++i) {
      I8Input& in = ins_[i];
      if (!(in_scales[i] > 0.f)) continue;
      i8_maps_ = true;
      in.dequant = 1.f / in_scales[i];
      in.table = out_scale > 0.f && in_scales[i] != out_scale;
      for (int q = -kernels::kI8Max; in.table && q <= kernels::kI8Max; ++q) {
        in.values[static_cast<uint8_t>(q)] = kernels::i8_requantize_plain(static_cast<float>(q) * in.dequant, out_scale);
      }
    }
    return true;
  }
  bool computes_int8() const override { return i8_candidate_; }
  bool int8_needs_maps() const override { return true; }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    Mat& out = outputs[0];
    if (i8_maps_) {
      forward_int8(inputs, out, ctx.num_threads);
      return Status::Ok();
    }
    const AxisView ov = layer_util::axis_view(out);
    size_t offset = 0;  // floats from out.data to where the current input goes
    for (const Mat& in : inputs) {
      const AxisView iv = layer_util::axis_view(in);
      // The output region an input fills: the output's strides over the input's extents.
      AxisView dv = ov;
      dv.extent[axis_] = iv.extent[axis_];
      // A producer that wrote straight into its place (zero-copy concat) left nothing to do.
      if (in.data != out.data + offset) layer_util::copy_strided(in.data, iv, out.data + offset, dv, ctx.num_threads);
      offset += static_cast<size_t>(iv.extent[axis_]) * ov.stride[axis_];
    }
    return Status::Ok();
  }

  bool concatenates_channels() const override { return channels_; }

 private:
  // An input as set_int8_maps gave it.
  struct I8Input {
    float dequant = 0.f;  // 1 / its scale; 0: an fp32 map
    bool table = false;   // int8 into an int8 output at another scale: values[uint8_t(q)]
    std::array<int8_t, 256> values{};
  };

  // Channel by channel, a channel an iteration.
  void forward_int8(const std::vector<Mat>& inputs, Mat& out, int num_threads) const {
    const size_t n = layer_util::plane_size(out);
    // A map's channels are cstep 4-byte units apart, whatever its elements.
    const auto at = [](const Mat& m, int q) { return reinterpret_cast<char*>(m.data) + q * m.cstep * sizeof(float); };
    const bool to_i8 = out_scale_ > 0.f;
    int c0 = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Mat& in = inputs[i];
      const I8Input& t = ins_[i];
      const bool from_i8 = t.dequant > 0.f;
#pragma omp parallel for num_threads(num_threads)
      for (int q = 0; q < in.c; ++q) {
        const char* src = at(in, q);
        char* dst = at(out, c0 + q);
        if (from_i8 == to_i8 && !t.table) {
          // A producer that wrote straight into its place left nothing to do.
          if (src != dst) std::memcpy(dst, src, n * (to_i8 ? 1 : sizeof(float)));
        } else if (t.table) {
          const auto* s = reinterpret_cast<const uint8_t*>(src);
          auto* d = reinterpret_cast<int8_t*>(dst);
          for (size_t k = 0; k < n; ++k) d[k] = t.values[s[k]];
        } else if (from_i8) {
          const auto* s = reinterpret_cast<const int8_t*>(src);
          auto* d = reinterpret_cast<float*>(dst);
          for (size_t k = 0; k < n; ++k) d[k] = static_cast<float>(s[k]) * t.dequant;
        } else {
          kernels::quantize_i8(reinterpret_cast<const float*>(src), reinterpret_cast<int8_t*>(dst), n, out_scale_);
        }
      }
      c0 += in.c;
    }
  }

  bool i8_candidate_ = false;  // prepared at kInt8, along channels: set_int8_maps may re-target
  bool i8_maps_ = false;       // re-targeted: some operand is an int8 map
  float out_scale_ = 0.f;      // > 0: an int8 output map's scale
  std::vector<I8Input> ins_;
  bool channels_ = false;
  int axis_param_ = 0;
  int axis_ = 0;
};

}  // namespace

std::unique_ptr<Layer> create_concat_layer() { return std::make_unique<Concat>(); }

}  // namespace kestrel
