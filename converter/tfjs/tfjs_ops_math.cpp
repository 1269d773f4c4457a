// TF.js element-wise and reduction ops -> Kestrel: binary arithmetic with TF's
// broadcasting (BinaryOp against a second blob, a constant laid out like the blob, or a
// scalar), activations, PReLU, Softmax, Mean/Sum/Max/Min and a standalone BatchNorm.
#include <algorithm>
#include <cmath>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {
namespace {

using A = fb::ActivationType;
using B = fb::BinaryOpType;

// The TF rank of a run-time blob.
Status tf_rank(const OpContext& ctx, const std::string& x, size_t* rank) {
  std::vector<int64_t> d;
  Status s = ctx.tf_shape(x, &d);
  *rank = d.size();
  return s;
}

// Records output 0 (made under ctx.out(0)) with the layout its TF rank gives it.
Status set_elementwise_output(const OpContext& ctx, bool channels_last, size_t out_rank) {
  if (channels_last) {
    ctx.set_output(0, ctx.out(0), Layout{true, static_cast<int>(out_rank) - 3});
    return Status::Ok();
  }
  std::vector<int> e;
  Status s = ctx.extents(ctx.out(0), &e);
  if (!s.ok()) return s;
  ctx.set_output(0, ctx.out(0), Layout{false, static_cast<int>(out_rank) - static_cast<int>(e.size())});
  return Status::Ok();
}

Status binary(OpContext& ctx, B op, std::unique_ptr<fb::ActivationT> act = nullptr) {
  const ConstTensor* ca = ctx.constant(0);
  const ConstTensor* cb = ctx.constant(1);
  if (ca && cb) return Status(ErrorCode::kInternal, "both operands are constants (should have folded)");
  fb::BinaryOpParamT p;
  p.op = op;
  p.activation = std::move(act);
  if (!ca && !cb) {
    std::string a, b;
    Status s = ctx.blob(0, &a);
    if (s.ok()) s = ctx.blob(1, &b);
    if (!s.ok()) return s;
    const bool cl = ctx.layout(a).channels_last || ctx.layout(b).channels_last;
    if (cl && !ctx.layout(a).channels_last) s = as_channels_last(ctx, std::string(a), &a);
    if (s.ok() && cl && !ctx.layout(b).channels_last) s = as_channels_last(ctx, std::string(b), &b);
    size_t ra = 0, rb = 0;
    if (s.ok()) s = tf_rank(ctx, a, &ra);
    if (s.ok()) s = tf_rank(ctx, b, &rb);
    if (!s.ok()) return s;
    ctx.add("BinaryOp", std::move(p), {a, b}, {ctx.out(0)});
    return set_elementwise_output(ctx, cl, std::max(ra, rb));
  }
  const size_t xi = ca ? 1 : 0;
  const ConstTensor& c = ca ? *ca : *cb;
  std::string x;
  Status s = ctx.blob(xi, &x);
  size_t rx = 0;
  if (s.ok()) s = tf_rank(ctx, x, &rx);
  if (!s.ok()) return s;
  const Layout l = ctx.layout(x);
  p.reverse = xi == 1;
  Node* n;
  if (c.count() == 1) {
    p.with_scalar = true;
    p.scalar = static_cast<float>(c.values[0]);
    n = &ctx.add("BinaryOp", std::move(p), {x}, {ctx.out(0)});
  } else {
    Tensor w;
    if (!(s = const_as_weight(c, l, &w)).ok()) return s;
    n = &ctx.add("BinaryOp", std::move(p), {x}, {ctx.out(0)});
    n->weights.push_back(std::move(w));
  }
  return set_elementwise_output(ctx, l.channels_last, std::max(rx, c.dims.size()));
}

Status convert_add(OpContext& ctx) { return binary(ctx, B::Add); }
Status convert_sub(OpContext& ctx) { return binary(ctx, B::Sub); }
Status convert_mul(OpContext& ctx) { return binary(ctx, B::Mul); }
Status convert_div(OpContext& ctx) { return binary(ctx, B::Div); }
Status convert_max(OpContext& ctx) { return binary(ctx, B::Max); }
Status convert_min(OpContext& ctx) { return binary(ctx, B::Min); }

// x ^ e for a run-time x: Sqrt, Rsqrt, Square.
Status power(OpContext& ctx, float e) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  fb::BinaryOpParamT p;
  p.op = B::Pow;
  p.with_scalar = true;
  p.scalar = e;
  ctx.add("BinaryOp", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}
Status convert_sqrt(OpContext& ctx) { return power(ctx, 0.5f); }
Status convert_rsqrt(OpContext& ctx) { return power(ctx, -0.5f); }
Status convert_square(OpContext& ctx) { return power(ctx, 2.f); }

Status convert_neg(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  fb::BinaryOpParamT p;
  p.op = B::Mul;
  p.with_scalar = true;
  p.scalar = -1.f;
  ctx.add("BinaryOp", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}

Status convert_addn(OpContext& ctx) {
  std::vector<std::string> xs(ctx.num_inputs());
  bool cl = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    Status s = ctx.blob(i, &xs[i]);
    if (!s.ok()) return s;
    cl = cl || ctx.layout(xs[i]).channels_last;
  }
  for (std::string& x : xs) {
    if (!cl || ctx.layout(x).channels_last) continue;
    Status s = as_channels_last(ctx, std::string(x), &x);
    if (!s.ok()) return s;
  }
  if (xs.size() == 1) {
    ctx.set_output(0, xs[0], ctx.layout(xs[0]));
    return Status::Ok();
  }
  ctx.add("Eltwise", fb::EltwiseParamT{}, xs, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), ctx.layout(xs[0]));
  return Status::Ok();
}

