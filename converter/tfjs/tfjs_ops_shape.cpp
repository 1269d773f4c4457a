// TF.js data-movement ops -> Kestrel: Identity and Cast (aliases), Reshape, Squeeze,
// ExpandDims and Unpack (reshape_to: the elements in NHWC order), Transpose, ConcatV2,
// Pad/PadV2/MirrorPad and ResizeBilinear/ResizeNearestNeighbor.
#include <algorithm>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {
namespace {

Status convert_identity(OpContext& ctx) {
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    std::string x;
    Status s = ctx.blob(k, &x);
    if (!s.ok()) return s;
    ctx.set_output(k, x, ctx.layout(x));
  }
  return Status::Ok();
}

// Output 0 of the node is input 0 reshaped to TF shape `dims`.
Status reshape_output(OpContext& ctx, const std::vector<int64_t>& dims) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  std::string y = ctx.out(0);
  Layout l;
  if (!(s = reshape_to(ctx, x, dims, &y, &l)).ok()) return s;
  ctx.set_output(0, y, l);
  return Status::Ok();
}

Status input_dims(const OpContext& ctx, std::vector<int64_t>* dims) {
  std::string x;
  Status s = ctx.blob(0, &x);
  return s.ok() ? ctx.tf_shape(x, dims) : s;
}

Status convert_reshape(OpContext& ctx) {
  std::vector<int64_t> in, target;
  Status s = input_dims(ctx, &in);
  if (s.ok()) s = const_ints(ctx, 1, "the shape", &target);
  if (!s.ok()) return s;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      return invalid("shape " + dims_text(target) + " is invalid");
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      return invalid("shape " + dims_text(target) + " has more elements than fit in 64 bits");
    }
  }
  if (infer >= 0) {
    if (known == 0 || product(in) % known != 0) return invalid("cannot reshape " + dims_text(in) + " to " + dims_text(target));
    target[static_cast<size_t>(infer)] = product(in) / known;
  }
  return reshape_output(ctx, target);
}

Status convert_squeeze(OpContext& ctx) {
  std::vector<int64_t> in, out;
  Status s = input_dims(ctx, &in);
  if (!s.ok()) return s;
  std::vector<bool> drop(in.size(), false);
  const std::vector<int64_t> axes = ctx.attr_ints("squeeze_dims");
  for (int64_t a : axes) {
    size_t k;
    if (!(s = normalize_axis(a, in.size(), "squeeze axis", &k)).ok()) return s;
    if (in[k] != 1) return invalid("squeeze axis " + std::to_string(a) + " of " + dims_text(in) + " is not 1");
    drop[k] = true;
  }
  for (size_t k = 0; k < in.size(); ++k) {
    if (!(axes.empty() ? in[k] == 1 : drop[k])) out.push_back(in[k]);
  }
  if (out.empty()) out.push_back(1);
  return reshape_output(ctx, out);
}

Status convert_expand_dims(OpContext& ctx) {
  std::vector<int64_t> in, axis;
  Status s = input_dims(ctx, &in);
  if (s.ok()) s = const_ints(ctx, 1, "the axis", &axis);
  if (!s.ok()) return s;
  if (axis.size() != 1) return invalid("axis must hold one value");
  size_t k;
  if (!(s = normalize_axis(axis[0], in.size() + 1, "axis", &k)).ok()) return s;
  in.insert(in.begin() + static_cast<long>(k), 1);
  return reshape_output(ctx, in);
}

// Unpack of an axis of size 1 (num = 1): that axis goes.
Status convert_unpack(OpContext& ctx) {
  std::vector<int64_t> in;
  Status s = input_dims(ctx, &in);
  if (!s.ok()) return s;
  size_t k;
  if (!(s = normalize_axis(ctx.attr_int("axis", 0), in.size(), "axis", &k)).ok()) return s;
  if (in[k] != 1) return unsupported("Unpack into " + std::to_string(in[k]) + " tensors (only one is supported)");
  in.erase(in.begin() + static_cast<long>(k));
  if (in.empty()) return unsupported("Unpack to scalars");
  return reshape_output(ctx, in);
}

