// ONNX compute ops -> Kestrel nodes: convolution, pooling, activations, softmax and
// the identities. Each converter maps the attributes exactly or refuses with
// kUnsupported, never an approximation.
#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {
namespace {

using A = fb::ActivationType;

// The spatial attributes shared by Conv, ConvTranspose and the pools, for 1 or 2
// spatial axes; a 1-D op runs as a 2-D one of height 1 (see lift).
struct Spatial {
  int kernel[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int pads[4] = {0, 0, 0, 0};  // top, left, bottom, right (ONNX order)
  fb::PadMode mode = fb::PadMode::Explicit;
};

// An attribute of `n` values per spatial axis (or empty) as 2 values, a 1-D one
// after `fill`.
Status spatial_attr(const std::vector<int64_t>& v, size_t n, int64_t fill, const char* what,
                    std::vector<int64_t>* out) {
  if (!v.empty() && v.size() != n) {
    return invalid(std::string(what) + " " + dims_text(v) + " does not match the kernel");
  }
  *out = v;
  if (!v.empty() && n == 1) out->insert(out->begin(), fill);
  return Status::Ok();
}

Status read_spatial(const onnx::NodeProto& n, const std::vector<int64_t>& kernel, Spatial* sp) {
  const size_t ns = kernel.size();
  if (ns != 1 && ns != 2) return unsupported("only 1-D and 2-D kernels are supported, got " + dims_text(kernel));
  std::vector<int64_t> k, strides, dil, pads;
  Status s = spatial_attr(kernel, ns, 1, "kernel", &k);
  if (s.ok()) s = spatial_attr(attr_ints(n, "strides"), ns, 1, "strides", &strides);
  if (s.ok()) s = spatial_attr(attr_ints(n, "dilations"), ns, 1, "dilations", &dil);
  const std::vector<int64_t> raw_pads = attr_ints(n, "pads");
  if (!raw_pads.empty() && raw_pads.size() != 2 * ns) {
    return invalid("pads " + dims_text(raw_pads) + " does not match the kernel");
  }
  if (!raw_pads.empty()) pads = ns == 1 ? std::vector<int64_t>{0, raw_pads[0], 0, raw_pads[1]} : raw_pads;
  if (!s.ok()) return s;
  for (int a = 0; a < 2; ++a) {
    sp->kernel[a] = clamp_int(k[a]);
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

// The image layers take one [C,H,W] image: input 0 made batched, and a 1-D [1,C,L]
// given a unit height ([C,1,L]). `in` receives the ONNX shape the layer sees.
struct Lifted {
  std::string x, y;         // the layer's input and output blobs
  std::vector<int64_t> in;  // [1,C,H,W]
  bool one_d = false;
};

Status lift(OpContext& ctx, size_t spatial, Lifted* l) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (s.ok()) s = ctx.as_batched(x, &l->x);
  if (s.ok()) s = ctx.shape(l->x, &l->in);
  if (!s.ok()) return s;
  if (l->in.size() != spatial + 2) {
    return unsupported("input " + dims_text(l->in) + " for a " + std::to_string(spatial) + "-D kernel");
  }
  l->one_d = spatial == 1;
  l->y = ctx.out(0);
  ctx.set_batched(l->y, true);
  if (!l->one_d) return Status::Ok();
  l->in.insert(l->in.begin() + 2, 1);
  std::string x2;
  if (!(s = ctx.reshape(l->x, l->in, true, &x2)).ok()) return s;
  l->x = x2;
  l->y = ctx.new_blob("/2d", true);
  return Status::Ok();
}

// After the layer: a 1-D op's output loses the unit height again.
Status unlift(OpContext& ctx, const Lifted& l) {
  if (!l.one_d) return Status::Ok();
  std::vector<int64_t> out;
  Status s = ctx.shape(l.y, &out);
  if (!s.ok()) return s;
  out.erase(out.begin() + 2);
  std::string y = ctx.out(0);
  return ctx.reshape(l.y, out, true, &y);
}

// Conv and ConvTranspose: weights and bias from constants.
template <bool kTransposed>
Status convert_conv(OpContext& ctx) {
  const ConstTensor* w = ctx.constant(1);
  if (!w) return unsupported("the weight (input 1) must be a constant");
  if (w->dims.size() != 3 && w->dims.size() != 4) {
    return unsupported("only 1-D and 2-D convolution (3-D or 4-D weights), got " + dims_text(w->dims));
  }
  const std::vector<int64_t> w_kernel(w->dims.begin() + 2, w->dims.end());
  std::vector<int64_t> kernel = attr_ints(ctx.node, "kernel_shape");
  if (kernel.empty()) kernel = w_kernel;
  if (kernel != w_kernel) return invalid("kernel_shape does not match the weight");
  Spatial sp;
  Status s = read_spatial(ctx.node, kernel, &sp);
  Lifted l;
  if (s.ok()) s = lift(ctx, kernel.size(), &l);
  if (!s.ok()) return s;
  fb::ConvolutionParamT c;
  c.group = clamp_int(attr_int(ctx.node, "group", 1));
  if (c.group <= 0) return invalid("group must be > 0");
  c.num_output = clamp_int(kTransposed ? w->dims[1] * c.group : w->dims[0]);
  set_spatial(sp, &c);
  c.dilation_h = sp.dilation[0], c.dilation_w = sp.dilation[1];
  if (kTransposed) {
    std::vector<int64_t> out_pad, out_shape;
    if (!(s = spatial_attr(attr_ints(ctx.node, "output_padding"), kernel.size(), 0, "output_padding", &out_pad)).ok() ||
        !(s = spatial_attr(attr_ints(ctx.node, "output_shape"), kernel.size(), 1, "output_shape", &out_shape)).ok()) {
      return s;
    }
    if (!out_pad.empty()) c.output_pad_h = clamp_int(out_pad[0]), c.output_pad_w = clamp_int(out_pad[1]);
    // auto_pad and output_shape fix the total padding; Kestrel takes it explicitly.
    if (sp.mode != fb::PadMode::Explicit || !out_shape.empty()) {
      int* begin[2] = {&c.pad_top, &c.pad_left};
      int* end[2] = {&c.pad_bottom, &c.pad_right};
      const int op[2] = {c.output_pad_h, c.output_pad_w};
      for (size_t a = 0; a < 2; ++a) {
        const int64_t in = l.in[2 + a];
        const int64_t target = !out_shape.empty() ? out_shape[a] : in * sp.stride[a];
        const int64_t total = static_cast<int64_t>(sp.stride[a]) * (in - 1) + op[a] +
                              (static_cast<int64_t>(sp.kernel[a]) - 1) * sp.dilation[a] + 1 - target;
        // An output_shape beyond the full result extends it at the end, as output_padding.
        if (total < 0) {
          (a == 0 ? c.output_pad_h : c.output_pad_w) += clamp_int(-total);
          *begin[a] = *end[a] = 0;
          continue;
        }
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
  Node& n = ctx.add(kTransposed ? "Deconvolution" : "Convolution", std::move(c), {l.x}, {l.y});
  n.weights.push_back(w->to_weight());
  if (l.one_d) n.weights.back().shape.insert(n.weights.back().shape.begin() + 2, 1);
  if (b) n.weights.push_back(Tensor{{static_cast<int>(b->count())}, {b->values.begin(), b->values.end()}});
  return unlift(ctx, l);
}

template <fb::PoolType kPool, bool kGlobal>
Status convert_pool(OpContext& ctx) {
  fb::PoolingParamT p;
  p.pool = kPool;
  p.global = kGlobal;
  size_t spatial = 2;
  Status s;
  if (kGlobal) {
    std::string x;
    std::vector<int64_t> in;
    if (!(s = ctx.blob(0, &x)).ok() || !(s = ctx.shape(x, &in)).ok()) return s;
    spatial = in.size() == 3 ? 1 : 2;
  } else {
    if (ctx.node.output_size() > 1 && !ctx.out(1).empty()) return unsupported("MaxPool indices output");
    if (attr_int(ctx.node, "storage_order", 0) != 0) return unsupported("storage_order 1");
    Spatial sp;
    const std::vector<int64_t> kernel = attr_ints(ctx.node, "kernel_shape");
    if (!(s = read_spatial(ctx.node, kernel, &sp)).ok()) return s;
    if (sp.dilation[0] != 1 || sp.dilation[1] != 1) return unsupported("pooling with dilations");
    set_spatial(sp, &p);
    p.round_mode = attr_int(ctx.node, "ceil_mode", 0) ? fb::RoundMode::Ceil : fb::RoundMode::Floor;
    p.count_include_pad = attr_int(ctx.node, "count_include_pad", 0) != 0;
    spatial = kernel.size();
  }
  Lifted l;
  if (!(s = lift(ctx, spatial, &l)).ok()) return s;
  ctx.add("Pooling", std::move(p), {l.x}, {l.y});
  return unlift(ctx, l);
}

template <A kType>
Status convert_plain(OpContext& ctx) {
  return add_activation(ctx, kType);
}

Status convert_leaky_relu(OpContext& ctx) {
  return add_activation(ctx, A::LeakyReLU, attr_float(ctx.node, "alpha", 0.01f));
}
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

// Softmax over the flattened block of axes [from, rank): one Kestrel Softmax when at
// most one of those axes is longer than 1, else a 2-D [outer, block] view of it.
Status softmax_block(OpContext& ctx, const std::string& x, const std::vector<int64_t>& in, size_t from,
                     fb::SoftmaxParamT p) {
  std::vector<size_t> long_axes;
  for (size_t a = from; a < in.size(); ++a) {
    if (in[a] != 1) long_axes.push_back(a);
  }
  if (long_axes.size() <= 1) {
    std::string src = x;
    const int64_t axis = long_axes.empty() ? static_cast<int64_t>(in.size()) - 1 : static_cast<int64_t>(long_axes[0]);
    std::vector<int> k;
    Status s = kestrel_axes_of(ctx, &src, {axis}, "axis", &k);
    if (!s.ok()) return s;
    p.axis = k[0];
    ctx.set_batched(ctx.out(0), ctx.batched(src));
    ctx.add("Softmax", std::move(p), {src}, {ctx.out(0)});
    return Status::Ok();
  }
  const std::vector<int64_t> flat = {product(in, 0, from), product(in, from)};
  bool flat_batched = false;
  Status s = pick_layout(flat, true, &flat_batched);
  std::string x2, y2;
  if (s.ok()) s = ctx.reshape(x, flat, flat_batched, &x2);
  if (!s.ok()) return s;
  p.axis = -1;
  y2 = ctx.new_blob("/softmax", flat_batched);
  ctx.add("Softmax", std::move(p), {x2}, {y2});
  std::string y = ctx.out(0);
  return ctx.reshape(y2, in, ctx.batched(x), &y);
}

// Before opset 13 Softmax and LogSoftmax work on the input coerced to 2-D at `axis`
// (default 1); from 13 on they work along one axis (default -1).
Status convert_softmax(OpContext& ctx) {
  std::string x;
  std::vector<int64_t> in;
  Status s = ctx.blob(0, &x);
  if (s.ok()) s = ctx.shape(x, &in);
  if (!s.ok()) return s;
  fb::SoftmaxParamT p;
  p.log = ctx.node.op_type() == "LogSoftmax";
  const bool coerce = ctx.opset < 13;
  size_t axis = 0;
  if (!(s = normalize_axis(attr_int(ctx.node, "axis", coerce ? 1 : -1), in.size(), "axis", &axis)).ok()) return s;
  if (!coerce) {
    std::vector<int> k;
    if (!(s = kestrel_axes_of(ctx, &x, {static_cast<int64_t>(axis)}, "axis", &k)).ok()) return s;
    p.axis = k[0];
    ctx.set_batched(ctx.out(0), ctx.batched(x));
    ctx.add("Softmax", std::move(p), {x}, {ctx.out(0)});
    return Status::Ok();
  }
  return softmax_block(ctx, x, in, axis, std::move(p));
}

// Identity, inference Dropout and Cast to float32: Kestrel's Dropout is the identity
// (the optimizer removes it).
Status convert_identity(OpContext& ctx) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  const std::string& type = ctx.node.op_type();
  if (type == "Cast" && attr_int(ctx.node, "to", 0) != onnx::TensorProto::FLOAT) {
    return unsupported("Cast to type " + std::to_string(attr_int(ctx.node, "to", 0)) +
                       " of a run-time tensor (Kestrel computes in float32)");
  }
  if (type == "Dropout") {
    if (ctx.node.output_size() > 1 && !ctx.out(1).empty()) return unsupported("the Dropout mask output");
    // Before opset 7 an explicit is_test 0 asks for training (a model that leaves it
    // out is taken as exported for inference); from 12 on, the training_mode input.
    bool training = attr_int(ctx.node, "is_test", 1) == 0;
    if (!ctx.in(2).empty()) {
      const ConstTensor* t = ctx.constant(2);
      if (!t || t->count() != 1) return unsupported("training_mode must be a constant");
      training = t->values[0] != 0;
    }
    // Training with ratio 0 drops nothing and scales by 1.
    const ConstTensor* r = ctx.in(1).empty() ? nullptr : ctx.constant(1);
    const bool drops = r ? r->count() != 1 || r->values[0] != 0 : attr_float(ctx.node, "ratio", 0.5f) != 0;
    if (training && drops) return unsupported("training mode (random dropout)");
  }
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
    {"Relu", convert_plain<A::ReLU>, 1, 1},
    {"Sigmoid", convert_plain<A::Sigmoid>, 1, 1},
    {"Tanh", convert_plain<A::TanH>, 1, 1},
    {"HardSwish", convert_plain<A::HardSwish>, 1, 1},
    {"LeakyRelu", convert_leaky_relu, 1, 1},
    {"Elu", convert_elu, 1, 1},
    {"HardSigmoid", convert_hard_sigmoid, 1, 1},
    {"Gelu", convert_gelu, 1, 1},
    {"Clip", convert_clip, 1, 3},
    {"Softmax", convert_softmax, 1, 1},
    {"LogSoftmax", convert_softmax, 1, 1},
    {"Identity", convert_identity, 1, 1},
    {"Dropout", convert_identity, 1, 3},
    {"Cast", convert_identity, 1, 1},
};

}  // namespace

const std::vector<OpSpec>& compute_ops() { return kOps; }

}  // namespace kestrel::convert::onnx_import
