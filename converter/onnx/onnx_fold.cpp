// Constant folding over the ONNX graph: nodes whose inputs are all constants become
// constants (weights, shapes, axes) instead of layers. Exporters write flatten/view as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape; folding those chains leaves
// Reshape with a constant target, which Kestrel needs.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {

Status reshape_dims(const std::vector<int64_t>& in, const std::vector<int64_t>& target, bool allowzero,
                    std::vector<int64_t>* out) {
  size_t total = 1;
  for (int64_t d : in) total *= static_cast<size_t>(d);
  *out = target;
  size_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out->size(); ++i) {
    int64_t& d = (*out)[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) return invalid("0 in the target shape has no input dimension to copy");
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) return invalid("two -1 in the target shape");
      infer = static_cast<int>(i);
    } else if (d < 0) {
      return invalid("target shape " + dims_text(target) + " is invalid");
    } else {
      known *= static_cast<size_t>(d);
    }
  }
  if (infer >= 0) (*out)[static_cast<size_t>(infer)] = known ? static_cast<int64_t>(total / known) : 0;
  size_t n = 1;
  for (int64_t d : *out) n *= static_cast<size_t>(d);
  if (n != total) return invalid("cannot reshape " + dims_text(in) + " to " + dims_text(target));
  return Status::Ok();
}

namespace {

const ConstTensor& cin(const OpContext& ctx, size_t i) { return *ctx.constant(i); }

size_t norm_axis(int64_t axis, size_t rank) { return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis); }

Status check_axis(int64_t axis, size_t rank) {
  size_t unused = 0;
  return normalize_axis(axis, rank, "axis", &unused);
}

// Axes from the attribute (older opsets) or input 1 (opset 13 and later).
std::vector<int64_t> axes_of(const OpContext& ctx) {
  if (find_attr(ctx.node, "axes")) return attr_ints(ctx.node, "axes");
  const ConstTensor* c = ctx.constant(1);
  return c ? std::vector<int64_t>(c->values.begin(), c->values.end()) : std::vector<int64_t>{};
}

Status fold_identity(OpContext& ctx) {
  ctx.set_constant(0, cin(ctx, 0));
  return Status::Ok();
}

