// Constant folding for the TF.js front end: ops whose inputs are all known at
// conversion time (shape arithmetic, a Shape of a blob whose shape inference knows)
// become constants. Also the op lists that decide where the imported part ends.
#include <algorithm>
#include <cmath>
#include <set>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {
namespace {

ConstTensor like(const ConstTensor& a, std::vector<int64_t> dims) {
  ConstTensor r;
  r.dims = std::move(dims);
  r.dtype = a.dtype;
  return r;
}

Status need_const(const OpContext& ctx, size_t i, const ConstTensor** c) {
  *c = ctx.constant(i);
  return *c ? Status::Ok() : Status(ErrorCode::kInternal, "input " + std::to_string(i) + " is not a constant");
}

Status fold_identity(OpContext& ctx) {
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    const ConstTensor* c;
    Status s = need_const(ctx, k, &c);
    if (!s.ok()) return s;
    ConstTensor r = *c;
    if (ctx.node.op() == "Cast") {
      const tfjs::DataType to = ctx.attr_type("DstT", tfjs::DT_FLOAT);
      r.dtype = to;
      r.half = r.half && to == tfjs::DT_FLOAT;
      if (!r.is_float()) {
        for (double& v : r.values) v = to == tfjs::DT_BOOL ? (v != 0) : std::trunc(v);
      }
    }
    ctx.set_constant(k, std::move(r));
  }
  return Status::Ok();
}

Status fold_shape(OpContext& ctx) {
  std::vector<int64_t> dims;
  if (const ConstTensor* c = ctx.constant(0)) {
    dims = c->dims;
  } else {
    std::string x;
    Status s = ctx.blob(0, &x);
    if (s.ok()) s = ctx.tf_shape(x, &dims);
    if (!s.ok()) return s;
  }
  ConstTensor r;
  r.dtype = tfjs::DT_INT32;
  r.dims = {static_cast<int64_t>(dims.size())};
  r.values.assign(dims.begin(), dims.end());
  ctx.set_constant(0, std::move(r));
  return Status::Ok();
}

// Reshape, Squeeze, ExpandDims: the values stay, the dims change.
Status fold_reshape(OpContext& ctx) {
  const ConstTensor* c;
  Status s = need_const(ctx, 0, &c);
  if (!s.ok()) return s;
  ConstTensor r = *c;
  const std::string& op = ctx.node.op();
  if (op == "Reshape") {
    std::vector<int64_t> t;
    if (!(s = const_ints(ctx, 1, "the shape", &t)).ok()) return s;
    int64_t known = 1;
    for (int64_t d : t) known *= d == -1 ? 1 : d;
    for (int64_t& d : t) {
      if (d == -1) d = known ? static_cast<int64_t>(c->count()) / known : 0;
    }
    if (std::any_of(t.begin(), t.end(), [](int64_t d) { return d < 0; }) || product(t) != static_cast<int64_t>(c->count())) {
      return invalid("cannot reshape " + dims_text(c->dims) + " to " + dims_text(t));
    }
    r.dims = t;
  } else if (op == "ExpandDims") {
    std::vector<int64_t> a;
    size_t k;
    if (!(s = const_ints(ctx, 1, "the axis", &a)).ok()) return s;
    if (a.size() != 1 || !(s = normalize_axis(a[0], r.dims.size() + 1, "axis", &k)).ok()) return s.ok() ? invalid("axis") : s;
    r.dims.insert(r.dims.begin() + static_cast<long>(k), 1);
  } else {
    const std::vector<int64_t> axes = ctx.attr_ints("squeeze_dims");
    std::vector<int64_t> out;
    for (size_t k = 0; k < r.dims.size(); ++k) {
      bool drop = axes.empty() && r.dims[k] == 1;
      for (int64_t a : axes) drop = drop || a == static_cast<int64_t>(k) || a + static_cast<int64_t>(r.dims.size()) == static_cast<int64_t>(k);
      if (!drop) out.push_back(r.dims[k]);
    }
    r.dims = out;
  }
  ctx.set_constant(0, std::move(r));
  return Status::Ok();
}

