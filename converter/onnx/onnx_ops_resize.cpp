// ONNX Resize and Upsample -> Kestrel's Interp. ONNX has many coordinate mappings
// (coordinate_transformation_mode x nearest_mode), Interp two per mode (PyTorch's). The
// converter computes, per output row and column, which input pixels ONNX reads and with
// what weights, and the same for Interp; Interp is used only where they agree
// everywhere, so any case that converts is exact and the others are refused.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {
namespace {

// Output position i reads (1 - w) * in[lo] + w * in[hi].
struct Tap {
  int lo = 0, hi = 0;
  double w = 0;
};

// The same blend with a single source written as lo == hi, w == 0.
Tap canonical(Tap t) {
  constexpr double kEps = 1e-6;
  if (t.lo == t.hi || t.w <= kEps) return Tap{t.lo, t.lo, 0};
  if (t.w >= 1 - kEps) return Tap{t.hi, t.hi, 0};
  return t;
}

bool same(const Tap& a, const Tap& b) {
  const Tap x = canonical(a), y = canonical(b);
  return x.lo == y.lo && x.hi == y.hi && std::fabs(x.w - y.w) <= 1e-5;
}

std::string tap_text(const Tap& t) {
  const Tap c = canonical(t);
  std::ostringstream s;
  if (c.lo == c.hi) s << "input " << c.lo;
  else s << "inputs " << c.lo << "," << c.hi << " (weight " << c.w << ")";
  return s.str();
}

struct Mapping {
  bool linear = false;
  std::string transform = "half_pixel", nearest = "round_prefer_floor";
};

// ONNX's source of output i along an axis of `in` values resized by `scale` (the given
// scale, or out / in when sizes are given), as the operator's reference computes it
// (whose fractional in * scale enters align_corners and pytorch_half_pixel).
Status onnx_tap(const Mapping& m, int64_t i, int64_t in, double scale, Tap* t) {
  const double x = static_cast<double>(i), length = static_cast<double>(in) * scale;
  double src = 0;
  if (m.transform == "half_pixel") src = (x + 0.5) / scale - 0.5;
  else if (m.transform == "pytorch_half_pixel") src = length > 1 ? (x + 0.5) / scale - 0.5 : 0;
  else if (m.transform == "align_corners") src = length > 1 ? x * static_cast<double>(in - 1) / (length - 1) : 0;
  else if (m.transform == "asymmetric") src = x / scale;
  else if (m.transform == "tf_half_pixel_for_nn") src = (x + 0.5) / scale;
  else return unsupported("coordinate_transformation_mode '" + m.transform + "'");
  const double lo = std::floor(src), ratio = src - lo;
  auto clamp = [in](double v) { return static_cast<int>(std::clamp<double>(v, 0, static_cast<double>(in - 1))); };
  if (m.linear) {
    *t = Tap{clamp(lo), clamp(lo + 1), ratio};
    return Status::Ok();
  }
  bool up = false;
  if (ratio == 0) up = false;
  else if (m.nearest == "round_prefer_floor") up = ratio > 0.5;
  else if (m.nearest == "round_prefer_ceil") up = ratio >= 0.5;
  else if (m.nearest == "ceil") up = true;
  else if (m.nearest != "floor") return unsupported("nearest_mode '" + m.nearest + "'");
  *t = Tap{clamp(lo + (up ? 1 : 0)), clamp(lo + (up ? 1 : 0)), 0};
  return Status::Ok();
}

// Interp's source of output i (src/layers/interp.cpp, in float as it computes).
Tap interp_tap(bool linear, bool align_corners, int i, int in, int out) {
  if (!linear) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    const int k = std::min(static_cast<int>(std::floor(static_cast<float>(i) * scale)), in - 1);
    return Tap{k, k, 0};
  }
  float src = 0.f;
  if (align_corners) {
    src = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) * static_cast<float>(i) : 0.f;
  } else {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    src = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.f);
  }
  Tap t;
  t.lo = std::min(static_cast<int>(src), in - 1);
  t.hi = std::min(t.lo + 1, in - 1);
  t.w = t.hi > t.lo ? static_cast<double>(src) - t.lo : 0;
  return t;
}