Status fold_constant(OpContext& ctx) {
  const onnx::AttributeProto* v = find_attr(ctx.node, "value");
  ConstTensor t;
  if (v && v->has_t()) {
    Status s = read_tensor(v->t(), &t);
    if (!s.ok()) return s;
  } else if ((v = find_attr(ctx.node, "value_float"))) {
    t = {{}, {v->f()}, true};
  } else if ((v = find_attr(ctx.node, "value_int"))) {
    t = {{}, {static_cast<double>(v->i())}, false};
  } else if ((v = find_attr(ctx.node, "value_floats"))) {
    t = {{v->floats_size()}, {v->floats().begin(), v->floats().end()}, true};
  } else if ((v = find_attr(ctx.node, "value_ints"))) {
    t = {{v->ints_size()}, {v->ints().begin(), v->ints().end()}, false};
  } else {
    return unsupported("only value, value_float(s) and value_int(s) constants are supported");
  }
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

// Shape of a constant or of a run-time blob (whose batch is 1).
Status fold_shape(OpContext& ctx) {
  std::vector<int64_t> dims;
  if (const ConstTensor* c = ctx.constant(0)) {
    dims = c->dims;
  } else {
    Status s = ctx.shape(ctx.in(0), &dims);
    if (!s.ok()) return s;
  }
  const int64_t r = static_cast<int64_t>(dims.size());
  int64_t start = attr_int(ctx.node, "start", 0), end = attr_int(ctx.node, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r), end = std::clamp<int64_t>(end, start, r);
  ConstTensor t{{end - start}, {dims.begin() + start, dims.begin() + end}, false};
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_cast(OpContext& ctx) {
  ConstTensor t = cin(ctx, 0);
  const int64_t to = attr_int(ctx.node, "to", onnx::TensorProto::FLOAT);
  t.is_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE || to == onnx::TensorProto::FLOAT16;
  if (!t.is_float) {
    for (double& v : t.values) v = std::trunc(v);
  }
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

// Splits dims around `axis` into outer * extent * inner.
void around(const std::vector<int64_t>& dims, size_t axis, size_t* outer, size_t* inner) {
  *outer = 1, *inner = 1;
  for (size_t i = 0; i < axis; ++i) *outer *= static_cast<size_t>(dims[i]);
  for (size_t i = axis + 1; i < dims.size(); ++i) *inner *= static_cast<size_t>(dims[i]);
}

Status fold_gather(OpContext& ctx) {
  const ConstTensor &data = cin(ctx, 0), &idx = cin(ctx, 1);
  if (data.dims.empty()) return invalid("Gather of a scalar");
  const int64_t axis_attr = attr_int(ctx.node, "axis", 0);
  Status s = check_axis(axis_attr, data.dims.size());
  if (!s.ok()) return s;
  const size_t axis = norm_axis(axis_attr, data.dims.size());
  size_t outer, inner;
  around(data.dims, axis, &outer, &inner);
  const int64_t n = data.dims[axis];
  ConstTensor t;
  t.is_float = data.is_float;
  t.dims.assign(data.dims.begin(), data.dims.begin() + static_cast<long>(axis));
  t.dims.insert(t.dims.end(), idx.dims.begin(), idx.dims.end());
  t.dims.insert(t.dims.end(), data.dims.begin() + static_cast<long>(axis) + 1, data.dims.end());
  for (size_t o = 0; o < outer; ++o) {
    for (double iv : idx.values) {
      int64_t k = static_cast<int64_t>(iv);
      if (k < 0) k += n;
      if (k < 0 || k >= n) return invalid("index " + std::to_string(static_cast<int64_t>(iv)) + " is out of range");
      const size_t base = (o * static_cast<size_t>(n) + static_cast<size_t>(k)) * inner;
      t.values.insert(t.values.end(), data.values.begin() + static_cast<long>(base),
                      data.values.begin() + static_cast<long>(base + inner));
    }
  }
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_unsqueeze(OpContext& ctx) {
  ConstTensor t = cin(ctx, 0);
  std::vector<int64_t> axes = axes_of(ctx);
  const int64_t r = static_cast<int64_t>(t.dims.size() + axes.size());
  for (int64_t& a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) {
    if (a < 0 || a > static_cast<int64_t>(t.dims.size())) return invalid("axis out of range");
    t.dims.insert(t.dims.begin() + a, 1);
  }
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_squeeze(OpContext& ctx) {
  ConstTensor t = cin(ctx, 0);
  std::vector<int64_t> axes = axes_of(ctx);
  const int64_t r = static_cast<int64_t>(t.dims.size());
  std::vector<bool> drop(t.dims.size(), axes.empty());
  for (int64_t a : axes) {
    if (a < -r || a >= r) return invalid("axis out of range");
    drop[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (!drop[i] || t.dims[i] != 1) dims.push_back(t.dims[i]);
  }
  t.dims = dims;
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_concat(OpContext& ctx) {
  const ConstTensor& first = cin(ctx, 0);
  const int64_t axis_attr = attr_int(ctx.node, "axis", 0);
  Status s = check_axis(axis_attr, first.dims.size());
  if (!s.ok()) return s;
  const size_t axis = norm_axis(axis_attr, first.dims.size());
  ConstTensor t;
  t.dims = first.dims;
  t.dims[axis] = 0;
  t.is_float = first.is_float;
  size_t outer, inner;
  around(first.dims, axis, &outer, &inner);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ConstTensor& c = cin(ctx, i);
    if (c.dims.size() != first.dims.size()) return invalid("inputs differ in rank");
    t.dims[axis] += c.dims[axis];
  }
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ConstTensor& c = cin(ctx, i);
      const size_t len = static_cast<size_t>(c.dims[axis]) * inner;
      t.values.insert(t.values.end(), c.values.begin() + static_cast<long>(o * len),
                      c.values.begin() + static_cast<long>((o + 1) * len));
    }
  }
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

// Calls fn(flat index in `dims`, multi-index) for every element, innermost fastest.
void for_each_index(const std::vector<int64_t>& dims, const std::function<void(const std::vector<int64_t>&)>& fn) {
  size_t total = 1;
  for (int64_t d : dims) total *= static_cast<size_t>(d);
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t n = 0; n < total; ++n) {
    fn(idx);
    for (size_t a = dims.size(); a-- > 0;) {
      if (++idx[a] < dims[a]) break;
      idx[a] = 0;
    }
  }
}

size_t flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  size_t f = 0;
  for (size_t a = 0; a < dims.size(); ++a) f = f * static_cast<size_t>(dims[a]) + static_cast<size_t>(idx[a]);
  return f;
}

Status fold_slice(OpContext& ctx) {
  const ConstTensor& data = cin(ctx, 0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = attr_ints(ctx.node, "starts"), ends = attr_ints(ctx.node, "ends"), axes = attr_ints(ctx.node, "axes");
  } else {
    if (ctx.in(1).empty() || ctx.in(2).empty()) return invalid("starts and ends are required");
    starts.assign(cin(ctx, 1).values.begin(), cin(ctx, 1).values.end());
    ends.assign(cin(ctx, 2).values.begin(), cin(ctx, 2).values.end());
    if (!ctx.in(3).empty()) axes.assign(cin(ctx, 3).values.begin(), cin(ctx, 3).values.end());
    if (!ctx.in(4).empty()) steps.assign(cin(ctx, 4).values.begin(), cin(ctx, 4).values.end());
  }
  const size_t r = data.dims.size();
  std::vector<int64_t> begin(r, 0), step(r, 1), dims = data.dims;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    Status s = check_axis(a, r);
    if (!s.ok()) return s;
    const size_t ax = norm_axis(a, r);
    const int64_t n = data.dims[ax], st = steps.empty() ? 1 : steps[i];
    if (st == 0) return invalid("step 0");
    int64_t b = starts[i] < 0 ? starts[i] + n : starts[i], e = ends[i] < 0 ? ends[i] + n : ends[i];
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, n), e = std::clamp<int64_t>(e, 0, n);
      dims[ax] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1), e = std::clamp<int64_t>(e, -1, n - 1);
      dims[ax] = b > e ? (b - e - st - 1) / -st : 0;
    }
    begin[ax] = b, step[ax] = st;
  }
  ConstTensor t{dims, {}, data.is_float};
  for_each_index(dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src(r);
    for (size_t a = 0; a < r; ++a) src[a] = begin[a] + idx[a] * step[a];
    t.values.push_back(data.values[flat(data.dims, src)]);
  });
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

