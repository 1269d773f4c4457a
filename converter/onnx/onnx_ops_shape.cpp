// ONNX shape and routing ops on run-time blobs -> Kestrel nodes: Flatten, Reshape,
// Transpose, Concat, Split, Slice, Squeeze/Unsqueeze, Pad, Resize/Upsample and the
// reductions. ONNX axes count the batch, Kestrel's do not: every axis is translated
// by kestrel_axis(), and an op that would change the batch axis is refused.
#include <algorithm>
#include <climits>
#include <cmath>

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

Status convert_flatten(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  const int64_t axis = attr_int(ctx.node, "axis", 1);
  // With batch 1, axis 0 and 1 both give [1, everything]; a later axis would make
  // the leading extent (the batch in Kestrel's convention) larger than 1.
  if (axis != 0 && axis != 1) return unsupported("axis " + std::to_string(axis) + " (only 0 and 1)");
  ctx.add("Flatten", fb::FlattenParamT{}, {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_reshape(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  std::vector<int64_t> target;
  if (ctx.opset < 5) {
    target = attr_ints(ctx.node, "shape");
  } else if (!(s = const_ints(ctx, 1, "the target shape", &target)).ok()) {
    return s;
  }
  if (target.empty()) return unsupported("reshape to a scalar");
  // Kestrel tensors have at most 4 dims besides the batch: refuse here, at the node
  // that asks for more, rather than fail later at a reader.
  if (target.size() > 5) {
    return unsupported("target shape " + dims_text(target) + " has " + std::to_string(target.size() - 1) +
                       " dims besides the batch (at most 4)");
  }
  if (target[0] != 1 && target[0] != 0 && target[0] != -1) {
    return unsupported("target shape " + dims_text(target) + " changes the batch");
  }
  if (attr_int(ctx.node, "allowzero", 0) != 0 && std::count(target.begin(), target.end(), 0) > 0) {
    return unsupported("allowzero with 0 in the target shape");
  }
  fb::ReshapeParamT p;
  for (size_t i = 1; i < target.size(); ++i) p.shape.push_back(clamp_int(target[i]));
  ctx.add("Reshape", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
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
  if (perm.size() != in.size() || perm[0] != 0) return unsupported("perm " + dims_text(perm) + " moves the batch axis");
  fb::PermuteParamT p;
  for (size_t i = 1; i < perm.size(); ++i) {
    int a = 0;
    if (!(s = kestrel_axis(perm[i], in.size(), "perm entry", &a)).ok()) return s;
    p.order.push_back(a);
  }
  ctx.add("Permute", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_concat(OpContext& ctx) {
  std::vector<std::string> inputs(ctx.num_inputs());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status s = ctx.blob(i, &inputs[i]);
    if (!s.ok()) return s;
  }
  std::vector<int64_t> in;
  Status s = ctx.shape(inputs[0], &in);
  fb::ConcatParamT p;
  if (s.ok()) s = kestrel_axis(attr_int(ctx.node, "axis", 1), in.size(), "axis", &p.axis);
  if (!s.ok()) return s;
  ctx.add("Concat", std::move(p), inputs, {ctx.out(0)});
  return Status::Ok();
}

Status convert_split(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  const int64_t axis = attr_int(ctx.node, "axis", 0);
  fb::SliceParamT p;
  if (!(s = kestrel_axis(axis, in.size(), "axis", &p.axis)).ok()) return s;
  std::vector<int64_t> split = attr_ints(ctx.node, "split");
  if (split.empty() && !ctx.in(1).empty() && !(s = const_ints(ctx, 1, "split", &split)).ok()) return s;
  const size_t parts = static_cast<size_t>(ctx.node.output_size());
  if (!split.empty()) {
    if (split.size() != parts) return invalid(std::to_string(split.size()) + " split sizes for " + std::to_string(parts) + " outputs");
    int64_t at = 0;
    for (size_t i = 0; i + 1 < split.size(); ++i) p.points.push_back(clamp_int(at += split[i]));
    if (at + split.back() != in[static_cast<size_t>(p.axis) + 1]) return invalid("split sizes do not add up to the axis");
  } else if (in[static_cast<size_t>(p.axis) + 1] % static_cast<int64_t>(parts) != 0) {
    return unsupported("uneven equal split");
  }
  ctx.add("Slice", std::move(p), {x}, std::vector<std::string>(ctx.node.output().begin(), ctx.node.output().end()));
  return Status::Ok();
}

// Slice -> Crop's ONNX form. A batch-axis entry is accepted only when it keeps the
// (single) batch element.
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
  fb::CropParamT p;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step <= 0) return unsupported("step " + std::to_string(step) + " (only positive steps)");
    const int64_t r = static_cast<int64_t>(in.size());
    if (a == 0 || a == -r) {
      if (starts[i] != 0 && starts[i] != -1) return unsupported("slicing the batch axis");
      if (ends[i] <= 0 && ends[i] > -1) return unsupported("an empty batch");
      continue;
    }
    int k = 0;
    if (!(s = kestrel_axis(a, in.size(), "axis", &k)).ok()) return s;
    p.axes.push_back(k);
    p.starts.push_back(clamp_int(starts[i]));
    p.ends.push_back(clamp_int(ends[i]));
    p.steps.push_back(clamp_int(step));
  }
  ctx.add("Crop", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_squeeze(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, axes;
  Status s = input_and_shape(ctx, &x, &in);
  if (s.ok()) s = axes_input(ctx, 1, &axes);
  if (!s.ok()) return s;
  fb::SqueezeParamT p;
  if (axes.empty()) {
    // All size-1 axes but the batch.
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i] == 1) p.axes.push_back(static_cast<int>(i - 1));
    }
  }
  for (int64_t a : axes) {
    int k = 0;
    if (!(s = kestrel_axis(a, in.size(), "axis", &k)).ok()) return s;
    p.axes.push_back(k);
  }
  ctx.add("Squeeze", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_unsqueeze(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, axes;
  Status s = input_and_shape(ctx, &x, &in);
  if (s.ok()) s = axes_input(ctx, 1, &axes);
  if (!s.ok()) return s;
  fb::UnsqueezeParamT p;
  const size_t out_rank = in.size() + axes.size();
  for (int64_t a : axes) {
    int k = 0;
    if (!(s = kestrel_axis(a, out_rank, "axis", &k)).ok()) return s;
    p.axes.push_back(k);
  }
  std::sort(p.axes.begin(), p.axes.end());
  ctx.add("Unsqueeze", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

Status convert_pad(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in, pads;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  fb::PaddingParamT p;
  if (ctx.opset < 11) {
    pads = attr_ints(ctx.node, "pads");
    p.value = attr_float(ctx.node, "value", 0.f);
  } else {
    if (!(s = const_ints(ctx, 1, "pads", &pads)).ok()) return s;
    if (!ctx.in(2).empty()) {
      const ConstTensor* v = ctx.constant(2);
      if (!v || v->count() != 1) return unsupported("constant_value must be a scalar constant");
      p.value = static_cast<float>(v->values[0]);
    }
    if (!ctx.in(3).empty()) return unsupported("the axes input");
  }
  const std::string mode = attr_string(ctx.node, "mode", "constant");
  if (mode == "constant") p.mode = fb::PadType::Constant;
  else if (mode == "edge") p.mode = fb::PadType::Edge;
  else if (mode == "reflect") p.mode = fb::PadType::Reflect;
  else return unsupported("mode '" + mode + "'");
  const size_t r = in.size();
  if (pads.size() != 2 * r) return invalid(std::to_string(pads.size()) + " pads for rank " + std::to_string(r));
  if (pads[0] != 0 || pads[r] != 0) return unsupported("padding the batch axis");
  for (size_t half = 0; half < 2; ++half) {
    for (size_t i = 1; i < r; ++i) {
      if (pads[half * r + i] < 0) return unsupported("negative pads");
      p.pads.push_back(clamp_int(pads[half * r + i]));
    }
  }
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
    return unsupported("noop_with_empty_axes");
  }
  // The batch (extent 1) reduces to itself: fine when kept, but dropping it would
  // change Kestrel's convention.
  bool batch = axes.empty();
  for (int64_t a : axes) {
    const int64_t r = static_cast<int64_t>(in.size());
    if (a == 0 || a == -r) {
      batch = true;
      continue;
    }
    int k = 0;
    if (!(s = kestrel_axis(a, in.size(), "axis", &k)).ok()) return s;
    p.axes.push_back(k);
  }
  if (batch && !p.keepdims) return unsupported("reducing away the batch axis (keepdims 0)");
  ctx.add("Reduce", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

// Resize (opset 10+) and Upsample: the modes whose coordinate mapping equals Interp's.
Status convert_resize(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = input_and_shape(ctx, &x, &in);
  if (!s.ok()) return s;
  if (in.size() != 4) return unsupported("only 4-D inputs");
  const bool upsample = ctx.node.op_type() == "Upsample";
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  // Upsample: scales attr (opset 7-8) or input 1; Resize 10: input 1; 11+: 2 and 3.
  const size_t scales_at = upsample || ctx.opset < 11 ? 1 : 2;
  if (upsample && find_attr(ctx.node, "scales")) {
    const onnx::AttributeProto* a = find_attr(ctx.node, "scales");
    scales.assign(a->floats().begin(), a->floats().end());
  } else if (!ctx.in(scales_at).empty() && ctx.constant(scales_at) && ctx.constant(scales_at)->count() > 0) {
    scales = ctx.constant(scales_at)->values;
  } else if (!ctx.in(3).empty() && scales_at == 2) {
    if (!(s = const_ints(ctx, 3, "sizes", &sizes)).ok()) return s;
  } else {
    return unsupported("scales or sizes must be constants");
  }
  int64_t out[2];
  for (int a = 0; a < 2; ++a) {
    const size_t ax = 2 + static_cast<size_t>(a);
    if (!sizes.empty()) {
      out[a] = sizes.size() == 4 ? sizes[ax] : 0;
      continue;
    }
    if (scales.size() != 4) return invalid("scales must have 4 values");
    const double o = static_cast<double>(in[ax]) * scales[ax];
    out[a] = static_cast<int64_t>(std::floor(o));
    // Interp maps with in/out; ONNX with the given scale: equal when in*scale is whole.
    if (o != std::floor(o)) return unsupported("scale " + std::to_string(scales[ax]) + " gives a fractional size");
  }
  const bool batch_channels_kept = sizes.empty() ? scales[0] == 1 && scales[1] == 1
                                                 : sizes.size() == 4 && sizes[0] == 1 && sizes[1] == in[1];
  if (!batch_channels_kept) return unsupported("resizing the batch or channel axis");
  fb::InterpParamT p;
  p.output_h = clamp_int(out[0]), p.output_w = clamp_int(out[1]);
  if (p.output_h < 1 || p.output_w < 1) return invalid("empty output");
  const std::string mode = attr_string(ctx.node, "mode", "nearest");
  const std::string ctm = upsample || ctx.opset < 11 ? "asymmetric"
                                                     : attr_string(ctx.node, "coordinate_transformation_mode", "half_pixel");
  if (mode == "nearest") {
    const std::string nearest = upsample || ctx.opset < 11 ? "floor" : attr_string(ctx.node, "nearest_mode", "round_prefer_floor");
    if (ctm != "asymmetric" || nearest != "floor") {
      return unsupported("nearest with " + ctm + " / " + nearest + " (Kestrel: asymmetric / floor)");
    }
    p.mode = fb::InterpMode::Nearest;
  } else if (mode == "linear" || mode == "bilinear") {
    p.mode = fb::InterpMode::Bilinear;
    // pytorch_half_pixel maps a size-1 output to 0, Interp to the half-pixel centre.
    const bool half = ctm == "half_pixel" || (ctm == "pytorch_half_pixel" && out[0] > 1 && out[1] > 1);
    if (ctm == "align_corners") p.align_corners = true;
    else if (!half) return unsupported("linear with coordinate_transformation_mode " + ctm);
  } else {
    return unsupported("mode '" + mode + "'");
  }
  ctx.add("Interp", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

const std::vector<OpSpec> kOps = {
    {"Flatten", convert_flatten, 1, 1},
    {"Reshape", convert_reshape, 1, 2},
    {"Transpose", convert_transpose, 1, 1},
    {"Concat", convert_concat, 1, INT_MAX},
    {"Split", convert_split, 1, 2},
    {"Slice", convert_slice, 1, 5},
    {"Squeeze", convert_squeeze, 1, 2},
    {"Unsqueeze", convert_unsqueeze, 1, 2},
    {"Pad", convert_pad, 1, 4},
    {"ReduceMean", convert_reduce<fb::ReduceOp::Mean>, 1, 2},
    {"ReduceMax", convert_reduce<fb::ReduceOp::Max>, 1, 2},
    {"Resize", convert_resize, 1, 4},
    {"Upsample", convert_resize, 1, 2},
};

}  // namespace

const std::vector<OpSpec>& shape_ops() { return kOps; }

}  // namespace kestrel::convert::onnx_import