// "" when Interp (linear or not, align_corners) reads what ONNX reads on both axes,
// else where they first differ.
Status differs(const Mapping& m, bool align_corners, const int64_t in[2], const int64_t out[2], const double scale[2],
               std::string* why) {
  why->clear();
  for (int a = 0; a < 2 && why->empty(); ++a) {
    for (int64_t i = 0; i < out[a]; ++i) {
      Tap want;
      Status s = onnx_tap(m, i, in[a], scale[a], &want);
      if (!s.ok()) return s;
      const Tap got =
          interp_tap(m.linear, align_corners, static_cast<int>(i), static_cast<int>(in[a]), static_cast<int>(out[a]));
      if (!same(want, got)) {
        *why = std::string(a == 0 ? "output row " : "output column ") + std::to_string(i) + " reads " + tap_text(want) +
               ", Kestrel's Interp " + tap_text(got);
        break;
      }
    }
  }
  return Status::Ok();
}

// Resize (opset 10+) and Upsample (7-9) over the two inner axes of [1,C,H,W].
Status convert_resize(OpContext& ctx) {
  std::string x0, x;
  std::vector<int64_t> in;
  Status s = ctx.blob(0, &x0);
  if (s.ok()) s = ctx.shape(x0, &in);
  if (!s.ok()) return s;
  if (in.size() != 4) return unsupported("input " + dims_text(in) + ": only 4-D [N,C,H,W] images are resized");
  if (find_attr(ctx.node, "axes") || attr_int(ctx.node, "antialias", 0) != 0) return unsupported("axes or antialias");
  const bool old_style = ctx.node.op_type() == "Upsample" || ctx.opset < 11;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  // Upsample: scales attr (opset 7-8) or input 1; Resize 10: input 1; 11+: 2, or sizes 3.
  const size_t scales_at = old_style ? 1 : 2;
  const ConstTensor* sc = ctx.in(scales_at).empty() ? nullptr : ctx.constant(scales_at);
  if (const onnx::AttributeProto* a = find_attr(ctx.node, "scales")) {
    scales.assign(a->floats().begin(), a->floats().end());
  } else if (sc && sc->count() > 0) {
    scales = sc->values;
  } else if (!old_style && !ctx.in(3).empty()) {
    if (!(s = const_ints(ctx, 3, "sizes", &sizes)).ok()) return s;
  } else {
    return unsupported("scales or sizes must be constants");
  }
  if ((!scales.empty() && scales.size() != 4) || (!sizes.empty() && sizes.size() != 4)) {
    return invalid("scales or sizes must have 4 values");
  }
  const bool keeps_nc = sizes.empty() ? scales[0] == 1 && scales[1] == 1 : sizes[0] == in[0] && sizes[1] == in[1];
  if (!keeps_nc) return unsupported("resizing the batch or channel axis");
  int64_t size_in[2], size_out[2];
  double scale[2];
  for (size_t a = 0; a < 2; ++a) {
    size_in[a] = in[2 + a];
    size_out[a] = sizes.empty() ? static_cast<int64_t>(std::floor(static_cast<double>(size_in[a]) * scales[2 + a]))
                                : sizes[2 + a];
    if (size_out[a] < 1) return unsupported("an empty output");
    scale[a] = sizes.empty() ? scales[2 + a] : static_cast<double>(size_out[a]) / static_cast<double>(size_in[a]);
  }
  Mapping m;
  const std::string mode = attr_string(ctx.node, "mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear") return unsupported("mode '" + mode + "'");
  m.linear = mode != "nearest";
  m.transform = old_style ? "asymmetric" : attr_string(ctx.node, "coordinate_transformation_mode", "half_pixel");
  m.nearest = old_style ? "floor" : attr_string(ctx.node, "nearest_mode", "round_prefer_floor");
  std::string why;
  bool align_corners = false;
  for (bool ac : m.linear ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    std::string w;
    if (!(s = differs(m, ac, size_in, size_out, scale, &w)).ok()) return s;
    if (w.empty()) {
      align_corners = ac, why.clear();
      break;
    }
    if (why.empty()) why = w;
  }
  if (!why.empty()) {
    return unsupported("mode " + mode + " with " + m.transform + (m.linear ? "" : " / " + m.nearest) + ": " + why);
  }
  if (!(s = ctx.as_batched(x0, &x)).ok()) return s;
  fb::InterpParamT p;
  p.mode = m.linear ? fb::InterpMode::Bilinear : fb::InterpMode::Nearest;
  p.output_h = clamp_int(size_out[0]), p.output_w = clamp_int(size_out[1]);
  p.align_corners = align_corners;
  ctx.set_batched(ctx.out(0), true);
  ctx.add("Interp", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

const std::vector<OpSpec> kOps = {
    {"Resize", convert_resize, 1, 4},
    {"Upsample", convert_resize, 1, 2},
};

}  // namespace

const std::vector<OpSpec>& resize_ops() { return kOps; }

}  // namespace kestrel::convert::onnx_import
