// TF.js compute ops -> Kestrel: Conv2D and DepthwiseConv2dNative (plain and with
// Grappler's fused BiasAdd / BatchNorm / activation), MatMul, and the pools. Weights
// go from TF's HWIO ([kh,kw,in,out]; depthwise [kh,kw,C,multiplier]) to Kestrel's
// [out, in/group, kh, kw]; SAME padding becomes explicit pads, the odd one at the
// bottom/right as TensorFlow puts it.
#include <cmath>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {
namespace {

using A = fb::ActivationType;

struct Window {
  int kernel[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int pads[4] = {0, 0, 0, 0};  // top, left, bottom, right
};

// strides / dilations / ksize: [1, h, w, 1] (NHWC).
Status spatial(const OpContext& ctx, const char* name, int out[2]) {
  const std::vector<int64_t> v = ctx.attr_ints(name);
  if (v.empty()) return Status::Ok();
  if (v.size() != 4 || v[0] != 1 || v[3] != 1) {
    return unsupported(std::string(name) + " " + dims_text(v) + ": only [1,h,w,1] is supported");
  }
  for (int a = 0; a < 2; ++a) {
    if (v[1 + a] < 1 || v[1 + a] > (1 << 16)) return invalid(std::string(name) + " " + dims_text(v) + " is invalid");
    out[a] = static_cast<int>(v[1 + a]);
  }
  return Status::Ok();
}

Status read_window(const OpContext& ctx, const std::vector<int64_t>& in, Window* w) {
  if (ctx.attr_string("data_format", "NHWC") != "NHWC") {
    return unsupported("data_format '" + ctx.attr_string("data_format", "") + "': only NHWC is supported");
  }
  Status s = spatial(ctx, "strides", w->stride);
  if (s.ok()) s = spatial(ctx, "dilations", w->dilation);
  if (!s.ok()) return s;
  const std::string padding = ctx.attr_string("padding", "VALID");
  if (padding == "SAME") {
    for (int a = 0; a < 2; ++a) {
      const int64_t size = in[1 + a];
      const int64_t out = (size + w->stride[a] - 1) / w->stride[a];
      const int64_t span = int64_t{w->kernel[a] - 1} * w->dilation[a] + 1;
      const int64_t total = std::max<int64_t>((out - 1) * w->stride[a] + span - size, 0);
      w->pads[a] = static_cast<int>(total / 2);
      w->pads[a + 2] = static_cast<int>(total - total / 2);
    }
  } else if (padding == "EXPLICIT") {
    const std::vector<int64_t> p = ctx.attr_ints("explicit_paddings");
    if (p.size() != 8 || p[0] || p[1] || p[6] || p[7]) return unsupported("explicit_paddings " + dims_text(p) + " pads more than H and W");
    for (int64_t v : p) {
      if (v < 0 || v > (1 << 16)) return invalid("explicit_paddings " + dims_text(p) + " is invalid");
    }
    w->pads[0] = static_cast<int>(p[2]), w->pads[2] = static_cast<int>(p[3]);
    w->pads[1] = static_cast<int>(p[4]), w->pads[3] = static_cast<int>(p[5]);
  } else if (padding != "VALID") {
    return unsupported("padding '" + padding + "'");
  }
  return Status::Ok();
}

template <class P>
void set_window(const Window& w, P* p) {
  p->kernel_h = w.kernel[0], p->kernel_w = w.kernel[1];
  p->stride_h = w.stride[0], p->stride_w = w.stride[1];
  p->pad_top = w.pads[0], p->pad_left = w.pads[1], p->pad_bottom = w.pads[2], p->pad_right = w.pads[3];
}

Tensor const_tensor(const ConstTensor& c) {
  Tensor t;
  t.shape.assign(c.dims.begin(), c.dims.end());
  if (t.shape.empty()) t.shape = {1};
  t.data.assign(c.values.begin(), c.values.end());
  t.half = c.half;
  return t;
}

// What a fused op applies after the product: bias (BiasAdd, or a BatchNorm folded into
// scale and bias), an activation in the store, or a PReLU layer after it.
struct Fused {
  std::vector<float> scale, bias;  // empty: none
  bool bias_half = false;
  std::unique_ptr<fb::ActivationT> act;
  const ConstTensor* prelu = nullptr;
};

// Grappler's fused_ops: [BiasAdd | FusedBatchNorm] then at most one activation, whose
// extra inputs (bias; BatchNorm's scale, offset, mean, variance; PReLU's alpha) follow
// the weights as inputs 2...
Status read_fused(const OpContext& ctx, int64_t channels, Fused* f) {
  const std::vector<std::string> ops = ctx.attr_strings("fused_ops");
  size_t next = 2, i = 0;
  auto per_channel = [&](size_t k, const char* what, const ConstTensor** c) {
    *c = ctx.constant(k);
    if (!*c) return unsupported(std::string(what) + " (input " + std::to_string(k) + ") must be a constant");
    if (static_cast<int64_t>((*c)->count()) != channels) {
      return invalid(std::string(what) + " has " + std::to_string((*c)->count()) + " values for " +
                     std::to_string(channels) + " channels");
    }
    return Status::Ok();
  };
  if (i < ops.size() && ops[i] == "BiasAdd") {
    const ConstTensor* b;
    Status s = per_channel(next++, "the bias", &b);
    if (!s.ok()) return s;
    f->bias.assign(b->values.begin(), b->values.end());
    f->bias_half = b->half;
    ++i;
  } else if (i < ops.size() && ops[i] == "FusedBatchNorm") {
    const ConstTensor* bn[4];
    const char* names[4] = {"BatchNorm scale", "BatchNorm offset", "BatchNorm mean", "BatchNorm variance"};
    for (int k = 0; k < 4; ++k) {
      Status s = per_channel(next++, names[k], &bn[k]);
      if (!s.ok()) return s;
    }
    const double eps = ctx.attr_float("epsilon", 1e-3f);
    for (int64_t c = 0; c < channels; ++c) {
      const size_t k = static_cast<size_t>(c);
      const double a = bn[0]->values[k] / std::sqrt(bn[3]->values[k] + eps);
      f->scale.push_back(static_cast<float>(a));
      f->bias.push_back(static_cast<float>(bn[1]->values[k] - bn[2]->values[k] * a));
    }
    ++i;
  }
  if (i < ops.size()) {
    const std::string& a = ops[i++];
    f->act = std::make_unique<fb::ActivationT>();
    if (a == "Relu") {
      f->act->type = A::ReLU;
    } else if (a == "Relu6") {
      f->act->type = A::Clip, f->act->alpha = 0.f, f->act->beta = 6.f;
    } else if (a == "Elu") {
      f->act->type = A::ELU, f->act->alpha = 1.f;
    } else if (a == "LeakyRelu") {
      f->act->type = A::LeakyReLU, f->act->alpha = ctx.attr_float("leakyrelu_alpha", 0.2f);
    } else if (a == "Sigmoid") {
      f->act->type = A::Sigmoid;
    } else if (a == "Tanh") {
      f->act->type = A::TanH;
    } else if (a == "Prelu") {
      f->act.reset();
      Status s = per_channel(next++, "the PReLU alpha", &f->prelu);
      if (!s.ok()) return s;
    } else {
      return unsupported("fused op '" + a + "'");
    }
  }
  if (i < ops.size()) return unsupported("fused_ops has more than a bias and one activation");
  if (ctx.num_inputs() != next) {
    return invalid("has " + std::to_string(ctx.num_inputs()) + " inputs; its fused_ops need " + std::to_string(next));
  }
  return Status::Ok();
}

// The convolution node (and a PReLU after it), given weights in Kestrel's layout.
Status add_conv(OpContext& ctx, const std::string& x, const Window& w, int num_output, int group, Tensor weights,
                Fused f) {
  if (!f.scale.empty()) {
    const size_t per_out = weights.data.size() / static_cast<size_t>(num_output);
    for (size_t o = 0; o < static_cast<size_t>(num_output); ++o) {
      for (size_t k = 0; k < per_out; ++k) weights.data[o * per_out + k] *= f.scale[o];
    }
  }
  fb::ConvolutionParamT p;
  p.num_output = num_output;
  set_window(w, &p);
  p.dilation_h = w.dilation[0], p.dilation_w = w.dilation[1];
  p.group = group;
  p.bias_term = !f.bias.empty();
  p.activation = std::move(f.act);
  const std::string y = f.prelu ? ctx.new_blob("/conv", Layout{true, 1}) : ctx.out(0);
  Node& n = ctx.add("Convolution", std::move(p), {x}, {y});
  n.weights.push_back(std::move(weights));
  if (!f.bias.empty()) {
    Tensor b;
    b.shape = {num_output};
    b.data = f.bias;
    b.half = f.bias_half;
    n.weights.push_back(std::move(b));
  }
  if (f.prelu) {
    Node& pr = ctx.add("PReLU", fb::PReLUParamT{}, {y}, {ctx.out(0)}, "/prelu");
    Tensor slope = const_tensor(*f.prelu);
    slope.shape = {num_output};
    pr.weights.push_back(std::move(slope));
  }
  ctx.set_output(0, ctx.out(0), Layout{true, 1});
  return Status::Ok();
}

// Conv2D, _FusedConv2D; DepthwiseConv2dNative, FusedDepthwiseConv2dNative.
Status convert_conv(OpContext& ctx, bool depthwise) {
  std::string x0, x;
  Status s = ctx.blob(0, &x0);
  if (s.ok()) s = as_channels_last(ctx, x0, &x);
  std::vector<int64_t> in;
  if (s.ok()) s = ctx.tf_shape(x, &in);
  if (!s.ok()) return s;
  const ConstTensor* filter = ctx.constant(1);
  if (!filter) return unsupported("a filter computed at run time is not supported");
  if (filter->dims.size() != 4) return invalid("filter " + dims_text(filter->dims) + " is not 4-D");
  const int64_t kh = filter->dims[0], kw = filter->dims[1], ci = filter->dims[2], co = filter->dims[3];
  const int64_t cin = in[3];
  if (depthwise ? ci != cin : (ci <= 0 || cin % ci != 0)) {
    return invalid("filter " + dims_text(filter->dims) + " does not fit an input of " + std::to_string(cin) + " channels");
  }
  const int64_t outputs = depthwise ? ci * co : co;
  const int group = static_cast<int>(depthwise ? ci : cin / ci);
  Window w;
  w.kernel[0] = static_cast<int>(kh), w.kernel[1] = static_cast<int>(kw);
  if (!(s = read_window(ctx, in, &w)).ok()) return s;
  Fused f;
  if (!(s = read_fused(ctx, outputs, &f)).ok()) return s;
  // HWIO -> [out][in/group][kh][kw]; depthwise output channel c*multiplier + m.
  Tensor t;
  const int64_t in_per_group = depthwise ? 1 : ci;
  t.shape = {static_cast<int>(outputs), static_cast<int>(in_per_group), static_cast<int>(kh), static_cast<int>(kw)};
  t.data.resize(filter->values.size());
  t.half = filter->half;
  for (int64_t y = 0; y < kh; ++y) {
    for (int64_t xx = 0; xx < kw; ++xx) {
      for (int64_t i = 0; i < ci; ++i) {
        for (int64_t o = 0; o < co; ++o) {
          const double v = filter->values[static_cast<size_t>(((y * kw + xx) * ci + i) * co + o)];
          const int64_t out = depthwise ? i * co + o : o;
          const int64_t inner = depthwise ? 0 : i;
          t.data[static_cast<size_t>(((out * in_per_group + inner) * kh + y) * kw + xx)] = static_cast<float>(v);
        }
      }
    }
  }
  return add_conv(ctx, x, w, static_cast<int>(outputs), group, std::move(t), std::move(f));
}

Status convert_conv2d(OpContext& ctx) { return convert_conv(ctx, false); }
Status convert_depthwise(OpContext& ctx) { return convert_conv(ctx, true); }

// MatMul / _FusedMatMul of a run-time [1,K] by a constant [K,N]: InnerProduct.
Status convert_matmul(OpContext& ctx) {
  std::string a0;
  Status s = ctx.blob(0, &a0);
  if (!s.ok()) return s;
  const ConstTensor* b = ctx.constant(1);
  if (!b || b->dims.size() != 2) return unsupported("only a run-time [1,K] times a constant [K,N] is supported");
  if (ctx.attr_bool("transpose_a", false)) return unsupported("transpose_a");
  const bool tb = ctx.attr_bool("transpose_b", false);
  const int64_t K = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
  std::vector<int64_t> a_dims;
  if (!(s = ctx.tf_shape(a0, &a_dims)).ok()) return s;
  if (a_dims.size() != 2 || a_dims[0] != 1 || a_dims[1] != K) {
    return unsupported("input " + dims_text(a_dims) + " times " + dims_text(b->dims) + ": only [1,K] x [K,N]");
  }
  Fused f;
  if (!(s = read_fused(ctx, N, &f)).ok()) return s;
  if (f.prelu || !f.scale.empty()) return unsupported("fused PReLU or BatchNorm after MatMul");
  fb::InnerProductParamT p;
  p.num_output = static_cast<int>(N);
  p.bias_term = !f.bias.empty();
  p.activation = std::move(f.act);
  Node& n = ctx.add("InnerProduct", std::move(p), {a0}, {ctx.out(0)});
  Tensor w;
  w.shape = {static_cast<int>(N), static_cast<int>(K)};
  w.half = b->half;
  w.data.resize(static_cast<size_t>(N * K));
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t o = 0; o < N; ++o) {
      w.data[static_cast<size_t>(o * K + k)] = static_cast<float>(b->values[static_cast<size_t>(tb ? o * K + k : k * N + o)]);
    }
  }
  n.weights.push_back(std::move(w));
  if (!f.bias.empty()) {
    Tensor bias;
    bias.shape = {static_cast<int>(N)};
    bias.data = f.bias;
    bias.half = f.bias_half;
    n.weights.push_back(std::move(bias));
  }
  ctx.set_output(0, ctx.out(0), Layout{false, 1});
  return Status::Ok();
}