// Transpose with a constant permutation that keeps the leading 1s in place: a Permute
// of the blob in TF order.
Status convert_transpose(OpContext& ctx) {
  std::string x, flat;
  std::vector<int64_t> in, perm;
  Status s = ctx.blob(0, &x);
  if (s.ok()) s = const_ints(ctx, 1, "the permutation", &perm);
  if (s.ok()) s = as_tf_order(ctx, x, &flat, &in);
  if (!s.ok()) return s;
  if (perm.size() != in.size()) return invalid("permutation " + dims_text(perm) + " for " + dims_text(in));
  const int ones = ctx.layout(x).ones;
  if (ctx.layout(flat).channels_last) {
    // In TF order already (C or H*W is 1), but held as [C,H,W]: give it TF's dims.
    const std::string held = ctx.new_blob("/nhwc", Layout{false, ones});
    fb::ReshapeParamT rp;
    rp.shape.assign(in.begin() + ones, in.end());
    ctx.add("Reshape", std::move(rp), {flat}, {held}, "/reshape_" + held);
    flat = held;
  }
  fb::PermuteParamT p;
  std::vector<int64_t> out;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(in.size())) return invalid("permutation " + dims_text(perm) + " is invalid");
    out.push_back(in[static_cast<size_t>(perm[i])]);
    if (static_cast<int>(i) < ones) {
      if (perm[i] != static_cast<int64_t>(i)) return unsupported("a permutation " + dims_text(perm) + " that moves the batch");
      continue;
    }
    p.order.push_back(static_cast<int>(perm[i]) - ones);
  }
  const std::string moved = ctx.new_blob("/transpose", Layout{false, ones});
  ctx.add("Permute", std::move(p), {flat}, {moved});
  std::string y = ctx.out(0);
  Layout l;
  if (!(s = reshape_to(ctx, moved, out, &y, &l)).ok()) return s;
  ctx.set_output(0, y, l);
  return Status::Ok();
}

// ConcatV2(x..., axis): all channels last when one is, else plain with the same ones.
Status convert_concat(OpContext& ctx) {
  const size_t n = ctx.num_inputs() - 1;
  std::vector<int64_t> axis_v;
  Status s = const_ints(ctx, n, "the axis", &axis_v);
  if (!s.ok()) return s;
  if (axis_v.size() != 1) return invalid("axis must hold one value");
  std::vector<std::string> xs(n);
  bool cl = false;
  for (size_t i = 0; i < n; ++i) {
    if (!(s = ctx.blob(i, &xs[i])).ok()) return s;
    cl = cl || ctx.layout(xs[i]).channels_last;
  }
  std::vector<int64_t> dims;
  int min_ones = 1 << 30;
  for (std::string& x : xs) {
    if (cl && !(s = as_channels_last(ctx, std::string(x), &x)).ok()) return s;
    min_ones = std::min(min_ones, ctx.layout(x).ones);
  }
  if (!(s = ctx.tf_shape(xs[0], &dims)).ok()) return s;
  size_t axis;
  if (!(s = normalize_axis(axis_v[0], dims.size(), "axis", &axis)).ok()) return s;
  fb::ConcatParamT p;
  Layout l;
  if (cl) {
    const size_t r = dims.size();
    if (axis + 3 < r) return unsupported("concatenation along the batch axis");
    p.axis = axis == r - 1 ? 0 : static_cast<int>(axis - (r - 3)) + 1;
    l = Layout{true, static_cast<int>(r) - 3};
  } else {
    if (static_cast<int>(axis) < min_ones) return unsupported("concatenation along a leading axis of size 1");
    for (std::string& x : xs) {
      std::vector<int64_t> d;
      if (!(s = ctx.tf_shape(x, &d)).ok()) return s;
      if (ctx.layout(x).ones == min_ones) continue;
      // Same rank, fewer leading 1s dropped: hold it like the others.
      const std::string y = ctx.new_blob("/concat_in", Layout{false, min_ones});
      fb::ReshapeParamT rp;
      rp.shape.assign(d.begin() + min_ones, d.end());
      ctx.add("Reshape", std::move(rp), {x}, {y}, "/reshape_" + y);
      x = y;
    }
    p.axis = static_cast<int>(axis) - min_ones;
    l = Layout{false, min_ones};
  }
  if (n == 1) {
    ctx.set_output(0, xs[0], ctx.layout(xs[0]));
    return Status::Ok();
  }
  ctx.add("Concat", std::move(p), xs, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), l);
  return Status::Ok();
}

