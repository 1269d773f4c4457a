// ONNX arithmetic -> Kestrel nodes: Add/Sub/Mul/Div with numpy broadcasting,
// BatchNormalization, PRelu, Gemm and MatMul. Broadcasting works on Kestrel shapes,
// which are the ONNX shapes less (at most) a leading 1, so it agrees with ONNX's; each
// converter only picks the layout of what it makes.
#include <algorithm>
#include <cmath>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {
namespace {

using Op = fb::BinaryOpType;

// y = x op c (c op x when `reverse`) for a constant c. y is batched when x is and the
// result keeps a leading 1, else batchless (or batched when it needs to be for its
// rank); c becomes a scalar or a weight of the rank the result needs (its leading 1s
// dropped while that rank holds).
Status binary_const(OpContext& ctx, Op op, const std::string& x, const ConstTensor& c, bool reverse,
                    const std::string& y, const std::string& suffix = "") {
  std::vector<int64_t> xs, out;
  Status s = ctx.shape(x, &xs);
  if (!s.ok()) return s;
  if (!broadcast_dims(xs, c.dims, &out)) {
    return invalid("shapes " + dims_text(xs) + " and " + dims_text(c.dims) + " do not broadcast");
  }
  const bool xb = ctx.batched(x);
  bool batched = false;
  if ((xb || out.size() > xs.size()) && !(s = pick_layout(out, xb, &batched)).ok()) return s;
  const size_t target = out.size() - (batched ? 1 : 0), kx = xs.size() - (xb ? 1 : 0);
  std::vector<int> w(target, 1);
  for (size_t i = 0; i < std::min(target, c.dims.size()); ++i) {
    w[target - 1 - i] = clamp_int(c.dims[c.dims.size() - 1 - i]);
  }
  while (w.size() > 1 && w[0] == 1 && std::max(kx, w.size() - 1) >= target) w.erase(w.begin());
  ctx.set_batched(y, batched);
  fb::BinaryOpParamT p;
  p.op = op;
  p.reverse = reverse;
  if (c.count() == 1 && kx == target) {
    p.with_scalar = true;
    p.scalar = static_cast<float>(c.values[0]);
    ctx.add("BinaryOp", std::move(p), {x}, {y}, suffix);
    return Status::Ok();
  }
  Node& n = ctx.add("BinaryOp", std::move(p), {x}, {y}, suffix);
  n.weights.push_back(Tensor{w, {c.values.begin(), c.values.end()}});
  return Status::Ok();
}

// y = a op b for two run-time blobs: Kestrel's result is ONNX's less the leading 1s
// both operands lack, at most one, which makes y batched.
Status binary_blobs(OpContext& ctx, Op op, const std::string& a, const std::string& b, const std::string& y,
                    const std::string& suffix = "") {
  std::vector<int64_t> as, bs, out;
  Status s = ctx.shape(a, &as);
  if (s.ok()) s = ctx.shape(b, &bs);
  if (!s.ok()) return s;
  if (!broadcast_dims(as, bs, &out)) {
    return invalid("shapes " + dims_text(as) + " and " + dims_text(bs) + " do not broadcast");
  }
  const size_t ka = as.size() - (ctx.batched(a) ? 1 : 0), kb = bs.size() - (ctx.batched(b) ? 1 : 0);
  ctx.set_batched(y, std::max(ka, kb) < out.size());
  fb::BinaryOpParamT p;
  p.op = op;
  ctx.add("BinaryOp", std::move(p), {a, b}, {y}, suffix);
  return Status::Ok();
}

Status convert_binary(OpContext& ctx) {
  const std::string& type = ctx.node.op_type();
  const Op op = type == "Add" ? Op::Add : type == "Sub" ? Op::Sub : type == "Mul" ? Op::Mul : Op::Div;
  const ConstTensor* c0 = ctx.constant(0);
  const ConstTensor* c1 = ctx.constant(1);
  // Before opset 7, broadcast=1 aligns B at `axis` instead of the innermost axis.
  const bool legacy_axis = ctx.opset < 7 && attr_int(ctx.node, "broadcast", 0) != 0 && find_attr(ctx.node, "axis");
  if (!c0 && !c1) {
    if (legacy_axis) return unsupported("broadcast with axis on two run-time operands");
    return binary_blobs(ctx, op, ctx.in(0), ctx.in(1), ctx.out(0));
  }
  std::string x;
  Status s = ctx.blob(c1 ? 0 : 1, &x);
  if (!s.ok()) return s;
  ConstTensor c = c1 ? *c1 : *c0;
  if (legacy_axis) {
    std::vector<int64_t> xs;
    if (!(s = ctx.shape(x, &xs)).ok()) return s;
    size_t axis = 0;
    if (!(s = normalize_axis(attr_int(ctx.node, "axis", 0), xs.size(), "axis", &axis)).ok()) return s;
    if (axis + c.dims.size() > xs.size()) return invalid("B does not fit at axis " + std::to_string(axis));
    c.dims.resize(xs.size() - axis, 1);
  }
  return binary_const(ctx, op, x, c, c0 != nullptr, ctx.out(0));
}

// Inference BatchNormalization: the BatchNorm layer on batched blobs (channel = Kestrel
// axis 0), else y = x * a + b with per-channel constants [C,1,...] broadcast.
Status convert_batchnorm(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = ctx.blob(0, &x);
  if (s.ok()) s = ctx.shape(x, &in);
  if (!s.ok()) return s;
  if (ctx.node.output_size() > 1) return unsupported("training mode outputs (running mean/var)");
  if (attr_int(ctx.node, "training_mode", 0) != 0) return unsupported("training_mode 1");
  if (attr_int(ctx.node, "spatial", 1) == 0) return unsupported("spatial 0 (per-activation statistics)");
  if (in.size() < 2) return invalid("input " + dims_text(in) + " has no channel axis");
  // ONNX order: scale, B, mean, var.
  const ConstTensor* c[4];
  for (size_t i = 0; i < 4; ++i) {
    if (!(c[i] = ctx.constant(i + 1))) return unsupported("input " + std::to_string(i + 1) + " must be a constant");
    if (static_cast<int64_t>(c[i]->count()) != in[1]) {
      return invalid("input " + std::to_string(i + 1) + " has " + std::to_string(c[i]->count()) + " values for " +
                     std::to_string(in[1]) + " channels");
    }
  }
  const float eps = attr_float(ctx.node, "epsilon", 1e-5f);
  if (ctx.batched(x)) {
    fb::BatchNormParamT p;
    p.eps = eps;
    Node& n = ctx.add("BatchNorm", std::move(p), {x}, {ctx.out(0)});
    for (size_t i : {2, 3, 0, 1}) {  // Kestrel's order: mean, var, gamma, beta
      n.weights.push_back(Tensor{{static_cast<int>(c[i]->count())}, {c[i]->values.begin(), c[i]->values.end()}});
    }
    return Status::Ok();
  }
  ConstTensor a, b;
  a.dims.assign(in.size() - 1, 1);
  a.dims[0] = in[1];
  b.dims = a.dims;
  for (size_t k = 0; k < static_cast<size_t>(in[1]); ++k) {
    const double scale = c[0]->values[k] / std::sqrt(c[3]->values[k] + static_cast<double>(eps));
    a.values.push_back(scale);
    b.values.push_back(c[1]->values[k] - c[2]->values[k] * scale);
  }
  const std::string t = ctx.new_blob("/scaled", false);
  s = binary_const(ctx, Op::Mul, x, a, false, t, "/scale");
  return s.ok() ? binary_const(ctx, Op::Add, t, b, false, ctx.out(0), "/shift") : s;
}

// PRelu: Kestrel's PReLU for one slope, or one per channel of a batched blob; any
// other broadcast as max(x, 0) + slope * min(x, 0).
Status convert_prelu(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = ctx.blob(0, &x);
  if (s.ok()) s = ctx.shape(x, &in);
  if (!s.ok()) return s;
  const ConstTensor* given = ctx.constant(1);
  ConstTensor per_channel_slope;
  if (given && ctx.opset < 7 && given->dims.size() == 1 && in.size() > 2 && given->dims[0] == in[1]) {
    // Before opset 7 a 1-D slope is per channel (axis 1), not broadcast from the end.
    per_channel_slope = *given;
    per_channel_slope.dims.resize(in.size() - 1, 1);
  }
  const ConstTensor* slope = per_channel_slope.dims.empty() ? given : &per_channel_slope;
  if (slope) {
    // Aligned at the innermost axis, per channel means 1 everywhere but ONNX axis 1.
    std::vector<int64_t> d(in.size() - std::min(in.size(), slope->dims.size()), 1);
    d.insert(d.end(), slope->dims.begin(), slope->dims.end());
    bool per_channel = ctx.batched(x) && d.size() == in.size() && d[1] == in[1];
    for (size_t i = 0; i < d.size(); ++i) per_channel = per_channel && (i == 1 || d[i] == 1);
    if (slope->count() == 1 || per_channel) {
      Node& node = ctx.add("PReLU", fb::PReLUParamT{}, {x}, {ctx.out(0)});
      node.weights.push_back(Tensor{{static_cast<int>(slope->count())}, {slope->values.begin(), slope->values.end()}});
      return Status::Ok();
    }
  } else {
    std::string unused;
    if (!(s = ctx.blob(1, &unused)).ok()) return s;
  }
  const ConstTensor zero{{}, {0.0}, true};
  const std::string pos = ctx.new_blob("/pos", false), neg = ctx.new_blob("/neg", false),
                    scaled = ctx.new_blob("/scaled", false);
  s = binary_const(ctx, Op::Max, x, zero, false, pos, "/max");
  if (s.ok()) s = binary_const(ctx, Op::Min, x, zero, false, neg, "/min");
  if (s.ok()) {
    s = slope ? binary_const(ctx, Op::Mul, neg, *slope, false, scaled, "/mul")
              : binary_blobs(ctx, Op::Mul, neg, ctx.in(1), scaled, "/mul");
  }
  return s.ok() ? binary_blobs(ctx, Op::Add, pos, scaled, ctx.out(0), "/add") : s;
}

// Gemm: on a [1,K] A with a constant B, an InnerProduct (alpha and beta folded into the
// weights) as image classifiers end; any other, Kestrel's Gemm on a batchless [M,K]. A
// run-time C is added after (times beta).
Status convert_gemm(OpContext& ctx) {
  std::string a, b_blob, c_blob;
  std::vector<int64_t> as, bs, cs;
  Status s = ctx.blob(0, &a);
  if (s.ok()) s = ctx.shape(a, &as);
  if (!s.ok()) return s;
  const ConstTensor* b = ctx.constant(1);
  const ConstTensor* c = ctx.in(2).empty() ? nullptr : ctx.constant(2);
  if (b) bs = b->dims;
  else if (!(s = ctx.blob(1, &b_blob)).ok() || !(s = ctx.shape(b_blob, &bs)).ok()) return s;
  if (c) cs = c->dims;
  else if (!ctx.in(2).empty() && (!(s = ctx.blob(2, &c_blob)).ok() || !(s = ctx.shape(c_blob, &cs)).ok())) return s;
  if (as.size() != 2 || bs.size() != 2) {
    return invalid("A " + dims_text(as) + " and B " + dims_text(bs) + " must be 2-D");
  }
  const bool trans_a = attr_int(ctx.node, "transA", 0) != 0, trans_b = attr_int(ctx.node, "transB", 0) != 0;
  const float alpha = attr_float(ctx.node, "alpha", 1.f), beta = attr_float(ctx.node, "beta", 1.f);
  const int64_t m = as[trans_a ? 1 : 0], k = as[trans_a ? 0 : 1];
  const int64_t bk = bs[trans_b ? 1 : 0], n = bs[trans_b ? 0 : 1];
  if (bk != k) return invalid("A " + dims_text(as) + " does not match B " + dims_text(bs));
  std::vector<int64_t> cm;
  if (!ctx.in(2).empty() && (cs.size() > 2 || !broadcast_dims({m, n}, cs, &cm) || cm != std::vector<int64_t>{m, n})) {
    return invalid("C " + dims_text(cs) + " does not broadcast to " + dims_text({m, n}));
  }
  const std::string y = c_blob.empty() ? ctx.out(0) : ctx.new_blob("/ab", false);
  if (m == 1 && !trans_a && b) {
    Tensor w{{clamp_int(n), clamp_int(k)}, std::vector<float>(static_cast<size_t>(n * k))};
    for (int64_t o = 0; o < n; ++o) {
      for (int64_t i = 0; i < k; ++i) {
        w.data[static_cast<size_t>(o * k + i)] =
            alpha * static_cast<float>(b->values[static_cast<size_t>(trans_b ? o * k + i : i * n + o)]);
      }
    }
    fb::InnerProductParamT p;
    p.num_output = clamp_int(n);
    p.bias_term = c != nullptr;
    ctx.set_batched(y, true);
    Node& node = ctx.add("InnerProduct", std::move(p), {a}, {y});
    node.weights.push_back(std::move(w));
    if (c) {
      Tensor bias{{clamp_int(n)}, {}};
      for (int64_t o = 0; o < n; ++o) {
        bias.data.push_back(beta * static_cast<float>(c->values[c->count() == 1 ? 0 : static_cast<size_t>(o)]));
      }
      node.weights.push_back(std::move(bias));
    }
  } else {
    std::vector<std::string> inputs(1);
    if (!(s = ctx.as_batchless(a, &inputs[0])).ok()) return s;
    if (!b) {
      inputs.emplace_back();
      if (!(s = ctx.as_batchless(b_blob, &inputs[1])).ok()) return s;
    }
    fb::GemmParamT p;
    p.trans_a = trans_a, p.trans_b = trans_b, p.alpha = alpha, p.beta = beta;
    ctx.set_batched(y, false);
    Node& node = ctx.add("Gemm", std::move(p), inputs, {y});
    if (b) node.weights.push_back(b->to_weight());
    if (c) node.weights.push_back(c->to_weight());
  }
  if (c_blob.empty()) return Status::Ok();
  std::string scaled_c = c_blob;
  if (beta != 1.f) {
    scaled_c = ctx.new_blob("/beta_c", false);
    s = binary_const(ctx, Op::Mul, c_blob, ConstTensor{{}, {beta}, true}, false, scaled_c, "/beta");
    if (!s.ok()) return s;
  }
  return binary_blobs(ctx, Op::Add, y, scaled_c, ctx.out(0), "/add_c");
}

// Run-time x of ONNX shape `dims` seen as a Kestrel [rows, cols]: x itself when it
// already is, else a Reshape.
Status view_2d(OpContext& ctx, const std::string& x, const std::vector<int64_t>& dims, int64_t rows, int64_t cols,
               std::string* y) {
  if (kestrel_dims(dims, ctx.batched(x)) == std::vector<int>{clamp_int(rows), clamp_int(cols)}) {
    *y = x;
    return Status::Ok();
  }
  y->clear();
  return ctx.reshape(x, {rows, cols}, false, y);
}

// Output 0 of ONNX shape `out` from the result y: nothing to do when y is output 0,
// else a Reshape.
Status finish(OpContext& ctx, const std::string& y, const std::vector<int64_t>& out, bool prefer_batched) {
  bool batched = false;
  Status s = pick_layout(out, prefer_batched, &batched);
  if (!s.ok() || y == ctx.out(0)) return s;
  std::string o = ctx.out(0);
  return ctx.reshape(y, out, batched, &o);
}

// The 2-D operand `index` of batch `b` of a constant: a weight [rows, cols].
Tensor const_slice(const ConstTensor& c, int64_t b, int64_t rows, int64_t cols) {
  const size_t n = static_cast<size_t>(rows * cols);
  const auto first = c.values.begin() + static_cast<long>(static_cast<size_t>(b) * n);
  return Tensor{{clamp_int(rows), clamp_int(cols)}, {first, first + static_cast<long>(n)}};
}

// Run-time x ([batches, rows, cols] in ONNX terms) as `batches` Kestrel [rows, cols]
// blobs: a Slice along the batch axis, then a Reshape of each part.
Status split_batches(OpContext& ctx, const std::string& x, const std::vector<int64_t>& dims, int64_t batches,
                     int64_t rows, int64_t cols, const char* tag, std::vector<std::string>* parts) {
  parts->assign(1, "");
  if (batches == 1) return view_2d(ctx, x, dims, rows, cols, &parts->back());
  std::string x3;
  Status s = ctx.reshape(x, {batches, rows, cols}, false, &x3);
  if (!s.ok()) return s;
  std::vector<std::string> sliced;
  for (int64_t i = 0; i < batches; ++i) {
    sliced.push_back(ctx.new_blob(std::string("/") + tag + std::to_string(i), false));
  }
  ctx.add("Slice", fb::SliceParamT{}, {x3}, sliced, std::string("/split_") + tag);
  parts->clear();
  for (const std::string& part : sliced) {
    parts->emplace_back();
    if (!(s = ctx.reshape(part, {rows, cols}, false, &parts->back())).ok()) return s;
  }
  return Status::Ok();
}

// MatMul with numpy semantics (1-D operands promoted, batch dims broadcast). A
// constant B shared by every row: one InnerProduct (A a single row) or Kestrel Gemm
// over A viewed as [rows, K]; otherwise one Gemm per batch, joined by a Concat.
Status convert_matmul(OpContext& ctx) {
  constexpr int64_t kMaxBatches = 64;  // one Gemm node each
  std::string a, b_blob;
  std::vector<int64_t> as, bs;
  Status s = ctx.blob(0, &a);
  if (s.ok()) s = ctx.shape(a, &as);
  if (!s.ok()) return s;
  const ConstTensor* b = ctx.constant(1);
  if (b) bs = b->dims;
  else if (!(s = ctx.blob(1, &b_blob)).ok() || !(s = ctx.shape(b_blob, &bs)).ok()) return s;
  if (as.empty() || bs.empty()) return invalid("MatMul of a scalar");
  std::vector<int64_t> a2 = as, b2 = bs;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  if (b2[b2.size() - 2] != k) return invalid("A " + dims_text(as) + " does not match B " + dims_text(bs));
  const std::vector<int64_t> a_batch(a2.begin(), a2.end() - 2), b_batch(b2.begin(), b2.end() - 2);
  std::vector<int64_t> batch, out;
  if (!broadcast_dims(a_batch, b_batch, &batch)) {
    return invalid("batch dims of " + dims_text(as) + " and " + dims_text(bs) + " do not broadcast");
  }
  out = batch;
  if (as.size() > 1) out.push_back(m);
  if (bs.size() > 1) out.push_back(n);
  const bool prefer_batched = ctx.batched(a);
  const int64_t a_rows = product(a2, 0, a2.size() - 1);
  if (b && product(b_batch) == 1) {
    Tensor w = const_slice(*b, 0, k, n);
    if (a_rows == 1) {
      // InnerProduct wants [N,K].
      Tensor wt{{clamp_int(n), clamp_int(k)}, std::vector<float>(w.data.size())};
      for (int64_t o = 0; o < n; ++o) {
        for (int64_t i = 0; i < k; ++i) {
          wt.data[static_cast<size_t>(o * k + i)] = w.data[static_cast<size_t>(i * n + o)];
        }
      }
      fb::InnerProductParamT p;
      p.num_output = clamp_int(n);
      const bool direct = out.size() <= 2;  // [N] batchless or [1,N] batched
      const std::string y = direct ? ctx.out(0) : ctx.new_blob("/ip", false);
      ctx.set_batched(y, out.size() == 2);
      ctx.add("InnerProduct", std::move(p), {a}, {y}).weights.push_back(std::move(wt));
      return finish(ctx, y, out, prefer_batched);
    }
    std::string a_2d;
    if (!(s = view_2d(ctx, a, as, a_rows, k, &a_2d)).ok()) return s;
    const bool direct = a_2d == a && bs.size() > 1;
    const std::string y = direct ? ctx.out(0) : ctx.new_blob("/gemm", false);
    ctx.set_batched(y, direct && ctx.batched(a));
    ctx.add("Gemm", fb::GemmParamT{}, {a_2d}, {y}).weights.push_back(std::move(w));
    return finish(ctx, y, out, prefer_batched);
  }
  const int64_t batches = product(batch), a_batches = product(a_batch), b_batches = product(b_batch);
  if (batches > kMaxBatches) {
    return unsupported(std::to_string(batches) + " matrix products (at most " + std::to_string(kMaxBatches) + ")");
  }
  std::vector<std::string> a_parts, b_parts;
  if (!(s = split_batches(ctx, a, as, a_batches, m, k, "a", &a_parts)).ok()) return s;
  if (!b && !(s = split_batches(ctx, b_blob, bs, b_batches, k, n, "b", &b_parts)).ok()) return s;
  std::vector<std::string> products;
  for (int64_t i = 0; i < batches; ++i) {
    // Batch i's index into each operand's batch dims (broadcast: extent 1 reads 0).
    std::vector<int64_t> idx(batch.size());
    for (size_t d = batch.size(), rest = static_cast<size_t>(i); d-- > 0;) {
      idx[d] = static_cast<int64_t>(rest) % batch[d], rest /= static_cast<size_t>(batch[d]);
    }
    auto flat_index = [&](const std::vector<int64_t>& dims) {
      int64_t f = 0;
      for (size_t d = batch.size() - dims.size(); d < batch.size(); ++d) {
        const int64_t e = dims[d + dims.size() - batch.size()];
        f = f * e + (e == 1 ? 0 : idx[d]);
      }
      return f;
    };
    const int64_t ia = flat_index(a_batch), ib = flat_index(b_batch);
    std::vector<std::string> inputs = {a_parts[static_cast<size_t>(ia)]};
    if (!b) inputs.push_back(b_parts[static_cast<size_t>(ib)]);
    products.push_back(batches == 1 ? ctx.new_blob("/gemm", false) : ctx.new_blob("/gemm" + std::to_string(i), false));
    Node& g = ctx.add("Gemm", fb::GemmParamT{}, inputs, {products.back()}, "/gemm" + std::to_string(i));
    if (b) g.weights.push_back(const_slice(*b, ib, k, n));
  }
  std::string y = products[0];
  if (batches > 1) {
    y = ctx.new_blob("/concat", false);
    ctx.add("Concat", fb::ConcatParamT{}, products, {y}, "/concat");
  }
  return finish(ctx, y, out, prefer_batched);
}

}  // namespace

const std::vector<OpSpec>& math_ops() {
  static const std::vector<OpSpec> ops = {
      {"Add", convert_binary, 2, 2},
      {"Sub", convert_binary, 2, 2},
      {"Mul", convert_binary, 2, 2},
      {"Div", convert_binary, 2, 2},
      {"BatchNormalization", convert_batchnorm, 5, 5},
      {"PRelu", convert_prelu, 2, 2},
      {"Gemm", convert_gemm, 2, 3},
      {"MatMul", convert_matmul, 2, 2},
  };
  return ops;
}

}  // namespace kestrel::convert::onnx_import