Status activation(OpContext& ctx, A type, float alpha = 0.f, float beta = 0.f) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  fb::ActivationParamT p;
  p.activation = std::make_unique<fb::ActivationT>();
  p.activation->type = type;
  p.activation->alpha = alpha;
  p.activation->beta = beta;
  ctx.add("Activation", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}

Status convert_relu(OpContext& ctx) { return activation(ctx, A::ReLU); }
Status convert_relu6(OpContext& ctx) { return activation(ctx, A::Clip, 0.f, 6.f); }
Status convert_elu(OpContext& ctx) { return activation(ctx, A::ELU, 1.f); }
Status convert_leaky(OpContext& ctx) { return activation(ctx, A::LeakyReLU, ctx.attr_float("alpha", 0.2f)); }
Status convert_sigmoid(OpContext& ctx) { return activation(ctx, A::Sigmoid); }
Status convert_tanh(OpContext& ctx) { return activation(ctx, A::TanH); }

// Prelu(x, alpha): one slope per channel (alpha [C], [1,1,C]) or one for all.
Status convert_prelu(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  const ConstTensor* alpha = ctx.constant(1);
  if (!alpha) return unsupported("alpha must be a constant");
  std::vector<int64_t> dims;
  if (!(s = ctx.tf_shape(x, &dims)).ok()) return s;
  const int64_t channels = dims.back();
  const size_t n = alpha->count();
  for (size_t i = 0; i + 1 < alpha->dims.size(); ++i) {
    if (alpha->dims[i] != 1) return unsupported("alpha " + dims_text(alpha->dims) + " varies over more than the channels");
  }
  if (n != 1 && static_cast<int64_t>(n) != channels) {
    return unsupported("alpha " + dims_text(alpha->dims) + " for " + std::to_string(channels) + " channels");
  }
  if (n != 1 && !ctx.layout(x).channels_last) {
    if (!(s = as_channels_last(ctx, std::string(x), &x)).ok()) return s;
  }
  Node& node = ctx.add("PReLU", fb::PReLUParamT{}, {x}, {ctx.out(0)});
  Tensor w;
  w.shape = {static_cast<int>(n)};
  w.data.assign(alpha->values.begin(), alpha->values.end());
  w.half = alpha->half;
  node.weights.push_back(std::move(w));
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}