// Pad, PadV2 (constant value), MirrorPad (REFLECT): paddings [rank, 2].
Status convert_pad(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> dims, pads;
  Status s = ctx.blob(0, &x);
  if (s.ok()) s = ctx.tf_shape(x, &dims);
  if (s.ok()) s = const_ints(ctx, 1, "paddings", &pads);
  if (!s.ok()) return s;
  const size_t r = dims.size();
  if (pads.size() != 2 * r) return invalid("paddings " + dims_text(pads) + " for rank " + std::to_string(r));
  fb::PaddingParamT p;
  if (ctx.node.op() == "MirrorPad") {
    if (ctx.attr_string("mode", "") != "REFLECT") return unsupported("MirrorPad mode '" + ctx.attr_string("mode", "") + "'");
    p.mode = fb::PadType::Reflect;
  }
  if (ctx.node.op() == "PadV2") {
    const ConstTensor* v = ctx.constant(2);
    if (!v || v->count() != 1) return unsupported("the pad value must be a constant scalar");
    p.value = static_cast<float>(v->values[0]);
  }
  const Layout l = ctx.layout(x);
  std::vector<int> order;  // Kestrel axis k holds TF axis order[k]
  if (l.channels_last) {
    order = {static_cast<int>(r) - 1, static_cast<int>(r) - 3, static_cast<int>(r) - 2};
  } else {
    for (size_t k = static_cast<size_t>(l.ones); k < r; ++k) order.push_back(static_cast<int>(k));
  }
  for (int k = 0; k < l.ones; ++k) {
    if (pads[2 * k] || pads[2 * k + 1]) return unsupported("padding the batch axis");
  }
  std::vector<int> begin, end;
  for (int a : order) {
    begin.push_back(static_cast<int>(pads[2 * static_cast<size_t>(a)]));
    end.push_back(static_cast<int>(pads[2 * static_cast<size_t>(a) + 1]));
  }
  p.pads = begin;
  p.pads.insert(p.pads.end(), end.begin(), end.end());
  ctx.add("Padding", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), l);
  return Status::Ok();
}

// ResizeBilinear / ResizeNearestNeighbor(x, size [h, w]).
Status convert_resize(OpContext& ctx) {
  std::string x0, x;
  std::vector<int64_t> size;
  Status s = ctx.blob(0, &x0);
  if (s.ok()) s = as_channels_last(ctx, x0, &x);
  if (s.ok()) s = const_ints(ctx, 1, "the size", &size);
  if (!s.ok()) return s;
  if (size.size() != 2 || size[0] < 1 || size[1] < 1 || size[0] > (1 << 20) || size[1] > (1 << 20)) {
    return invalid("size " + dims_text(size) + " is invalid");
  }
  const bool bilinear = ctx.node.op() == "ResizeBilinear";
  const bool align = ctx.attr_bool("align_corners", false), half = ctx.attr_bool("half_pixel_centers", false);
  if (align && half) return invalid("align_corners and half_pixel_centers are both set");
  if (align && !bilinear) return unsupported("nearest-neighbour resize with align_corners (rounds; Kestrel floors)");
  fb::InterpParamT p;
  p.mode = bilinear ? fb::InterpMode::Bilinear : fb::InterpMode::Nearest;
  p.output_h = static_cast<int>(size[0]);
  p.output_w = static_cast<int>(size[1]);
  p.align_corners = align;
  p.coords = align ? fb::InterpCoords::PyTorch : half ? fb::InterpCoords::HalfPixel : fb::InterpCoords::Asymmetric;
  ctx.add("Interp", std::move(p), {x}, {ctx.out(0)});
  ctx.set_output(0, ctx.out(0), ctx.layout(x));
  return Status::Ok();
}

}  // namespace

const std::vector<OpSpec>& shape_ops() {
  static const std::vector<OpSpec> ops = {
      {"Identity", convert_identity, 1, 1},
      {"IdentityN", convert_identity, 1, 64},
      {"StopGradient", convert_identity, 1, 1},
      {"Snapshot", convert_identity, 1, 1},
      {"Cast", convert_identity, 1, 1},
      {"Reshape", convert_reshape, 2, 2},
      {"Squeeze", convert_squeeze, 1, 1},
      {"ExpandDims", convert_expand_dims, 2, 2},
      {"Unpack", convert_unpack, 1, 1},
      {"Transpose", convert_transpose, 2, 2},
      {"ConcatV2", convert_concat, 2, 65},
      {"Pad", convert_pad, 2, 2},
      {"PadV2", convert_pad, 3, 3},
      {"MirrorPad", convert_pad, 2, 2},
      {"ResizeBilinear", convert_resize, 2, 2},
      {"ResizeNearestNeighbor", convert_resize, 2, 2},
  };
  return ops;
}

}  // namespace kestrel::convert::tfjs_import