// Pack (N tensors along a new axis) and ConcatV2 (along an existing one).
Status fold_join(OpContext& ctx) {
  const bool pack = ctx.node.op() == "Pack";
  const size_t n = pack ? ctx.num_inputs() : ctx.num_inputs() - 1;
  std::vector<const ConstTensor*> xs(n);
  for (size_t i = 0; i < n; ++i) {
    Status s = need_const(ctx, i, &xs[i]);
    if (!s.ok()) return s;
    if (xs[i]->dims != xs[0]->dims && pack) return invalid("Pack of different shapes");
  }
  std::vector<int64_t> dims = xs[0]->dims;
  int64_t axis_raw = ctx.attr_int("axis", 0);
  if (!pack) {
    std::vector<int64_t> a;
    Status s = const_ints(ctx, n, "the axis", &a);
    if (!s.ok() || a.size() != 1) return s.ok() ? invalid("axis must hold one value") : s;
    axis_raw = a[0];
  }
  if (pack) dims.insert(dims.begin(), 1);  // work as a concat of [1, ...] along `axis`
  size_t axis;
  Status s = normalize_axis(axis_raw, dims.size(), "axis", &axis);
  if (!s.ok()) return s;
  if (pack) {
    std::rotate(dims.begin(), dims.begin() + 1, dims.begin() + static_cast<long>(axis) + 1);
  }
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= dims[k];
  for (size_t k = axis + 1; k < dims.size(); ++k) inner *= dims[k];
  ConstTensor r = like(*xs[0], dims);
  r.dims[axis] = 0;
  for (const ConstTensor* x : xs) {
    const int64_t len = pack ? 1 : (axis < x->dims.size() ? x->dims[axis] : 0);
    if (!pack && (x->dims.size() != dims.size() || static_cast<int64_t>(x->count()) != outer * len * inner)) {
      return invalid("ConcatV2 of " + dims_text(x->dims) + " and " + dims_text(xs[0]->dims));
    }
    r.dims[axis] += len;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor* x : xs) {
      const int64_t len = pack ? 1 : x->dims[axis];
      const auto first = x->values.begin() + static_cast<long>(o * len * inner);
      r.values.insert(r.values.end(), first, first + static_cast<long>(len * inner));
    }
  }
  ctx.set_constant(0, std::move(r));
  return Status::Ok();
}

// StridedSlice without ellipsis or new axes.
Status fold_strided_slice(OpContext& ctx) {
  const ConstTensor* x;
  std::vector<int64_t> begin, end, strides;
  Status s = need_const(ctx, 0, &x);
  if (s.ok()) s = const_ints(ctx, 1, "begin", &begin);
  if (s.ok()) s = const_ints(ctx, 2, "end", &end);
  if (s.ok()) s = const_ints(ctx, 3, "strides", &strides);
  if (!s.ok()) return s;
  if (ctx.attr_int("ellipsis_mask", 0) || ctx.attr_int("new_axis_mask", 0)) return unsupported("ellipsis or new axes");
  const size_t r = x->dims.size();
  if (begin.size() > r || end.size() != begin.size() || strides.size() != begin.size()) return invalid("slice specs do not match the rank");
  const int64_t bm = ctx.attr_int("begin_mask", 0), em = ctx.attr_int("end_mask", 0), sm = ctx.attr_int("shrink_axis_mask", 0);
  std::vector<std::vector<int64_t>> picks(r);
  std::vector<int64_t> out_dims;
  for (size_t k = 0; k < r; ++k) {
    const int64_t n = x->dims[k];
    if (k >= begin.size()) {
      for (int64_t i = 0; i < n; ++i) picks[k].push_back(i);
      out_dims.push_back(n);
      continue;
    }
    const int64_t st = strides[k];
    if (st == 0) return invalid("stride 0");
    auto clampi = [&](int64_t v, bool is_begin) {
      if (v < 0) v += n;
      return st > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1 + (is_begin ? 0 : 0));
    };
    if (sm >> k & 1) {
      int64_t i = begin[k] < 0 ? begin[k] + n : begin[k];
      if (i < 0 || i >= n) return invalid("shrink index out of range");
      picks[k].push_back(i);
      continue;
    }
    int64_t b = (bm >> k & 1) ? (st > 0 ? 0 : n - 1) : clampi(begin[k], true);
    int64_t e = (em >> k & 1) ? (st > 0 ? n : -1) : clampi(end[k], false);
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st) picks[k].push_back(i);
    out_dims.push_back(static_cast<int64_t>(picks[k].size()));
  }
  ConstTensor out = like(*x, out_dims);
  std::vector<size_t> idx(r, 0);
  bool any = std::all_of(picks.begin(), picks.end(), [](const std::vector<int64_t>& p) { return !p.empty(); });
  while (any) {
    size_t flat = 0;
    for (size_t k = 0; k < r; ++k) flat = flat * static_cast<size_t>(x->dims[k]) + static_cast<size_t>(picks[k][idx[k]]);
    out.values.push_back(x->values[flat]);
    size_t k = r;
    while (k > 0 && ++idx[k - 1] == picks[k - 1].size()) idx[--k] = 0;
    any = k > 0;
  }
  ctx.set_constant(0, std::move(out));
  return Status::Ok();
}

double apply(const std::string& op, double a, double b) {
  if (op == "Add" || op == "AddV2") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "RealDiv" || op == "Div") return a / b;
  if (op == "FloorDiv") return std::floor(a / b);
  if (op == "FloorMod") return a - std::floor(a / b) * b;
  if (op == "Maximum") return std::max(a, b);
  if (op == "Minimum") return std::min(a, b);
  return std::pow(a, b);  // Pow
}