// Softmax over TF's last axis: the channels of a channels-last blob.
Status softmax(OpContext& ctx, bool log) {
  std::string x;
  Status s = ctx.blob(0, &x);
  std::vector<int> e;
  if (s.ok()) s = ctx.extents(x, &e);
  if (!s.ok()) return s;
  fb::SoftmaxParamT p;
  p.axis = ctx.layout(x).channels_last ? 0 : static_cast<int>(e.size()) - 1;
  p.log = log;
  ctx.add("Softmax", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}
Status convert_softmax(OpContext& ctx) { return softmax(ctx, false); }
Status convert_logsoftmax(OpContext& ctx) { return softmax(ctx, true); }

// Mean, Sum, Max, Min over constant axes: Kestrel's Reduce keeping the dims (so the
// blob keeps its layout), then a reshape to TF's result when keep_dims is false.
Status reduce(OpContext& ctx, fb::ReduceOp op) {
  std::string x;
  Status s = ctx.blob(0, &x);
  std::vector<int64_t> dims, axes;
  if (s.ok()) s = ctx.tf_shape(x, &dims);
  if (s.ok()) s = const_ints(ctx, 1, "reduction_indices", &axes);
  if (!s.ok()) return s;
  const Layout l = ctx.layout(x);
  const size_t r = dims.size();
  std::vector<bool> reduced(r, false);
  for (int64_t a : axes) {
    size_t k;
    if (!(s = normalize_axis(a, r, "reduction axis", &k)).ok()) return s;
    reduced[k] = true;
  }
  fb::ReduceParamT p;
  p.op = op;
  p.keepdims = true;
  for (size_t k = 0; k < r; ++k) {
    if (!reduced[k] || dims[k] == 1) continue;  // a size-1 axis reduces to itself
    if (static_cast<int>(k) < l.ones) return Status(ErrorCode::kInternal, "a leading 1 has size > 1");
    int axis = static_cast<int>(k) - l.ones;
    if (l.channels_last) axis = axis == 2 ? 0 : axis + 1;  // H, W, C -> [C, H, W]
    p.axes.push_back(axis);
  }
  std::vector<int64_t> out_dims;
  for (size_t k = 0; k < r; ++k) {
    if (!reduced[k]) out_dims.push_back(dims[k]);
    else if (ctx.attr_bool("keep_dims", false)) out_dims.push_back(1);
  }
  if (p.axes.empty()) {
    std::string y;
    Layout ly;
    if (out_dims.empty()) return unsupported("a reduction to a scalar");
    if (!(s = reshape_to(ctx, x, out_dims, &y, &ly)).ok()) return s;
    ctx.set_output(0, y, ly);
    return Status::Ok();
  }
  const bool keep = ctx.attr_bool("keep_dims", false);
  const std::string red = keep ? ctx.out(0) : ctx.new_blob("/reduce", l);
  std::sort(p.axes.begin(), p.axes.end());
  if (op == fb::ReduceOp::Mean && l.channels_last && p.axes == std::vector<int>{1, 2}) {
    // The mean over H and W (global average pooling; squeeze-excite blocks): the pooling
    // kernel, not the generic reduction.
    fb::PoolingParamT pool;
    pool.pool = fb::PoolType::Average;
    pool.global = true;
    ctx.add("Pooling", std::move(pool), {x}, {red});
  } else {
    ctx.add("Reduce", std::move(p), {x}, {red});
  }
  if (keep) {
    ctx.set_output(0, red, l);
    return Status::Ok();
  }
  if (out_dims.empty()) return unsupported("a reduction to a scalar");
  std::string y = ctx.out(0);
  Layout ly;
  if (!(s = reshape_to(ctx, red, out_dims, &y, &ly)).ok()) return s;
  ctx.set_output(0, y, ly);
  return Status::Ok();
}
Status convert_mean(OpContext& ctx) { return reduce(ctx, fb::ReduceOp::Mean); }
Status convert_sum(OpContext& ctx) { return reduce(ctx, fb::ReduceOp::Sum); }
Status convert_rmax(OpContext& ctx) { return reduce(ctx, fb::ReduceOp::Max); }
Status convert_rmin(OpContext& ctx) { return reduce(ctx, fb::ReduceOp::Min); }

// FusedBatchNorm(V3) at inference: y = (x - mean) / sqrt(var + eps) * scale + offset,
// a per-channel Scale with bias.
Status convert_batchnorm(OpContext& ctx) {
  if (ctx.attr_bool("is_training", false)) return unsupported("is_training is set");
  std::string x0, x;
  Status s = ctx.blob(0, &x0);
  if (s.ok()) s = as_channels_last(ctx, x0, &x);
  std::vector<int64_t> dims;
  if (s.ok()) s = ctx.tf_shape(x, &dims);
  if (!s.ok()) return s;
  const ConstTensor* c[4];
  for (size_t k = 0; k < 4; ++k) {
    c[k] = ctx.constant(k + 1);
    if (!c[k] || static_cast<int64_t>(c[k]->count()) != dims.back()) {
      return unsupported("scale, offset, mean and variance must be constants of one value per channel");
    }
  }
  const double eps = ctx.attr_float("epsilon", 1e-3f);
  Tensor scale, bias;
  scale.shape = bias.shape = {static_cast<int>(dims.back())};
  for (size_t k = 0; k < c[0]->count(); ++k) {
    const double a = c[0]->values[k] / std::sqrt(c[3]->values[k] + eps);
    scale.data.push_back(static_cast<float>(a));
    bias.data.push_back(static_cast<float>(c[1]->values[k] - c[2]->values[k] * a));
  }
  fb::ScaleParamT p;
  p.bias_term = true;
  Node& n = ctx.add("Scale", std::move(p), {x}, {ctx.out(0)});
  n.weights.push_back(std::move(scale));
  n.weights.push_back(std::move(bias));
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}

}  // namespace

