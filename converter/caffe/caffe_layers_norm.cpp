// Caffe layer -> Kestrel nodes: normalizations (BatchNorm, Normalize, LRN) and the
// affine layers (Scale, Bias) in all their forms: a learned per-channel operand
// becomes a Scale node (which the optimizer folds into a preceding convolution),
// anything else a BinaryOp broadcasting the operand as Caffe does.
#include <algorithm>
#include <functional>
#include <numeric>

#include "caffe/caffe_layers.h"

namespace kestrel::convert::caffe_import {

Status convert_batchnorm(LayerContext& ctx) {
  const caffe::BatchNormParameter& p = ctx.layer.batch_norm_param();
  if (p.has_use_global_stats() && !p.use_global_stats()) {
    return unsupported("use_global_stats", "false", "statistics of the batch at inference");
  }
  Status s = expect_blobs(ctx, 3, "mean, variance, moving-average factor");
  if (!s.ok()) return s;
  const int c = static_cast<int>(blob_count(*ctx.blobs[0]));
  Tensor mean, var, factor;
  s = take_blob(ctx, 0, "mean", {c}, &mean);
  if (s.ok()) s = take_blob(ctx, 1, "variance", {c}, &var);
  if (s.ok()) s = take_blob(ctx, 2, "moving-average factor", {1}, &factor);
  if (!s.ok()) return s;
  // Caffe stores running sums and their weight; like Caffe, scale them in float by
  // 1 / factor, a zero factor meaning no statistics (mean and variance 0).
  const float f = factor.data[0] == 0.f ? 0.f : 1.f / factor.data[0];
  for (float& v : mean.data) v *= f;
  for (float& v : var.data) v *= f;
  fb::BatchNormParamT q;
  q.eps = p.eps();
  Node& n = add_node(ctx, "BatchNorm", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  n.weights.push_back(std::move(mean));
  n.weights.push_back(std::move(var));
  n.weights.push_back(Tensor{{c}, std::vector<float>(static_cast<size_t>(c), 1.f)});
  n.weights.push_back(Tensor{{c}, std::vector<float>(static_cast<size_t>(c), 0.f)});
  return Status::Ok();
}

namespace {

// Caffe applies a Scale/Bias operand of shape S to bottom 0's axes [axis, axis + |S|)
// and repeats it over the others. Kestrel's BinaryOp broadcasts numpy-style from the
// innermost axis, so the operand gets trailing 1s; a batch axis in S (axis 0) is
// dropped like every batch. `operand` is S in Caffe's terms.
Status broadcast_shape(LayerContext& ctx, int axis, const std::vector<int>& operand, std::vector<int>* shape) {
  std::vector<int> x;
  Status s = ctx.shape_of(ctx.bottoms[0], &x);
  if (!s.ok()) return s;
  x.insert(x.begin(), 1);  // Caffe's extents, batch first
  const int rank = static_cast<int>(x.size()), k = static_cast<int>(operand.size());
  const int first = axis < 0 ? axis + rank : axis;
  if (first < 0 || first + k > rank ||
      !std::equal(operand.begin(), operand.end(), x.begin() + first)) {
    return invalid("operand shape " + dims_text(operand) + " does not match bottom 0 " + dims_text(x) +
                   " from axis " + std::to_string(axis));
  }
  shape->assign(operand.begin() + (first == 0 && k > 0 ? 1 : 0), operand.end());
  shape->insert(shape->end(), static_cast<size_t>(rank - first - k), 1);
  if (shape->empty()) shape->push_back(1);
  return Status::Ok();
}

// The learned operand's shape as Caffe declared it (legacy 4-D blobs hold the
// values in the trailing dims).
std::vector<int> operand_shape(const caffe::BlobProto& b) {
  return b.has_shape() ? blob_shape(b) : without_leading_ones(blob_shape(b));
}

// Per channel (Caffe axis 1, any trailing 1s) or one value: what Scale nodes take.
bool per_channel(int axis, const std::vector<int>& operand, size_t count) {
  if (count == 1) return true;
  if (axis != 1 || operand.empty()) return false;
  return std::all_of(operand.begin() + 1, operand.end(), [](int d) { return d == 1; });
}

// y = x op b (op Mul or Add) where b is bottom 1 or the learned `operand`, then
// + bias when given. Bottom 1 carries its own batch axis, which lines up with axis.
Status add_broadcast(LayerContext& ctx, int axis, fb::BinaryOpType op, const Tensor* operand,
                     const std::vector<int>& operand_caffe, const Tensor* bias) {
  std::vector<int> b_shape;
  std::vector<int> caffe_shape = operand_caffe;
  if (!operand) {
    Status s = ctx.shape_of(ctx.bottoms[1], &caffe_shape);
    if (!s.ok()) return s;
    caffe_shape.insert(caffe_shape.begin(), 1);
  }
  Status s = broadcast_shape(ctx, axis, caffe_shape, &b_shape);
  if (!s.ok()) return s;
  if (bias && bias->data.size() != static_cast<size_t>(std::accumulate(b_shape.begin(), b_shape.end(), 1,
                                                                       std::multiplies<int>()))) {
    return invalid("the bias has " + std::to_string(bias->data.size()) + " values, the scale operand " +
                   dims_text(b_shape));
  }
  std::vector<std::string> inputs = {ctx.bottoms[0]};
  if (!operand) {
    // Bottom 1 as is when its trailing extents already line up.
    std::vector<int> own;
    if (!(s = ctx.shape_of(ctx.bottoms[1], &own)).ok()) return s;
    std::string b = ctx.bottoms[1];
    if (own != b_shape) {
      fb::ReshapeParamT r;
      r.shape = b_shape;
      b = ctx.unique_blob(ctx.bottoms[1] + "#broadcast");
      add_node(ctx, "Reshape", std::move(r), {ctx.bottoms[1]}, {b}, "/broadcast");
    }
    inputs.push_back(b);
  }
  const std::string out = bias ? ctx.unique_blob(ctx.tops[0] + "#scaled") : ctx.tops[0];
  fb::BinaryOpParamT q;
  q.op = op;
  Node& n = add_node(ctx, "BinaryOp", std::move(q), inputs, {out}, bias ? "/scale" : "");
  if (operand) n.weights.push_back(Tensor{b_shape, operand->data});
  if (bias) {
    fb::BinaryOpParamT a;
    a.op = fb::BinaryOpType::Add;
    add_node(ctx, "BinaryOp", std::move(a), {out}, {ctx.tops[0]}).weights.push_back(Tensor{b_shape, bias->data});
  }
  return Status::Ok();
}

Tensor values_of(const caffe::BlobProto& b) {
  return Tensor{{static_cast<int>(blob_count(b))}, blob_values(b)};
}

}  // namespace

Status convert_scale(LayerContext& ctx) {
  const caffe::ScaleParameter& p = ctx.layer.scale_param();
  const bool learned = ctx.bottoms.size() == 1;
  const size_t blobs = (learned ? 1 : 0) + (p.bias_term() ? 1 : 0);
  Status s = expect_blobs(ctx, blobs, learned ? (p.bias_term() ? "scale, bias" : "scale") : "bias");
  if (!s.ok()) return s;
  const Tensor scale = learned ? values_of(*ctx.blobs[0]) : Tensor{};
  const Tensor bias = p.bias_term() ? values_of(*ctx.blobs[blobs - 1]) : Tensor{};
  if (p.bias_term() && learned && bias.data.size() != scale.data.size()) {
    return invalid("blob 1 (bias) has " + std::to_string(bias.data.size()) + " values, blob 0 (scale) " +
                   std::to_string(scale.data.size()));
  }
  const std::vector<int> shape = learned ? operand_shape(*ctx.blobs[0]) : std::vector<int>{};
  if (learned && per_channel(p.axis(), shape, scale.data.size())) {
    add_scale(ctx, ctx.bottoms[0], ctx.tops[0], scale, p.bias_term() ? &bias : nullptr);
    return Status::Ok();
  }
  return add_broadcast(ctx, p.axis(), fb::BinaryOpType::Mul, learned ? &scale : nullptr, shape,
                       p.bias_term() ? &bias : nullptr);
}

// A learned per-channel bias is a Scale by ones (exact, and foldable like any Scale).
Status convert_bias(LayerContext& ctx) {
  const caffe::BiasParameter& p = ctx.layer.bias_param();
  const bool learned = ctx.bottoms.size() == 1;
  Status s = expect_blobs(ctx, learned ? 1 : 0, learned ? "bias" : "none: the bias is bottom 1");
  if (!s.ok()) return s;
  const Tensor bias = learned ? values_of(*ctx.blobs[0]) : Tensor{};
  const std::vector<int> shape = learned ? operand_shape(*ctx.blobs[0]) : std::vector<int>{};
  if (learned && per_channel(p.axis(), shape, bias.data.size())) {
    Tensor ones{bias.shape, std::vector<float>(bias.data.size(), 1.f)};
    add_scale(ctx, ctx.bottoms[0], ctx.tops[0], std::move(ones), &bias);
    return Status::Ok();
  }
  return add_broadcast(ctx, p.axis(), fb::BinaryOpType::Add, learned ? &bias : nullptr, shape, nullptr);
}

Status convert_normalize(LayerContext& ctx) {
  const caffe::NormalizeParameter& p = ctx.layer.norm_param();
  Status s = expect_blobs(ctx, 1, "scale");
  if (!s.ok()) return s;
  const int count = static_cast<int>(blob_count(*ctx.blobs[0]));
  Tensor scale;
  if (!(s = take_blob(ctx, 0, "scale", {p.channel_shared() ? 1 : count}, &scale)).ok()) return s;
  fb::NormalizeParamT q;
  q.across_spatial = p.across_spatial();
  q.channel_shared = p.channel_shared();
  q.eps = p.eps();
  Node& n = add_node(ctx, "Normalize", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  n.weights.push_back(std::move(scale));
  return Status::Ok();
}

Status convert_lrn(LayerContext& ctx) {
  const caffe::LRNParameter& p = ctx.layer.lrn_param();
  if (p.local_size() % 2 == 0) return invalid("local_size must be odd, got " + std::to_string(p.local_size()));
  fb::LRNParamT q;
  Status s = to_int("local_size", p.local_size(), &q.local_size);
  if (!s.ok()) return s;
  q.alpha = p.alpha();
  q.beta = p.beta();
  const bool within = p.norm_region() == caffe::LRNParameter::WITHIN_CHANNEL;
  q.region = within ? fb::LRNRegion::WithinChannel : fb::LRNRegion::AcrossChannels;
  // Caffe's within-channel LRN is built from Power layers with shift 1: k is unused.
  q.bias = within ? 1.f : p.k();
  add_node(ctx, "LRN", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}


}  // namespace kestrel::convert::caffe_import
