// ONNX shape and routing ops on run-time blobs -> Kestrel nodes: Flatten, Reshape,
// Transpose, Concat, Split, Slice, Squeeze/Unsqueeze, Pad and the reductions. Axes are
// translated to Kestrel's by the blob's layout (onnx_ops.h); an op that works on the
// dropped batch axis of a batched blob first makes it batchless.
#include <algorithm>
#include <climits>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {
namespace {

Status input_and_shape(const OpContext& ctx, std::string* x, std::vector<int64_t>* dims) {
  Status s = ctx.blob(0, x);
  return s.ok() ? ctx.shape(*x, dims) : s;
}

// Axes from the attribute (older opsets) or the constant input `index` (newer ones).
Status axes_input(const OpContext& ctx, size_t index, std::vector<int64_t>* axes) {
  if (find_attr(ctx.node, "axes")) {
    *axes = attr_ints(ctx.node, "axes");
    return Status::Ok();
  }
  axes->clear();
  return ctx.in(index).empty() ? Status::Ok() : const_ints(ctx, index, "axes", axes);
}

// Output 0 as x reshaped to ONNX `out`, batched when x is and `out` can be.
Status reshape_to(OpContext& ctx, const std::string& x, const std::vector<int64_t>& out) {
  bool batched = false;
  Status s = pick_layout(out, ctx.batched(x), &batched);
  std::string y = ctx.out(0);
  return s.ok() ? ctx.reshape(x, out, batched, &y) : s;
}

// Flatten to [prod(dims before axis), prod(the rest)]: Kestrel's Flatten when the first
// is 1 (the result is a batched [1,N]), else a Reshape.
Status convert_flatten(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  int64_t axis = attr_int(ctx.node, "axis", 1);
  const int64_t r = static_cast<int64_t>(in.size());
  if (axis < -r || axis > r) return invalid("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += r;
  const std::vector<int64_t> out = {product(in, 0, static_cast<size_t>(axis)), product(in, static_cast<size_t>(axis))};
  if (out[0] != 1) return reshape_to(ctx, x, out);
  ctx.set_batched(ctx.out(0), true);
  ctx.add("Flatten", fb::FlattenParamT{}, {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_reshape(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, target, out;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  if (ctx.opset < 5) {
    target = attr_ints(ctx.node, "shape");
  } else if (!(s = const_ints(ctx, 1, "the target shape", &target)).ok()) {
    return s;
  }
  const bool allowzero = attr_int(ctx.node, "allowzero", 0) != 0;
  if (!(s = reshape_dims(in, target, allowzero, &out)).ok()) return s;
  bool batched = false;
  if (!(s = pick_layout(out, ctx.batched(x), &batched)).ok()) return s;
  // Batch to batch: the rest of the target means the same to Kestrel (0 copies the
  // same dim, -1 infers from the same count), which keeps exporters' view(n, -1).
  if (batched && ctx.batched(x) && !allowzero && (target[0] == 0 || target[0] == 1)) {
    fb::ReshapeParamT p;
    for (size_t i = 1; i < target.size(); ++i) p.shape.push_back(clamp_int(target[i]));
    ctx.set_batched(ctx.out(0), true);
    ctx.add("Reshape", std::move(p), {x}, {ctx.out(0)});
    return Status::Ok();
  }
  std::string y = ctx.out(0);
  return ctx.reshape(x, out, batched, &y);
}

Status convert_transpose(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  std::vector<int64_t> perm = attr_ints(ctx.node, "perm");
  if (perm.empty()) {
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != in.size()) {
    return invalid("perm " + dims_text(perm) + " does not match rank " + std::to_string(in.size()));
  }
  // A batched blob keeps its batch when axis 0 stays in place.
  const bool keep_batch = ctx.batched(x) && perm[0] == 0;
  std::vector<int> order;
  const std::vector<int64_t> moved = keep_batch ? std::vector<int64_t>(perm.begin() + 1, perm.end()) : perm;
  if (!(s = kestrel_axes_of(ctx, &x, moved, "perm entry", &order)).ok()) return s;
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i)) return invalid("perm " + dims_text(perm) + " is not a permutation");
  }
  fb::PermuteParamT p;
  p.order = order;
  ctx.set_batched(ctx.out(0), ctx.batched(x));
  ctx.add("Permute", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

// Concat: batched when every input can be (dim 0 of 1) and the axis is not 0, else on
// batchless inputs.
Status convert_concat(OpContext& ctx) {
  std::vector<std::string> inputs(ctx.num_inputs());
  std::vector<int64_t> in;
  bool can_batch = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status s = ctx.blob(i, &inputs[i]);
    if (s.ok()) s = ctx.shape(inputs[i], &in);
    if (!s.ok()) return s;
    can_batch = can_batch && in.size() >= 2 && in[0] == 1;
  }
  size_t axis = 0;
  Status s = normalize_axis(attr_int(ctx.node, "axis", ctx.opset < 4 ? 1 : 0), in.size(), "axis", &axis);
  if (!s.ok()) return s;
  const bool batched = can_batch && axis != 0;
  for (std::string& x : inputs) {
    if (!(s = batched ? ctx.as_batched(x, &x) : ctx.as_batchless(x, &x)).ok()) return s;
  }
  fb::ConcatParamT p;
  p.axis = static_cast<int>(axis) - (batched ? 1 : 0);
  ctx.set_batched(ctx.out(0), batched);
  ctx.add("Concat", std::move(p), inputs, {ctx.out(0)});
  return Status::Ok();
}

Status convert_split(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  size_t axis = 0;
  if (!(s = normalize_axis(attr_int(ctx.node, "axis", 0), in.size(), "axis", &axis)).ok()) return s;
  std::vector<int64_t> split = attr_ints(ctx.node, "split");
  if (split.empty() && !ctx.in(1).empty() && !(s = const_ints(ctx, 1, "split", &split)).ok()) return s;
  const int64_t parts = ctx.node.output_size(), len = in[axis];
  if (split.empty()) {
    // Equal parts; from opset 18 the last may be smaller.
    const int64_t chunk = (len + parts - 1) / parts;
    if (ctx.opset < 18 && len % parts != 0) {
      return invalid("axis of " + std::to_string(len) + " in " + std::to_string(parts) + " equal parts");
    }
    for (int64_t at = 0; at < len; at += chunk) split.push_back(std::min(chunk, len - at));
  }
  if (static_cast<int64_t>(split.size()) != parts) {
    return invalid(std::to_string(split.size()) + " split sizes for " + std::to_string(parts) + " outputs");
  }
  fb::SliceParamT p;
  int64_t at = 0;
  for (int64_t part : split) {
    if (part <= 0) return unsupported("an empty part (split " + dims_text(split) + "): Kestrel has no empty tensors");
    if (at > 0) p.points.push_back(clamp_int(at));
    at += part;
  }
  if (at != len) return invalid("split sizes " + dims_text(split) + " do not add up to " + std::to_string(len));
  std::vector<int> k;
  if (!(s = kestrel_axes_of(ctx, &x, {static_cast<int64_t>(axis)}, "axis", &k)).ok()) return s;
  p.axis = k[0];
  for (const std::string& o : ctx.node.output()) ctx.set_batched(o, ctx.batched(x));
  ctx.add("Slice", std::move(p), {x}, std::vector<std::string>(ctx.node.output().begin(), ctx.node.output().end()));
  return Status::Ok();
}

// Slice -> Crop's ONNX form (positive steps). On a batched blob an entry for the batch
// axis keeps its only element and is dropped.
Status convert_slice(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = attr_ints(ctx.node, "starts"), ends = attr_ints(ctx.node, "ends"), axes = attr_ints(ctx.node, "axes");
  } else {
    s = const_ints(ctx, 1, "starts", &starts);
    if (s.ok()) s = const_ints(ctx, 2, "ends", &ends);
    if (s.ok() && !ctx.in(3).empty()) s = const_ints(ctx, 3, "axes", &axes);
    if (s.ok() && !ctx.in(4).empty()) s = const_ints(ctx, 4, "steps", &steps);
    if (!s.ok()) return s;
  }
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size())) {
    return invalid("starts, ends, axes and steps differ in length");
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  fb::CropParamT p;
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = 0;
    if (!(s = normalize_axis(axes[i], in.size(), "axis", &a)).ok()) return s;
    const int64_t step = steps.empty() ? 1 : steps[i], n = in[a];
    if (step <= 0) return unsupported("step " + std::to_string(step) + " (Kestrel's Crop takes positive steps)");
    const int64_t b = std::clamp<int64_t>(starts[i] < 0 ? starts[i] + n : starts[i], 0, n);
    const int64_t e = std::clamp<int64_t>(ends[i] < 0 ? ends[i] + n : ends[i], 0, n);
    if (e <= b) return unsupported("an empty slice of axis " + std::to_string(a) + ": Kestrel has no empty tensors");
    if (a == 0 && ctx.batched(x)) continue;
    p.axes.push_back(static_cast<int>(a) - (ctx.batched(x) ? 1 : 0));
    p.starts.push_back(static_cast<int>(b));
    p.ends.push_back(static_cast<int>(e));
    p.steps.push_back(clamp_int(step));
  }
  if (p.axes.empty()) {
    ctx.add("Dropout", fb::DropoutParamT{}, {x}, {ctx.out(0)});
    return Status::Ok();
  }
  ctx.add("Crop", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

// Gather with constant indices on a run-time blob: Crop windows along the axis (one
// when the indices step evenly upwards, else one per index and a Concat), then the
// indices' shape in place of the axis.
Status convert_gather(OpContext& ctx) {
  constexpr size_t kMaxPieces = 64;
  std::string x;
  std::vector<int64_t> in, idx;
  Status s = input_and_shape(ctx, &x, &in);
  if (s.ok()) s = const_ints(ctx, 1, "indices", &idx);
  if (!s.ok()) return s;
  const std::vector<int64_t>& idx_dims = ctx.constant(1)->dims;
  size_t axis = 0;
  if (!(s = normalize_axis(attr_int(ctx.node, "axis", 0), in.size(), "axis", &axis)).ok()) return s;
  if (idx.empty()) return unsupported("no indices: Kestrel has no empty tensors");
  for (int64_t& i : idx) {
    if (i < -in[axis] || i >= in[axis]) return invalid("index " + std::to_string(i) + " is out of range");
    if (i < 0) i += in[axis];
  }
  std::vector<int> k;
  if (!(s = kestrel_axes_of(ctx, &x, {static_cast<int64_t>(axis)}, "axis", &k)).ok()) return s;
  const int64_t step = idx.size() > 1 ? idx[1] - idx[0] : 1;
  bool even = step > 0;
  for (size_t i = 1; i < idx.size(); ++i) even = even && idx[i] - idx[i - 1] == step;
  if (!even && idx.size() > kMaxPieces) {
    return unsupported(std::to_string(idx.size()) + " scattered indices (at most " + std::to_string(kMaxPieces) + ")");
  }
  std::vector<int64_t> gathered = in, out(in.begin(), in.begin() + static_cast<long>(axis));
  gathered[axis] = static_cast<int64_t>(idx.size());
  out.insert(out.end(), idx_dims.begin(), idx_dims.end());
  out.insert(out.end(), in.begin() + static_cast<long>(axis) + 1, in.end());
  const bool direct = out == gathered;
  const std::string y = direct ? ctx.out(0) : ctx.new_blob("/gathered", ctx.batched(x));
  ctx.set_batched(y, ctx.batched(x));
  auto crop = [&](int64_t first, int64_t last, int64_t st, const std::string& to, const std::string& suffix) {
    fb::CropParamT p;
    p.axes = {k[0]};
    p.starts = {clamp_int(first)}, p.ends = {clamp_int(last + 1)}, p.steps = {clamp_int(st)};
    ctx.add("Crop", std::move(p), {x}, {to}, suffix);
  };
  if (even) {
    crop(idx.front(), idx.back(), step, y, "");
  } else {
    std::vector<std::string> pieces;
    for (size_t i = 0; i < idx.size(); ++i) {
      pieces.push_back(ctx.new_blob("/index" + std::to_string(i), ctx.batched(x)));
      crop(idx[i], idx[i], 1, pieces.back(), "/crop" + std::to_string(i));
    }
    fb::ConcatParamT p;
    p.axis = k[0];
    ctx.add("Concat", std::move(p), pieces, {y}, "/concat");
  }
  return direct ? Status::Ok() : reshape_to(ctx, y, out);
}

// Squeeze and Unsqueeze: Kestrel's own layers when the batch stays where it is, else a
// Reshape (the values keep their order either way).
Status convert_squeeze(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, axes, out;
  Status s = input_and_shape(ctx, &x, &in);
  if (s.ok()) s = axes_input(ctx, 1, &axes);
  if (!s.ok()) return s;
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : axes) {
    size_t k = 0;
    if (!(s = normalize_axis(a, in.size(), "axis", &k)).ok()) return s;
    if (in[k] != 1) return invalid("axis " + std::to_string(a) + " of " + dims_text(in) + " is not 1");
    drop[k] = true;
  }
  fb::SqueezeParamT p;
  const size_t shift = ctx.batched(x) ? 1 : 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (axes.empty()) drop[i] = in[i] == 1;
    if (!drop[i]) out.push_back(in[i]);
    if (drop[i] && i >= shift) p.axes.push_back(static_cast<int>(i - shift));
  }
  if (out.empty()) return unsupported("squeezing " + dims_text(in) + " to a scalar");
  if ((shift && drop[0]) || p.axes.empty()) return reshape_to(ctx, x, out);
  ctx.add("Squeeze", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_unsqueeze(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, axes;
  Status s = input_and_shape(ctx, &x, &in);
  if (s.ok()) s = axes_input(ctx, 1, &axes);
  if (!s.ok()) return s;
  const size_t rank = in.size() + axes.size(), shift = ctx.batched(x) ? 1 : 0;
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    size_t k = 0;
    if (!(s = normalize_axis(a, rank, "axis", &k)).ok()) return s;
    if (inserted[k]) return invalid("axes " + dims_text(axes) + " repeat an axis");
    inserted[k] = true;
  }
  std::vector<int64_t> out;
  fb::UnsqueezeParamT p;
  for (size_t i = 0, next = 0; i < rank; ++i) {
    out.push_back(inserted[i] ? 1 : in[next++]);
    if (inserted[i] && i >= shift) p.axes.push_back(static_cast<int>(i - shift));
  }
  if ((shift && inserted[0]) || rank - shift > 4) return reshape_to(ctx, x, out);
  ctx.add("Unsqueeze", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_pad(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, pads, axes;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  fb::PaddingParamT p;
  if (ctx.opset < 11) {
    pads = attr_ints(ctx.node, find_attr(ctx.node, "paddings") ? "paddings" : "pads");
    p.value = attr_float(ctx.node, "value", 0.f);
  } else {
    if (!(s = const_ints(ctx, 1, "pads", &pads)).ok()) return s;
    if (!ctx.in(2).empty()) {
      const ConstTensor* v = ctx.constant(2);
      if (!v || v->count() != 1) return unsupported("constant_value must be a scalar constant");
      p.value = static_cast<float>(v->values[0]);
    }
    if (!ctx.in(3).empty() && !(s = const_ints(ctx, 3, "axes", &axes)).ok()) return s;
  }
  const std::string mode = attr_string(ctx.node, "mode", "constant");
  if (mode == "constant") p.mode = fb::PadType::Constant;
  else if (mode == "edge") p.mode = fb::PadType::Edge;
  else if (mode == "reflect") p.mode = fb::PadType::Reflect;
  else return unsupported("mode '" + mode + "'");
  const size_t r = in.size();
  if (axes.empty()) {
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (pads.size() != 2 * axes.size()) {
    return invalid(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  }
  // Begin then end pad of every ONNX axis.
  std::vector<int64_t> full(2 * r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = 0;
    if (!(s = normalize_axis(axes[i], r, "axis", &a)).ok()) return s;
    full[a] = pads[i], full[r + a] = pads[axes.size() + i];
  }
  if ((full[0] != 0 || full[r] != 0) && !(s = ctx.as_batchless(x, &x)).ok()) return s;
  const size_t shift = ctx.batched(x) ? 1 : 0;
  for (size_t half = 0; half < 2; ++half) {
    for (size_t i = shift; i < r; ++i) p.pads.push_back(clamp_int(full[half * r + i]));
  }
  ctx.set_batched(ctx.out(0), ctx.batched(x));
  ctx.add("Padding", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

template <fb::ReduceOp kOp>
Status convert_reduce(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, axes;
  Status s = input_and_shape(ctx, &x, &in);
  if (s.ok()) s = axes_input(ctx, 1, &axes);
  if (!s.ok()) return s;
  fb::ReduceParamT p;
  p.op = kOp;
  p.keepdims = attr_int(ctx.node, "keepdims", 1) != 0;
  if (axes.empty() && attr_int(ctx.node, "noop_with_empty_axes", 0) != 0) {
    ctx.add("Dropout", fb::DropoutParamT{}, {x}, {ctx.out(0)});
    return Status::Ok();
  }
  std::vector<bool> reduced(in.size(), axes.empty());
  for (int64_t a : axes) {
    size_t k = 0;
    if (!(s = normalize_axis(a, in.size(), "axis", &k)).ok()) return s;
    reduced[k] = true;
  }
  if (!p.keepdims && std::count(reduced.begin(), reduced.end(), false) == 0) {
    return unsupported("reducing every axis without keepdims gives a scalar");
  }
  // A batched blob's batch (extent 1) reduces to itself: kept, nothing changes; dropped
  // (keepdims 0), the result is batchless with the same Kestrel shape.
  const size_t shift = ctx.batched(x) ? 1 : 0;
  for (size_t i = shift; i < in.size(); ++i) {
    if (reduced[i]) p.axes.push_back(static_cast<int>(i - shift));
  }
  ctx.set_batched(ctx.out(0), shift && !(reduced[0] && !p.keepdims));
  if (p.axes.empty()) {
    ctx.add("Dropout", fb::DropoutParamT{}, {x}, {ctx.out(0)});
    return Status::Ok();
  }
  ctx.add("Reduce", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

const std::vector<OpSpec> kOps = {
    {"Flatten", convert_flatten, 1, 1},
    {"Reshape", convert_reshape, 1, 2},
    {"Transpose", convert_transpose, 1, 1},
    {"Concat", convert_concat, 1, INT_MAX},
    {"Split", convert_split, 1, 2},
    {"Slice", convert_slice, 1, 5},
    {"Gather", convert_gather, 2, 2},
    {"Squeeze", convert_squeeze, 1, 2},
    {"Unsqueeze", convert_unsqueeze, 1, 2},
    {"Pad", convert_pad, 1, 4},
    {"ReduceMean", convert_reduce<fb::ReduceOp::Mean>, 1, 2},
    {"ReduceMax", convert_reduce<fb::ReduceOp::Max>, 1, 2},
};

}  // namespace

const std::vector<OpSpec>& shape_ops() { return kOps; }

}  // namespace kestrel::convert::onnx_import