// MaxPool, AvgPool: TF's average leaves padded cells out of the count.
Status convert_pool(OpContext& ctx, fb::PoolType type) {
  std::string x0, x;
  Status s = ctx.blob(0, &x0);
  if (s.ok()) s = as_channels_last(ctx, x0, &x);
  std::vector<int64_t> in;
  if (s.ok()) s = ctx.tf_shape(x, &in);
  Window w;
  if (s.ok()) s = spatial(ctx, "ksize", w.kernel);
  if (s.ok()) s = read_window(ctx, in, &w);
  if (!s.ok()) return s;
  fb::PoolingParamT p;
  p.pool = type;
  set_window(w, &p);
  p.count_include_pad = false;
  ctx.add("Pooling", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), Layout{true, 1});
  return Status::Ok();
}

Status convert_maxpool(OpContext& ctx) { return convert_pool(ctx, fb::PoolType::Max); }
Status convert_avgpool(OpContext& ctx) { return convert_pool(ctx, fb::PoolType::Average); }

}  // namespace

const std::vector<OpSpec>& conv_ops() {
  static const std::vector<OpSpec> ops = {
      {"Conv2D", convert_conv2d, 2, 2},
      {"_FusedConv2D", convert_conv2d, 2, 7},
      {"DepthwiseConv2dNative", convert_depthwise, 2, 2},
      {"FusedDepthwiseConv2dNative", convert_depthwise, 2, 7},
      {"MatMul", convert_matmul, 2, 2},
      {"_FusedMatMul", convert_matmul, 2, 4},
      {"MaxPool", convert_maxpool, 1, 1},
      {"AvgPool", convert_avgpool, 1, 1},
  };
  return ops;
}

}  // namespace kestrel::convert::tfjs_import
