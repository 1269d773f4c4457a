// ONNX compute ops -> Kestrel nodes: convolution, pooling, batch norm, activations,
// elementwise arithmetic, Gemm/MatMul and softmax. Each converter maps the attributes
// exactly or refuses with kUnsupported, never an approximation.
#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {
namespace {

using A = fb::ActivationType;

// The 2-D spatial attributes shared by Conv, ConvTranspose and the pools.
struct Spatial {
  int kernel[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int pads[4] = {0, 0, 0, 0};  // top, left, bottom, right (ONNX order)
  fb::PadMode mode = fb::PadMode::Explicit;
};

Status read_spatial(const onnx::NodeProto& n, const std::vector<int64_t>& kernel, Spatial* sp) {
  if (kernel.size() != 2) return unsupported("only 2-D kernels are supported, got " + dims_text(kernel));
  const std::vector<int64_t> strides = attr_ints(n, "strides"), dil = attr_ints(n, "dilations"),
                             pads = attr_ints(n, "pads");
  if ((!strides.empty() && strides.size() != 2) || (!dil.empty() && dil.size() != 2) ||
      (!pads.empty() && pads.size() != 4)) {
    return invalid("strides, dilations and pads must match the 2 spatial axes");
  }
  for (int a = 0; a < 2; ++a) {
    sp->kernel[a] = clamp_int(kernel[a]);
    sp->stride[a] = strides.empty() ? 1 : clamp_int(strides[a]);
    sp->dilation[a] = dil.empty() ? 1 : clamp_int(dil[a]);
    if (sp->kernel[a] <= 0 || sp->stride[a] <= 0 || sp->dilation[a] <= 0) {
      return invalid("kernel, strides and dilations must be > 0");
    }
  }
  for (int i = 0; i < 4 && !pads.empty(); ++i) {
    if (pads[i] < 0) return unsupported("negative pads");
    sp->pads[i] = clamp_int(pads[i]);
  }
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER") {
    sp->mode = fb::PadMode::SameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    sp->mode = fb::PadMode::SameLower;
  } else if (auto_pad == "VALID") {
    std::fill(sp->pads, sp->pads + 4, 0);
  } else if (auto_pad != "NOTSET") {
    return invalid("auto_pad '" + auto_pad + "' is invalid");
  }
  return Status::Ok();
}

template <class P>
void set_spatial(const Spatial& sp, P* p) {
  p->kernel_h = sp.kernel[0], p->kernel_w = sp.kernel[1];
  p->stride_h = sp.stride[0], p->stride_w = sp.stride[1];
  p->pad_top = sp.pads[0], p->pad_left = sp.pads[1], p->pad_bottom = sp.pads[2], p->pad_right = sp.pads[3];
  p->pad_mode = sp.mode;
}

// Conv and ConvTranspose: weights and bias from constants.
template <bool kTransposed>
Status convert_conv(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  const ConstTensor* w = ctx.constant(1);
  if (!w) return unsupported("the weight (input 1) must be a constant");
  if (w->dims.size() != 4) return unsupported("only 2-D convolution (4-D weights), got " + dims_text(w->dims));
  std::vector<int64_t> kernel = attr_ints(ctx.node, "kernel_shape");
  if (kernel.empty()) kernel = {w->dims[2], w->dims[3]};
  if (kernel != std::vector<int64_t>{w->dims[2], w->dims[3]}) return invalid("kernel_shape does not match the weight");
  Spatial sp;
  if (!(s = read_spatial(ctx.node, kernel, &sp)).ok()) return s;
  fb::ConvolutionParamT c;
  c.group = clamp_int(attr_int(ctx.node, "group", 1));
  if (c.group <= 0) return invalid("group must be > 0");
  c.num_output = clamp_int(kTransposed ? w->dims[1] * c.group : w->dims[0]);
  set_spatial(sp, &c);
  c.dilation_h = sp.dilation[0], c.dilation_w = sp.dilation[1];
  if (kTransposed) {
    const std::vector<int64_t> out_pad = attr_ints(ctx.node, "output_padding");
    const std::vector<int64_t> out_shape = attr_ints(ctx.node, "output_shape");
    if (!out_pad.empty()) {
      if (out_pad.size() != 2) return invalid("output_padding must have 2 values");
      c.output_pad_h = clamp_int(out_pad[0]), c.output_pad_w = clamp_int(out_pad[1]);
    }
    // auto_pad and output_shape fix the total padding; Kestrel takes it explicitly.
    if (sp.mode != fb::PadMode::Explicit || !out_shape.empty()) {
      std::vector<int64_t> in;
      if (!(s = ctx.shape(x, &in)).ok()) return s;
      if (in.size() != 4) return invalid("input must be 4-D");
      int* begin[2] = {&c.pad_top, &c.pad_left};
      int* end[2] = {&c.pad_bottom, &c.pad_right};
      const int op[2] = {c.output_pad_h, c.output_pad_w};
      for (int a = 0; a < 2; ++a) {
        const int64_t target = !out_shape.empty() ? out_shape[out_shape.size() - 2 + static_cast<size_t>(a)]
                                                  : in[2 + static_cast<size_t>(a)] * sp.stride[a];
        const int64_t total = static_cast<int64_t>(sp.stride[a]) * (in[2 + static_cast<size_t>(a)] - 1) + op[a] +
                              (static_cast<int64_t>(sp.kernel[a]) - 1) * sp.dilation[a] + 1 - target;
        if (total < 0) return unsupported("output_shape larger than the full transposed convolution");
        const int64_t small = total / 2, large = total - total / 2;
        const bool upper = sp.mode != fb::PadMode::SameLower;
        *begin[a] = clamp_int(upper ? small : large), *end[a] = clamp_int(upper ? large : small);
      }
      c.pad_mode = fb::PadMode::Explicit;
    }
  }
  const ConstTensor* b = ctx.in(2).empty() ? nullptr : ctx.constant(2);
  if (!ctx.in(2).empty() && !b) return unsupported("the bias (input 2) must be a constant");
  c.bias_term = b != nullptr;
  if (b && static_cast<int64_t>(b->count()) != c.num_output) {
    return invalid("bias has " + std::to_string(b->count()) + " values for " + std::to_string(c.num_output) +
                   " outputs");
  }
  Node& n = ctx.add(kTransposed ? "Deconvolution" : "Convolution", std::move(c), {x}, {ctx.out(0)});
  n.weights.push_back(w->to_weight());
  if (b) n.weights.push_back(Tensor{{static_cast<int>(b->count())}, {b->values.begin(), b->values.end()}});
  return Status::Ok();
}

template <fb::PoolType kPool, bool kGlobal>
Status convert_pool(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  fb::PoolingParamT p;
  p.pool = kPool;
  p.global = kGlobal;
  if (!kGlobal) {
    if (ctx.node.output_size() > 1 && !ctx.out(1).empty()) return unsupported("MaxPool indices output");
    if (attr_int(ctx.node, "storage_order", 0) != 0) return unsupported("storage_order 1");
    Spatial sp;
    if (!(s = read_spatial(ctx.node, attr_ints(ctx.node, "kernel_shape"), &sp)).ok()) return s;
    if (sp.dilation[0] != 1 || sp.dilation[1] != 1) return unsupported("pooling with dilations");
    set_spatial(sp, &p);
    p.round_mode = attr_int(ctx.node, "ceil_mode", 0) ? fb::RoundMode::Ceil : fb::RoundMode::Floor;
    p.count_include_pad = attr_int(ctx.node, "count_include_pad", 0) != 0;
  }
  ctx.add("Pooling", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_batchnorm(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  if (ctx.node.output_size() > 1) return unsupported("training mode outputs (running mean/var)");
  if (attr_int(ctx.node, "training_mode", 0) != 0) return unsupported("training_mode 1");
  fb::BatchNormParamT p;
  p.eps = attr_float(ctx.node, "epsilon", 1e-5f);
  // ONNX order: scale, B, mean, var; Kestrel's: mean, var, gamma, beta.
  const size_t order[4] = {3, 4, 1, 2};
  std::vector<Tensor> weights;
  for (size_t i : order) {
    const ConstTensor* c = ctx.constant(i);
    if (!c) return unsupported("input " + std::to_string(i) + " must be a constant");
    weights.push_back(Tensor{{static_cast<int>(c->count())}, {c->values.begin(), c->values.end()}});
  }
  Node& n = ctx.add("BatchNorm", std::move(p), {x}, {ctx.out(0)});
  n.weights = std::move(weights);
  return Status::Ok();
}

template <A kType>
Status convert_plain(OpContext& ctx) {
  return add_activation(ctx, kType);
}

Status convert_leaky_relu(OpContext& ctx) { return add_activation(ctx, A::LeakyReLU, attr_float(ctx.node, "alpha", 0.01f)); }
Status convert_elu(OpContext& ctx) { return add_activation(ctx, A::ELU, attr_float(ctx.node, "alpha", 1.f)); }

Status convert_hard_sigmoid(OpContext& ctx) {
  return add_activation(ctx, A::HardSigmoid, attr_float(ctx.node, "alpha", 0.2f), attr_float(ctx.node, "beta", 0.5f));
}

Status convert_gelu(OpContext& ctx) {
  if (attr_string(ctx.node, "approximate", "none") != "none") return unsupported("approximate = tanh");
  return add_activation(ctx, A::GELU);
}

Status convert_clip(OpContext& ctx) {
  float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
  if (ctx.opset < 11) {
    lo = attr_float(ctx.node, "min", lo), hi = attr_float(ctx.node, "max", hi);
  } else {
    float* bound[2] = {&lo, &hi};
    for (size_t i = 1; i < 3; ++i) {
      if (ctx.in(i).empty()) continue;
      const ConstTensor* c = ctx.constant(i);
      if (!c || c->count() != 1) return unsupported("min and max must be scalar constants");
      *bound[i - 1] = static_cast<float>(c->values[0]);
    }
  }
  if (lo == 0.f && hi == std::numeric_limits<float>::max()) return add_activation(ctx, A::ReLU);
  return add_activation(ctx, A::Clip, lo, hi);
}

Status convert_prelu(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  const ConstTensor* slope = ctx.constant(1);
  if (!slope) return unsupported("the slope must be a constant");
  std::vector<int64_t> in;
  if (!(s = ctx.shape(x, &in)).ok()) return s;
  // One shared value, or per channel: aligned at the innermost axis, the slope is 1
  // everywhere but the channel axis (so [C] is per channel only on a [1,C] input).
  const size_t n = slope->count();
  if (n != 1) {
    std::vector<int64_t> d(in.size() - std::min(in.size(), slope->dims.size()), 1);
    d.insert(d.end(), slope->dims.begin(), slope->dims.end());
    bool per_channel = d.size() == in.size() && in.size() > 1 && d[1] == in[1];
    for (size_t i = 0; i < d.size(); ++i) per_channel = per_channel && (i == 1 || d[i] == 1);
    if (!per_channel) {
      return unsupported("slope shape " + dims_text(slope->dims) + " is neither per channel nor a scalar for input " +
                         dims_text(in));
    }
  }
  Node& node = ctx.add("PReLU", fb::PReLUParamT{}, {x}, {ctx.out(0)});
  node.weights.push_back(Tensor{{static_cast<int>(n)}, {slope->values.begin(), slope->values.end()}});
  return Status::Ok();
}

Status convert_binary(OpContext& ctx) {
  const std::string& type = ctx.node.op_type();
  fb::BinaryOpParamT p;
  p.op = type == "Add" ? fb::BinaryOpType::Add : type == "Sub" ? fb::BinaryOpType::Sub
       : type == "Mul" ? fb::BinaryOpType::Mul : fb::BinaryOpType::Div;
  const ConstTensor* c0 = ctx.constant(0);
  const ConstTensor* c1 = ctx.constant(1);
  if (!c0 && !c1) {
    // Two run-time blobs: both carry the batch, so Kestrel's innermost-aligned
    // broadcasting matches when their ranks match.
    std::vector<int64_t> a, b;
    Status s = ctx.shape(ctx.in(0), &a);
    if (s.ok()) s = ctx.shape(ctx.in(1), &b);
    if (!s.ok()) return s;
    if (a.size() != b.size()) return unsupported("operands of different rank " + dims_text(a) + ", " + dims_text(b));
    ctx.add("BinaryOp", std::move(p), {ctx.in(0), ctx.in(1)}, {ctx.out(0)});
    return Status::Ok();
  }
  const ConstTensor* c = c1 ? c1 : c0;
  const std::string x = c1 ? ctx.in(0) : ctx.in(1);
  p.reverse = c0 != nullptr;
  std::vector<int64_t> xs;
  Status s = ctx.shape(x, &xs);
  if (!s.ok()) return s;
  if (c->dims.size() > xs.size()) return unsupported("constant operand of higher rank than the input");
  if (c->dims.size() == xs.size() && c->dims[0] != 1) return unsupported("constant operand varies along the batch");
  if (c->count() == 1) {
    p.with_scalar = true;
    p.scalar = static_cast<float>(c->values[0]);
    ctx.add("BinaryOp", std::move(p), {x}, {ctx.out(0)});
    return Status::Ok();
  }
  // Leading 1s broadcast the same with or without them; dropping them also drops
  // the batch entry of a full-rank constant.
  Tensor w = c->to_weight();
  while (w.shape.size() > 1 && w.shape[0] == 1) w.shape.erase(w.shape.begin());
  Node& n = ctx.add("BinaryOp", std::move(p), {x}, {ctx.out(0)});
  n.weights.push_back(std::move(w));
  return Status::Ok();
}

// Gemm: with a constant B on a [1,K] input, a plain InnerProduct (alpha and beta
// folded into the weights); anything else is not expressible on a batch-1 blob.
Status convert_gemm(OpContext& ctx) {
  std::string a;
  Status s = ctx.blob(0, &a);
  if (!s.ok()) return s;
  const ConstTensor* b = ctx.constant(1);
  if (!b) return unsupported("B (input 1) must be a constant");
  if (attr_int(ctx.node, "transA", 0) != 0) return unsupported("transA with a batch-1 input");
  if (b->dims.size() != 2) return invalid("B must be 2-D");
  const bool trans_b = attr_int(ctx.node, "transB", 0) != 0;
  const float alpha = attr_float(ctx.node, "alpha", 1.f), beta = attr_float(ctx.node, "beta", 1.f);
  const int64_t k = trans_b ? b->dims[1] : b->dims[0], n = trans_b ? b->dims[0] : b->dims[1];
  std::vector<int64_t> as;
  if (!(s = ctx.shape(a, &as)).ok()) return s;
  if (as.size() != 2 || as[1] != k) return invalid("A " + dims_text(as) + " does not match B " + dims_text(b->dims));
  Tensor w{{clamp_int(n), clamp_int(k)}, std::vector<float>(static_cast<size_t>(n * k))};
  for (int64_t o = 0; o < n; ++o) {
    for (int64_t i = 0; i < k; ++i) {
      w.data[static_cast<size_t>(o * k + i)] =
          alpha * static_cast<float>(b->values[static_cast<size_t>(trans_b ? o * k + i : i * n + o)]);
    }
  }
  fb::InnerProductParamT p;
  p.num_output = clamp_int(n);
  const ConstTensor* c = ctx.in(2).empty() ? nullptr : ctx.constant(2);
  if (!ctx.in(2).empty() && !c) return unsupported("C (input 2) must be a constant");
  Tensor bias{{clamp_int(n)}, {}};
  if (c) {
    // C broadcasts to [1,N]: N values or one.
    if (c->count() != 1 && static_cast<int64_t>(c->count()) != n) return unsupported("C of shape " + dims_text(c->dims));
    for (int64_t o = 0; o < n; ++o) bias.data.push_back(beta * static_cast<float>(c->values[c->count() == 1 ? 0 : static_cast<size_t>(o)]));
    p.bias_term = true;
  }
  Node& node = ctx.add("InnerProduct", std::move(p), {a}, {ctx.out(0)});
  node.weights.push_back(std::move(w));
  if (c) node.weights.push_back(std::move(bias));
  return Status::Ok();
}

// MatMul with a constant 2-D B: on [1,K] an InnerProduct, on [1,M,K] a Kestrel Gemm.
Status convert_matmul(OpContext& ctx) {
  std::string a;
  Status s = ctx.blob(0, &a);
  if (!s.ok()) return s;
  const ConstTensor* b = ctx.constant(1);
  if (!b || b->dims.size() != 2) return unsupported("only a constant 2-D B is supported");
  std::vector<int64_t> as;
  if (!(s = ctx.shape(a, &as)).ok()) return s;
  const int64_t k = b->dims[0], n = b->dims[1];
  if (as.back() != k) return invalid("A " + dims_text(as) + " does not match B " + dims_text(b->dims));
  if (as.size() == 3) {
    fb::GemmParamT p;
    Node& node = ctx.add("Gemm", std::move(p), {a}, {ctx.out(0)});
    node.weights.push_back(b->to_weight());
    return Status::Ok();
  }
  if (as.size() != 2) return unsupported("A of rank " + std::to_string(as.size()));
  Tensor w{{clamp_int(n), clamp_int(k)}, std::vector<float>(static_cast<size_t>(n * k))};
  for (int64_t o = 0; o < n; ++o) {
    for (int64_t i = 0; i < k; ++i) w.data[static_cast<size_t>(o * k + i)] = static_cast<float>(b->values[static_cast<size_t>(i * n + o)]);
  }
  fb::InnerProductParamT p;
  p.num_output = clamp_int(n);
  Node& node = ctx.add("InnerProduct", std::move(p), {a}, {ctx.out(0)});
  node.weights.push_back(std::move(w));
  return Status::Ok();
}

Status convert_softmax(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  std::vector<int64_t> in;
  if (!(s = ctx.shape(x, &in)).ok()) return s;
  // Before opset 13 Softmax flattens from `axis` on (default 1); that equals a softmax
  // over the last axis only when it is the last axis or the ones after it are 1.
  const int64_t axis_attr = attr_int(ctx.node, "axis", ctx.opset < 13 ? 1 : -1);
  fb::SoftmaxParamT p;
  p.log = ctx.node.op_type() == "LogSoftmax";
  if (!(s = kestrel_axis(axis_attr, in.size(), "axis", &p.axis)).ok()) return s;
  if (ctx.opset < 13) {
    for (size_t i = static_cast<size_t>(p.axis) + 2; i < in.size(); ++i) {
      if (in[i] != 1) return unsupported("opset < 13 softmax over several axes of " + dims_text(in));
    }
  }
  ctx.add("Softmax", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

// Identity and inference Dropout: Kestrel's Dropout is the identity (the optimizer
// removes it); a mask output is not produced.
Status convert_identity(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  if (ctx.node.output_size() > 1 && !ctx.out(1).empty()) return unsupported("the Dropout mask output");
  ctx.add("Dropout", fb::DropoutParamT{}, {x}, {ctx.out(0)});
  return Status::Ok();
}

const std::vector<OpSpec> kOps = {
    {"Conv", convert_conv<false>, 2, 3},
    {"ConvTranspose", convert_conv<true>, 2, 3},
    {"MaxPool", convert_pool<fb::PoolType::Max, false>, 1, 1},
    {"AveragePool", convert_pool<fb::PoolType::Average, false>, 1, 1},
    {"GlobalMaxPool", convert_pool<fb::PoolType::Max, true>, 1, 1},
    {"GlobalAveragePool", convert_pool<fb::PoolType::Average, true>, 1, 1},
    {"BatchNormalization", convert_batchnorm, 5, 5},
    {"Relu", convert_plain<A::ReLU>, 1, 1},
    {"Sigmoid", convert_plain<A::Sigmoid>, 1, 1},
    {"Tanh", convert_plain<A::TanH>, 1, 1},
    {"HardSwish", convert_plain<A::HardSwish>, 1, 1},
    {"LeakyRelu", convert_leaky_relu, 1, 1},
    {"Elu", convert_elu, 1, 1},
    {"HardSigmoid", convert_hard_sigmoid, 1, 1},
    {"Gelu", convert_gelu, 1, 1},
    {"Clip", convert_clip, 1, 3},
    {"PRelu", convert_prelu, 2, 2},
    {"Add", convert_binary, 2, 2},
    {"Sub", convert_binary, 2, 2},
    {"Mul", convert_binary, 2, 2},
    {"Div", convert_binary, 2, 2},
    {"Gemm", convert_gemm, 2, 3},
    {"MatMul", convert_matmul, 2, 2},
    {"Softmax", convert_softmax, 1, 1},
    {"LogSoftmax", convert_softmax, 1, 1},
    {"Identity", convert_identity, 1, 1},
    {"Dropout", convert_identity, 1, 3},
};

}  // namespace

const std::vector<OpSpec>& compute_ops() { return kOps; }

}  // namespace kestrel::convert::onnx_import