const std::vector<OpSpec>& math_ops() {
  static const std::vector<OpSpec> ops = {
      {"Add", convert_add, 2, 2},
      {"AddV2", convert_add, 2, 2},
      {"BiasAdd", convert_add, 2, 2},
      {"Sub", convert_sub, 2, 2},
      {"Mul", convert_mul, 2, 2},
      {"RealDiv", convert_div, 2, 2},
      {"Maximum", convert_max, 2, 2},
      {"Minimum", convert_min, 2, 2},
      {"AddN", convert_addn, 1, 64},
      {"Neg", convert_neg, 1, 1},
      {"Sqrt", convert_sqrt, 1, 1},
      {"Rsqrt", convert_rsqrt, 1, 1},
      {"Square", convert_square, 1, 1},
      {"Relu", convert_relu, 1, 1},
      {"Relu6", convert_relu6, 1, 1},
      {"Elu", convert_elu, 1, 1},
      {"LeakyRelu", convert_leaky, 1, 1},
      {"Sigmoid", convert_sigmoid, 1, 1},
      {"Tanh", convert_tanh, 1, 1},
      {"Prelu", convert_prelu, 2, 2},
      {"Softmax", convert_softmax, 1, 1},
      {"LogSoftmax", convert_logsoftmax, 1, 1},
      {"Mean", convert_mean, 2, 2},
      {"Sum", convert_sum, 2, 2},
      {"Max", convert_rmax, 2, 2},
      {"Min", convert_rmin, 2, 2},
      {"FusedBatchNorm", convert_batchnorm, 5, 5},
      {"FusedBatchNormV3", convert_batchnorm, 5, 6},
  };
  return ops;
}

}  // namespace kestrel::convert::tfjs_import
