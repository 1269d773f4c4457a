// Caffe layer -> Kestrel nodes: the compute layers (convolution, pooling, inner
// product, activations, Power, Eltwise, Softmax, Dropout), the helpers every
// converter shares and the table of layer types. Normalizations and affine layers
// are in caffe_layers_norm.cpp; shape, routing and detection layers in
// caffe_layers_shape.cpp.
//
// Each converter maps the parameters exactly or refuses: a value Kestrel cannot
// express is a kUnsupported error, never an approximation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "caffe/caffe_layers.h"

namespace kestrel::convert::caffe_import {

// ---- shared helpers ----

Status unsupported(const std::string& param, const std::string& value, const std::string& why) {
  return Status(ErrorCode::kUnsupported,
                "parameter " + param + " = " + value + " is not supported" + (why.empty() ? "" : " (" + why + ")"));
}

Status invalid(const std::string& message) { return Status(ErrorCode::kCorruptModel, message); }

std::string num(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

Status kestrel_axis(int caffe_axis, const char* param, int* axis) {
  if (caffe_axis == 0) return unsupported(param, "0", "the batch axis");
  *axis = caffe_axis > 0 ? caffe_axis - 1 : caffe_axis;
  return Status::Ok();
}

size_t blob_count(const caffe::BlobProto& b) {
  return b.data_size() > 0 ? static_cast<size_t>(b.data_size()) : static_cast<size_t>(b.double_data_size());
}

std::vector<float> blob_values(const caffe::BlobProto& b) {
  if (b.data_size() > 0) return std::vector<float>(b.data().begin(), b.data().end());
  return std::vector<float>(b.double_data().begin(), b.double_data().end());
}

std::vector<int> blob_shape(const caffe::BlobProto& b) {
  if (b.has_shape()) return std::vector<int>(b.shape().dim().begin(), b.shape().dim().end());
  if (b.has_num() || b.has_channels() || b.has_height() || b.has_width()) {
    return {b.num(), b.channels(), b.height(), b.width()};
  }
  return {static_cast<int>(blob_count(b))};
}

std::string dims_text(const std::vector<int>& v) {
  std::string t;
  for (int d : v) t += (t.empty() ? "" : ",") + std::to_string(d);
  return "[" + t + "]";
}

Status to_int(const char* name, uint64_t v, int* out) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int>::max())) return invalid(std::string(name) + " is too large");
  *out = static_cast<int>(v);
  return Status::Ok();
}

std::vector<int> without_leading_ones(const std::vector<int>& v) {
  size_t i = 0;
  while (i < v.size() && v[i] == 1) ++i;
  return std::vector<int>(v.begin() + static_cast<long>(i), v.end());
}

Status expect_blobs(const LayerContext& ctx, size_t count, const char* names) {
  if (ctx.blobs.size() == count) return Status::Ok();
  if (ctx.blobs.empty()) {
    return invalid("has no weights in the caffemodel (expects " + std::to_string(count) + " blobs: " + names + ")");
  }
  return invalid("has " + std::to_string(ctx.blobs.size()) + " blobs in the caffemodel, expected " +
                 std::to_string(count) + " (" + names + ")");
}

Status take_blob(const LayerContext& ctx, size_t index, const char* what, const std::vector<int>& shape,
                 Tensor* out) {
  const caffe::BlobProto& b = *ctx.blobs[index];
  const std::vector<int> declared = blob_shape(b);
  size_t expected = 1;
  for (int d : shape) expected *= static_cast<size_t>(d);
  if (blob_count(b) != expected || without_leading_ones(declared) != without_leading_ones(shape)) {
    return invalid("blob " + std::to_string(index) + " (" + what + ") has shape " + dims_text(declared) + " (" +
                   std::to_string(blob_count(b)) + " values), expected " + dims_text(shape));
  }
  out->shape = shape;
  out->data = blob_values(b);
  return Status::Ok();
}