// Exporters transpose weights in the graph (PyTorch's Linear without bias: a
// Transpose of the weight before MatMul).
Status fold_transpose(OpContext& ctx) {
  const ConstTensor& data = cin(ctx, 0);
  const size_t r = data.dims.size();
  std::vector<int64_t> perm = attr_ints(ctx.node, "perm");
  if (perm.empty()) {
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != r) return invalid("perm " + dims_text(perm) + " does not match rank " + std::to_string(r));
  std::vector<int64_t> dims(r);
  for (size_t i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(r)) return invalid("perm " + dims_text(perm) + " is invalid");
    dims[i] = data.dims[static_cast<size_t>(perm[i])];
  }
  ConstTensor t{dims, {}, data.is_float};
  for_each_index(dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src(r);
    for (size_t i = 0; i < r; ++i) src[static_cast<size_t>(perm[i])] = idx[i];
    t.values.push_back(data.values[flat(data.dims, src)]);
  });
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

// Numpy broadcasting of two constants.
Status fold_binary(OpContext& ctx) {
  const ConstTensor &a = cin(ctx, 0), &b = cin(ctx, 1);
  std::vector<int64_t> dims;
  if (!broadcast_dims(a.dims, b.dims, &dims)) return invalid("shapes do not broadcast");
  const size_t r = dims.size();
  auto padded = [r](const std::vector<int64_t>& d) {
    std::vector<int64_t> p(r - d.size(), 1);
    p.insert(p.end(), d.begin(), d.end());
    return p;
  };
  const std::vector<int64_t> da = padded(a.dims), db = padded(b.dims);
  const std::string& op = ctx.node.op_type();
  const bool is_float = a.is_float || b.is_float;
  ConstTensor t{dims, {}, is_float};
  for_each_index(dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> ia(r), ib(r);
    for (size_t i = 0; i < r; ++i) ia[i] = da[i] == 1 ? 0 : idx[i], ib[i] = db[i] == 1 ? 0 : idx[i];
    const double x = a.values[flat(da, ia)], y = b.values[flat(db, ib)];
    double v = 0;
    if (op == "Add") v = x + y;
    else if (op == "Sub") v = x - y;
    else if (op == "Mul") v = x * y;
    else v = is_float ? x / y : (y == 0 ? 0 : std::trunc(x / y));  // integer division truncates
    t.values.push_back(v);
  });
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_reshape(OpContext& ctx) {
  ConstTensor t = cin(ctx, 0);
  std::vector<int64_t> target(cin(ctx, 1).values.begin(), cin(ctx, 1).values.end()), dims;
  Status s = reshape_dims(t.dims, target, attr_int(ctx.node, "allowzero", 0) != 0, &dims);
  if (!s.ok()) return s;
  t.dims = dims;
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_constant_of_shape(OpContext& ctx) {
  ConstTensor t{{cin(ctx, 0).values.begin(), cin(ctx, 0).values.end()}, {}, true};
  double v = 0;
  if (const onnx::AttributeProto* a = find_attr(ctx.node, "value")) {
    ConstTensor value;
    Status s = read_tensor(a->t(), &value);
    if (!s.ok()) return s;
    if (value.values.size() != 1) return invalid("value must hold one element");
    v = value.values[0];
    t.is_float = value.is_float;
  }
  t.values.assign(t.count(), v);
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

Status fold_range(OpContext& ctx) {
  const double start = cin(ctx, 0).values.at(0), limit = cin(ctx, 1).values.at(0), delta = cin(ctx, 2).values.at(0);
  if (delta == 0) return invalid("delta 0");
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(std::ceil((limit - start) / delta)), 0);
  if (n > INT_MAX) return invalid("range too long");
  ConstTensor t{{n}, {}, cin(ctx, 0).is_float};
  for (int64_t i = 0; i < n; ++i) t.values.push_back(start + static_cast<double>(i) * delta);
  ctx.set_constant(0, std::move(t));
  return Status::Ok();
}

constexpr OpSpec kFolders[] = {
    {"Identity", fold_identity, 1, 1},
    {"Constant", fold_constant, 0, 0},
    {"Shape", fold_shape, 1, 1},
    {"Cast", fold_cast, 1, 1},
    {"Gather", fold_gather, 2, 2},
    {"Unsqueeze", fold_unsqueeze, 1, 2},
    {"Squeeze", fold_squeeze, 1, 2},
    {"Concat", fold_concat, 1, INT_MAX},
    {"Slice", fold_slice, 1, 5},
    {"Add", fold_binary, 2, 2},
    {"Sub", fold_binary, 2, 2},
    {"Mul", fold_binary, 2, 2},
    {"Div", fold_binary, 2, 2},
    {"Reshape", fold_reshape, 2, 2},
    {"ConstantOfShape", fold_constant_of_shape, 1, 1},
    {"Range", fold_range, 3, 3},
    {"Transpose", fold_transpose, 1, 1},
};

}  // namespace

const OpSpec* find_folder(const std::string& type) {
  for (const OpSpec& f : kFolders) {
    if (type == f.type) return &f;
  }
  return nullptr;
}

std::vector<std::string> folder_types() {
  std::vector<std::string> r;
  for (const OpSpec& f : kFolders) r.push_back(f.type);
  return r;
}

}  // namespace kestrel::convert::onnx_import