Status fold_binary(OpContext& ctx) {
  const ConstTensor *a, *b;
  Status s = need_const(ctx, 0, &a);
  if (s.ok()) s = need_const(ctx, 1, &b);
  if (!s.ok()) return s;
  std::vector<int64_t> dims;
  if (!broadcast_dims(a->dims, b->dims, &dims)) return invalid(dims_text(a->dims) + " and " + dims_text(b->dims) + " do not broadcast");
  ConstTensor r = like(*a, dims);
  const size_t n = static_cast<size_t>(product(dims)), rank = dims.size();
  r.values.resize(n);
  auto index = [&](const ConstTensor& t, size_t flat) {
    size_t off = 0, stride = 1;
    for (size_t k = rank; k-- > 0;) {
      const size_t coord = flat % static_cast<size_t>(dims[k]);
      flat /= static_cast<size_t>(dims[k]);
      const size_t tk = k + t.dims.size();
      if (tk < rank) continue;  // t has no such axis
      const size_t size = static_cast<size_t>(t.dims[tk - rank]);
      off += (size == 1 ? 0 : coord) * stride;
      stride *= size;
    }
    return off;
  };
  for (size_t i = 0; i < n; ++i) {
    double v = apply(ctx.node.op(), a->values[index(*a, i)], b->values[index(*b, i)]);
    if (!r.is_float() && ctx.node.op() == "RealDiv") v = std::trunc(v);
    r.values[i] = v;
  }
  r.half = false;
  ctx.set_constant(0, std::move(r));
  return Status::Ok();
}

Status fold_neg(OpContext& ctx) {
  const ConstTensor* a;
  Status s = need_const(ctx, 0, &a);
  if (!s.ok()) return s;
  ConstTensor r = *a;
  for (double& v : r.values) v = -v;
  ctx.set_constant(0, std::move(r));
  return Status::Ok();
}

const std::vector<OpSpec>& folders() {
  static const std::vector<OpSpec> ops = {
      {"Identity", fold_identity, 1, 1},     {"IdentityN", fold_identity, 1, 64}, {"Cast", fold_identity, 1, 1},
      {"StopGradient", fold_identity, 1, 1}, {"Shape", fold_shape, 1, 1},         {"Reshape", fold_reshape, 2, 2},
      {"Squeeze", fold_reshape, 1, 1},       {"ExpandDims", fold_reshape, 2, 2},  {"Pack", fold_join, 1, 64},
      {"ConcatV2", fold_join, 2, 65},        {"StridedSlice", fold_strided_slice, 4, 4},
      {"Add", fold_binary, 2, 2},            {"AddV2", fold_binary, 2, 2},        {"Sub", fold_binary, 2, 2},
      {"Mul", fold_binary, 2, 2},            {"RealDiv", fold_binary, 2, 2},      {"FloorDiv", fold_binary, 2, 2},
      {"FloorMod", fold_binary, 2, 2},       {"Maximum", fold_binary, 2, 2},      {"Minimum", fold_binary, 2, 2},
      {"Pow", fold_binary, 2, 2},            {"Neg", fold_neg, 1, 1},
  };
  return ops;
}

}  // namespace

const OpSpec* find_folder(const std::string& op) {
  for (const OpSpec& s : folders()) {
    if (op == s.op) return &s;
  }
  return nullptr;
}

std::vector<std::string> folder_ops() {
  std::vector<std::string> r;
  for (const OpSpec& s : folders()) r.push_back(s.op);
  return r;
}

bool is_postprocessing_op(const std::string& op) {
  static const std::set<std::string> ops = {
      "TopKV2", "GatherNd", "GatherV2", "Gather", "ArgMax", "ArgMin", "NonMaxSuppressionV2", "NonMaxSuppressionV3",
      "NonMaxSuppressionV4", "NonMaxSuppressionV5", "Cast", "FloorDiv", "FloorMod", "Equal", "NotEqual", "Greater",
      "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "Select", "SelectV2", "Where",
      "StridedSlice", "Slice", "Pack", "Unpack", "Range", "Fill", "Tile", "Shape", "Size", "Rank", "Round", "Floor",
      "Ceil", "SquaredDifference", "Exp", "Log", "Prod", "CropAndResize", "OneHot", "ZerosLike", "OnesLike",
      "BroadcastTo", "Split", "SplitV", "Abs", "Sign", "Pow", "Sqrt", "Rsqrt", "Square", "Unique", "SparseToDense",
      "Einsum", "Cumsum", "ClipByValue", "Reciprocal", "Sum", "Max", "Min", "Mean", "All", "Any"};
  return ops.count(op) > 0;
}

bool is_control_flow_op(const std::string& op) {
  static const std::set<std::string> ops = {"Enter", "Exit", "Merge", "Switch", "LoopCond", "NextIteration",
                                            "While", "StatelessWhile", "If", "StatelessIf", "TensorListReserve",
                                            "TensorArrayV3"};
  return ops.count(op) > 0;
}

}  // namespace kestrel::convert::tfjs_import