Status add_activation(LayerContext& ctx, fb::ActivationType type, float alpha, float beta) {
  fb::ActivationParamT p;
  p.activation = std::make_unique<fb::ActivationT>();
  p.activation->type = type;
  p.activation->alpha = alpha;
  p.activation->beta = beta;
  add_node(ctx, "Activation", std::move(p), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

Tensor scalar(float v) { return Tensor{{1}, {v}}; }

void add_scale(LayerContext& ctx, const std::string& input, const std::string& output, Tensor scale,
               const Tensor* bias, const std::string& suffix) {
  fb::ScaleParamT p;
  p.bias_term = bias != nullptr;
  Node& n = add_node(ctx, "Scale", std::move(p), {input}, {output}, suffix);
  n.weights.push_back(std::move(scale));
  if (bias) n.weights.push_back(*bias);
}

namespace {

// One spatial parameter of ConvolutionParameter: the _h/_w pair when either is set,
// else the repeated field (one value for both axes, or h then w), else `fallback`.
Status spatial_pair(const char* name, const google::protobuf::RepeatedField<uint32_t>& values, bool has_h,
                    bool has_w, uint32_t h, uint32_t w, int fallback, int out[2]) {
  if (has_h || has_w) {
    if (!(has_h && has_w)) return invalid(std::string(name) + "_h and " + name + "_w must be set together");
    if (!values.empty()) return invalid(std::string("both ") + name + " and " + name + "_h/_w are set");
    Status s = to_int(name, h, &out[0]);
    return s.ok() ? to_int(name, w, &out[1]) : s;
  }
  if (values.size() > 2) {
    return unsupported(name, std::to_string(values.size()) + " values", "only 2-D convolution");
  }
  if (values.empty()) {
    out[0] = out[1] = fallback;
    return Status::Ok();
  }
  Status s = to_int(name, values.Get(0), &out[0]);
  if (s.ok()) s = to_int(name, values.Get(values.size() - 1), &out[1]);
  return s;
}

enum class ConvKind { kConvolution, kDepthwise, kDeconvolution };

Status fill_conv_params(const caffe::ConvolutionParameter& p, fb::ConvolutionParamT* c) {
  if (p.axis() != 1) return unsupported("axis", std::to_string(p.axis()), "only the channel axis 1");
  if (p.num_output() == 0) return invalid("num_output must be set and > 0");
  if (p.kernel_size_size() == 0 && !p.has_kernel_h() && !p.has_kernel_w()) {
    return invalid("kernel_size (or kernel_h and kernel_w) is required");
  }
  int k[2], s[2], pad[2], d[2];
  Status st = spatial_pair("kernel", p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(), p.kernel_h(),
                           p.kernel_w(), 0, k);
  if (st.ok()) {
    st = spatial_pair("stride", p.stride(), p.has_stride_h(), p.has_stride_w(), p.stride_h(), p.stride_w(), 1, s);
  }
  if (st.ok()) st = spatial_pair("pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), 0, pad);
  if (st.ok()) st = spatial_pair("dilation", p.dilation(), false, false, 0, 0, 1, d);
  if (st.ok()) st = to_int("num_output", p.num_output(), &c->num_output);
  if (st.ok()) st = to_int("group", p.group(), &c->group);
  if (!st.ok()) return st;
  if (k[0] <= 0 || k[1] <= 0 || s[0] <= 0 || s[1] <= 0 || d[0] <= 0 || d[1] <= 0) {
    return invalid("kernel, stride and dilation must be > 0");
  }
  c->kernel_h = k[0], c->kernel_w = k[1];
  c->stride_h = s[0], c->stride_w = s[1];
  c->pad_top = c->pad_bottom = pad[0];
  c->pad_left = c->pad_right = pad[1];
  c->dilation_h = d[0], c->dilation_w = d[1];
  c->bias_term = p.bias_term();
  return Status::Ok();
}

Status convert_conv_like(LayerContext& ctx, ConvKind kind) {
  fb::ConvolutionParamT c;
  Status s = fill_conv_params(ctx.layer.convolution_param(), &c);
  if (!s.ok()) return s;
  if (kind == ConvKind::kDepthwise) {
    // These forks' layers convolve each channel on its own whatever `group` says.
    std::vector<int> in;
    if (!(s = ctx.shape_of(ctx.bottoms[0], &in)).ok()) return s;
    c.group = in[0];
    if (c.num_output % c.group != 0) {
      return invalid("num_output " + std::to_string(c.num_output) + " is not a multiple of the input's " +
                     std::to_string(c.group) + " channels");
    }
  }
  if (c.group <= 0 || c.num_output % c.group != 0) {
    return invalid("num_output " + std::to_string(c.num_output) + " is not divisible by group " +
                   std::to_string(c.group));
  }
  if (!(s = expect_blobs(ctx, c.bias_term ? 2 : 1, c.bias_term ? "kernel, bias" : "kernel")).ok()) return s;

  // The kernel's input-channel extent is not a parameter: take it from the blob
  // (Kestrel's loader then checks it against the input).
  const bool deconv = kind == ConvKind::kDeconvolution;
  const int per_out = deconv ? c.num_output / c.group : c.num_output;
  size_t plane = 0;
  const bool huge = __builtin_mul_overflow(static_cast<size_t>(per_out) * static_cast<size_t>(c.kernel_h),
                                           static_cast<size_t>(c.kernel_w), &plane);
  const size_t count = blob_count(*ctx.blobs[0]);
  if (huge || count == 0 || count % plane != 0 || count / plane > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return invalid("blob 0 (kernel) has " + std::to_string(count) + " values, not a multiple of " +
                   std::to_string(plane) + (deconv ? " (num_output/group * kernel_h * kernel_w)"
                                                   : " (num_output * kernel_h * kernel_w)"));
  }
  const int in = static_cast<int>(count / plane);
  Tensor kernel, bias;
  s = take_blob(ctx, 0, "kernel",
                deconv ? std::vector<int>{in, per_out, c.kernel_h, c.kernel_w}
                       : std::vector<int>{c.num_output, in, c.kernel_h, c.kernel_w},
                &kernel);
  if (s.ok() && c.bias_term) s = take_blob(ctx, 1, "bias", {c.num_output}, &bias);
  if (!s.ok()) return s;
  Node& n = add_node(ctx, deconv ? "Deconvolution" : "Convolution", std::move(c), {ctx.bottoms[0]}, {ctx.tops[0]});
  n.weights.push_back(std::move(kernel));
  if (!bias.data.empty()) n.weights.push_back(std::move(bias));
  return Status::Ok();
}

template <ConvKind K>
Status convert_conv(LayerContext& ctx) {
  return convert_conv_like(ctx, K);
}

// Pooling's kernel/stride/pad: the _h/_w pair when either is set, else the single
// value (its default when unset).
Status pool_pair(const char* name, bool has_single, uint32_t single, bool has_h, bool has_w, uint32_t h, uint32_t w,
                 int out[2]) {
  if (has_h || has_w) {
    if (!(has_h && has_w)) return invalid(std::string(name) + "_h and " + name + "_w must be set together");
    if (has_single) return invalid(std::string("both ") + name + " and " + name + "_h/_w are set");
    Status s = to_int(name, h, &out[0]);
    return s.ok() ? to_int(name, w, &out[1]) : s;
  }
  Status s = to_int(name, single, &out[0]);
  out[1] = out[0];
  return s;
}

Status convert_pooling(LayerContext& ctx) {
  const caffe::PoolingParameter& p = ctx.layer.pooling_param();
  fb::PoolingParamT q;
  switch (p.pool()) {
    case caffe::PoolingParameter::MAX: q.pool = fb::PoolType::Max; break;
    case caffe::PoolingParameter::AVE: q.pool = fb::PoolType::Average; break;
    default: return unsupported("pool", caffe::PoolingParameter::PoolMethod_Name(p.pool()));
  }
  // Caffe divides an average by the window clipped to the padded input.
  q.count_include_pad = true;
  bool ceil = p.round_mode() == caffe::PoolingParameter::CEIL;
  if (p.has_ceil_mode()) ceil = p.ceil_mode();
  q.round_mode = ceil ? fb::RoundMode::Ceil : fb::RoundMode::Floor;
  int k[2], s[2], pad[2];
  Status st = pool_pair("pad", p.has_pad(), p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), pad);
  if (st.ok()) {
    st = pool_pair("stride", p.has_stride(), p.stride(), p.has_stride_h(), p.has_stride_w(), p.stride_h(),
                   p.stride_w(), s);
  }
  if (!st.ok()) return st;
  if (p.global_pooling()) {
    if (p.has_kernel_size() || p.has_kernel_h() || p.has_kernel_w()) {
      return invalid("global_pooling takes no kernel size");
    }
    if (pad[0] != 0 || pad[1] != 0 || s[0] != 1 || s[1] != 1) {
      return invalid("global_pooling needs pad 0 and stride 1");
    }
    q.global = true;
  } else {
    if (!p.has_kernel_size() && !p.has_kernel_h() && !p.has_kernel_w()) {
      return invalid("kernel_size (or kernel_h and kernel_w) is required");
    }
    st = pool_pair("kernel", p.has_kernel_size(), p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(),
                   p.kernel_h(), p.kernel_w(), k);
    if (!st.ok()) return st;
    q.kernel_h = k[0], q.kernel_w = k[1];
    q.stride_h = s[0], q.stride_w = s[1];
    q.pad_top = q.pad_bottom = pad[0];
    q.pad_left = q.pad_right = pad[1];
  }
  add_node(ctx, "Pooling", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_inner_product(LayerContext& ctx) {
  const caffe::InnerProductParameter& p = ctx.layer.inner_product_param();
  if (p.axis() != 1) return unsupported("axis", std::to_string(p.axis()), "only 1: everything after the batch");
  fb::InnerProductParamT q;
  Status s = to_int("num_output", p.num_output(), &q.num_output);
  if (!s.ok()) return s;
  if (q.num_output <= 0) return invalid("num_output must be set and > 0");
  q.bias_term = p.bias_term();
  if (!(s = expect_blobs(ctx, q.bias_term ? 2 : 1, q.bias_term ? "weights, bias" : "weights")).ok()) return s;
  const size_t count = blob_count(*ctx.blobs[0]);
  const size_t n = static_cast<size_t>(q.num_output);
  if (count == 0 || count % n != 0 || count / n > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return invalid("blob 0 (weights) has " + std::to_string(count) + " values, not a multiple of num_output " +
                   std::to_string(n));
  }
  const int k = static_cast<int>(count / n);
  Tensor w, bias;
  // transpose: Caffe stores [inputs, num_output]; Kestrel wants [num_output, inputs].
  s = take_blob(ctx, 0, "weights", p.transpose() ? std::vector<int>{k, q.num_output} : std::vector<int>{q.num_output, k},
                &w);
  if (s.ok() && q.bias_term) s = take_blob(ctx, 1, "bias", {q.num_output}, &bias);
  if (!s.ok()) return s;
  if (p.transpose()) {
    std::vector<float> t(w.data.size());
    for (size_t o = 0; o < n; ++o) {
      for (size_t i = 0; i < static_cast<size_t>(k); ++i) t[o * k + i] = w.data[i * n + o];
    }
    w.data = std::move(t);
    w.shape = {q.num_output, k};
  }
  Node& node = add_node(ctx, "InnerProduct", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  node.weights.push_back(std::move(w));
  if (!bias.data.empty()) node.weights.push_back(std::move(bias));
  return Status::Ok();
}

// ---- activations ----

template <fb::ActivationType T>
Status convert_plain_activation(LayerContext& ctx) {
  return add_activation(ctx, T);
}

Status convert_relu(LayerContext& ctx) {
  const float slope = ctx.layer.relu_param().negative_slope();
  return slope == 0.f ? add_activation(ctx, fb::ActivationType::ReLU)
                      : add_activation(ctx, fb::ActivationType::LeakyReLU, slope);
}

Status convert_relu6(LayerContext& ctx) { return add_activation(ctx, fb::ActivationType::Clip, 0.f, 6.f); }

Status convert_elu(LayerContext& ctx) {
  return add_activation(ctx, fb::ActivationType::ELU, ctx.layer.elu_param().alpha());
}

Status convert_clip(LayerContext& ctx) {
  const caffe::ClipParameter& p = ctx.layer.clip_param();
  if (!p.has_min() || !p.has_max()) return invalid("clip_param needs min and max");
  return add_activation(ctx, fb::ActivationType::Clip, p.min(), p.max());
}

Status convert_swish(LayerContext& ctx) {
  const float beta = ctx.layer.swish_param().beta();
  if (beta != 1.f) return unsupported("beta", num(beta), "Kestrel's SiLU is x * sigmoid(x)");
  return add_activation(ctx, fb::ActivationType::SiLU);
}

Status convert_prelu(LayerContext& ctx) {
  Status s = expect_blobs(ctx, 1, "slope");
  if (!s.ok()) return s;
  const size_t count = blob_count(*ctx.blobs[0]);
  if (ctx.layer.prelu_param().channel_shared() && count != 1) {
    return invalid("channel_shared PReLU has " + std::to_string(count) + " slopes, expected 1");
  }
  Tensor slope;
  if (!(s = take_blob(ctx, 0, "slope", {static_cast<int>(count)}, &slope)).ok()) return s;
  Node& n = add_node(ctx, "PReLU", fb::PReLUParamT{}, {ctx.bottoms[0]}, {ctx.tops[0]});
  n.weights.push_back(std::move(slope));
  return Status::Ok();
}

// y = (shift + scale * x) ^ power: a Scale for the linear part (unless it is the
// identity and a power follows), then a BinaryOp Pow with the scalar exponent.
Status convert_power(LayerContext& ctx) {
  const caffe::PowerParameter& p = ctx.layer.power_param();
  // Caffe then writes the constant pow(shift, power) even for an infinite or NaN x.
  if (p.scale() == 0.f && p.power() != 0.f) return unsupported("scale", "0", "a constant output");
  const bool linear = p.scale() != 1.f || p.shift() != 0.f;
  if (p.power() == 1.f || linear) {
    const Tensor shift = scalar(p.shift());
    const std::string out = p.power() == 1.f ? ctx.tops[0] : ctx.unique_blob(ctx.tops[0] + "#linear");
    add_scale(ctx, ctx.bottoms[0], out, scalar(p.scale()), p.shift() != 0.f ? &shift : nullptr,
              p.power() == 1.f ? "" : "/linear");
    if (p.power() == 1.f) return Status::Ok();
    ctx.bottoms[0] = out;
  }
  fb::BinaryOpParamT q;
  q.op = fb::BinaryOpType::Pow;
  q.with_scalar = true;
  q.scalar = p.power();
  add_node(ctx, "BinaryOp", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_softmax(LayerContext& ctx) {
  fb::SoftmaxParamT q;
  Status s = kestrel_axis(ctx.layer.softmax_param().axis(), "axis", &q.axis);
  if (!s.ok()) return s;
  add_node(ctx, "Softmax", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_eltwise(LayerContext& ctx) {
  const caffe::EltwiseParameter& p = ctx.layer.eltwise_param();
  fb::EltwiseParamT q;
  switch (p.operation()) {
    case caffe::EltwiseParameter::SUM: q.op = fb::EltwiseOp::Sum; break;
    case caffe::EltwiseParameter::PROD: q.op = fb::EltwiseOp::Prod; break;
    default: q.op = fb::EltwiseOp::Max; break;
  }
  if (p.coeff_size() > 0) {
    if (q.op != fb::EltwiseOp::Sum) return invalid("coeff is only valid with operation SUM");
    if (static_cast<size_t>(p.coeff_size()) != ctx.bottoms.size()) {
      return invalid(std::to_string(p.coeff_size()) + " coeff values for " + std::to_string(ctx.bottoms.size()) +
                     " bottoms");
    }
    q.coefficients.assign(p.coeff().begin(), p.coeff().end());
  }
  add_node(ctx, "Eltwise", std::move(q), ctx.bottoms, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_dropout(LayerContext& ctx) {
  const caffe::DropoutParameter& p = ctx.layer.dropout_param();
  if (p.scale_train()) {
    add_node(ctx, "Dropout", fb::DropoutParamT{}, {ctx.bottoms[0]}, {ctx.tops[0]});
  } else {
    // Training kept the unscaled values, so inference scales by the keep ratio.
    add_scale(ctx, ctx.bottoms[0], ctx.tops[0], scalar(1.f - p.dropout_ratio()), nullptr);
  }
  return Status::Ok();
}

using A = fb::ActivationType;

constexpr LayerSpec kLayers[] = {
    {"Convolution", convert_conv<ConvKind::kConvolution>, 1, 1, 1, 1},
    {"DepthwiseConvolution", convert_conv<ConvKind::kDepthwise>, 1, 1, 1, 1},
    {"ConvolutionDepthwise", convert_conv<ConvKind::kDepthwise>, 1, 1, 1, 1},
    {"Deconvolution", convert_conv<ConvKind::kDeconvolution>, 1, 1, 1, 1},
    {"Pooling", convert_pooling, 1, 1, 1, 1},
    {"InnerProduct", convert_inner_product, 1, 1, 1, 1},
    {"ReLU", convert_relu, 1, 1, 1, 1},
    {"ReLU6", convert_relu6, 1, 1, 1, 1},
    {"PReLU", convert_prelu, 1, 1, 1, 1},
    {"ELU", convert_elu, 1, 1, 1, 1},
    {"Sigmoid", convert_plain_activation<A::Sigmoid>, 1, 1, 1, 1},
    {"TanH", convert_plain_activation<A::TanH>, 1, 1, 1, 1},
    {"Clip", convert_clip, 1, 1, 1, 1},
    {"Swish", convert_swish, 1, 1, 1, 1},
    {"Power", convert_power, 1, 1, 1, 1},
    {"BatchNorm", convert_batchnorm, 1, 1, 1, 1},
    {"Scale", convert_scale, 1, 2, 1, 1},
    {"Bias", convert_bias, 1, 2, 1, 1},
    {"Normalize", convert_normalize, 1, 1, 1, 1},
    {"LRN", convert_lrn, 1, 1, 1, 1},
    {"Softmax", convert_softmax, 1, 1, 1, 1},
    {"Eltwise", convert_eltwise, 2, -1, 1, 1},
    {"Dropout", convert_dropout, 1, 1, 1, 1},
    {"Concat", convert_concat, 1, -1, 1, 1},
    {"Slice", convert_slice, 1, 1, 1, -1},
    {"Split", convert_split, 1, 1, 1, -1},
    {"Crop", convert_crop, 2, 2, 1, 1},
    {"Flatten", convert_flatten, 1, 1, 1, 1},
    {"Reshape", convert_reshape, 1, 1, 1, 1},
    {"Permute", convert_permute, 1, 1, 1, 1},
    {"PriorBox", convert_priorbox, 1, 2, 1, 1},
    {"DetectionOutput", convert_detection_output, 3, 3, 1, 1},
    {"ShuffleChannel", convert_shuffle_channel, 1, 1, 1, 1},
    {"Interp", convert_interp, 1, 1, 1, 1},
    {"Upsample", convert_upsample, 1, 2, 1, 1},
};

}  // namespace

const LayerSpec* find_layer_spec(const std::string& type) {
  for (const LayerSpec& s : kLayers) {
    if (type == s.type) return &s;
  }
  return nullptr;
}

}  // namespace kestrel::convert::caffe_import
