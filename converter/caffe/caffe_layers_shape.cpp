// Caffe layer -> Kestrel nodes: layers that move values around (concat, slice,
// split, crop, flatten, reshape, permute), resize them (Interp, Upsample) or belong
// to SSD's detection head (PriorBox, DetectionOutput).
//
// Caffe shapes and axes include the batch (always 1 here); Kestrel's do not. Where
// the mapping depends on the input's rank or extents, the converter asks
// ctx.shape_of, which runs Kestrel's own shape inference.
#include <cfloat>
#include <set>

#include "caffe/caffe_layers.h"

namespace kestrel::convert::caffe_import {

namespace {

template <class T>
std::string list_text(const T& values) {
  std::string t;
  for (const auto& v : values) t += (t.empty() ? "" : ",") + num(static_cast<double>(v));
  return "[" + t + "]";
}

// The Caffe extents of a bottom: the batch (1) followed by Kestrel's extents.
Status caffe_extents(LayerContext& ctx, size_t bottom, std::vector<int>* extents) {
  std::vector<int> e;
  Status s = ctx.shape_of(ctx.bottoms[bottom], &e);
  if (!s.ok()) return s;
  extents->assign(1, 1);
  extents->insert(extents->end(), e.begin(), e.end());
  return Status::Ok();
}

}  // namespace

Status convert_concat(LayerContext& ctx) {
  const caffe::ConcatParameter& p = ctx.layer.concat_param();
  // As in Caffe, the legacy concat_dim wins when given.
  const bool legacy = p.has_concat_dim();
  fb::ConcatParamT q;
  Status s = kestrel_axis(legacy ? static_cast<int>(p.concat_dim()) : p.axis(), legacy ? "concat_dim" : "axis",
                          &q.axis);
  if (!s.ok()) return s;
  add_node(ctx, "Concat", std::move(q), ctx.bottoms, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_slice(LayerContext& ctx) {
  const caffe::SliceParameter& p = ctx.layer.slice_param();
  const bool legacy = p.has_slice_dim();
  fb::SliceParamT q;
  Status s = kestrel_axis(legacy ? static_cast<int>(p.slice_dim()) : p.axis(), legacy ? "slice_dim" : "axis", &q.axis);
  if (!s.ok()) return s;
  if (p.slice_point_size() > 0 && static_cast<size_t>(p.slice_point_size()) + 1 != ctx.tops.size()) {
    return invalid(std::to_string(p.slice_point_size()) + " slice_point values for " +
                   std::to_string(ctx.tops.size()) + " tops (expected one fewer than the tops)");
  }
  for (uint32_t point : p.slice_point()) {
    int v = 0;
    if (!(s = to_int("slice_point", point, &v)).ok()) return s;
    q.points.push_back(v);
  }
  add_node(ctx, "Slice", std::move(q), {ctx.bottoms[0]}, ctx.tops);
  return Status::Ok();
}

Status convert_split(LayerContext& ctx) {
  add_node(ctx, "Split", fb::SplitParamT{}, {ctx.bottoms[0]}, ctx.tops);
  return Status::Ok();
}

Status convert_crop(LayerContext& ctx) {
  const caffe::CropParameter& p = ctx.layer.crop_param();
  fb::CropParamT q;
  Status s = kestrel_axis(p.axis(), "axis", &q.axis);
  if (!s.ok()) return s;
  for (uint32_t offset : p.offset()) {
    int v = 0;
    if (!(s = to_int("offset", offset, &v)).ok()) return s;
    q.offsets.push_back(v);
  }
  // Bottom 1 only lends its shape.
  add_node(ctx, "Crop", std::move(q), {ctx.bottoms[0], ctx.bottoms[1]}, {ctx.tops[0]});
  return Status::Ok();
}

// Kestrel's Flatten joins every axis after the batch, Caffe's default; joining only
// axes [axis, end_axis] is a Reshape that keeps the leading axes (0) and spells out
// the trailing ones.
Status convert_flatten(LayerContext& ctx) {
  const caffe::FlattenParameter& p = ctx.layer.flatten_param();
  if (p.axis() != 1 || p.end_axis() != -1) {
    std::vector<int> in;
    Status s = caffe_extents(ctx, 0, &in);
    if (!s.ok()) return s;
    const int rank = static_cast<int>(in.size());
    const int first = p.axis() < 0 ? p.axis() + rank : p.axis();
    const int last = p.end_axis() < 0 ? p.end_axis() + rank : p.end_axis();
    if (first == 0) return unsupported("axis", std::to_string(p.axis()), "the batch axis");
    if (first < 0 || last >= rank || last < first) {
      return invalid("axis " + std::to_string(p.axis()) + " and end_axis " + std::to_string(p.end_axis()) +
                     " do not fit a " + std::to_string(rank) + "-axis input");
    }
    if (first != 1 || last != rank - 1) {
      fb::ReshapeParamT q;
      q.shape.assign(static_cast<size_t>(first - 1), 0);
      q.shape.push_back(-1);
      q.shape.insert(q.shape.end(), in.begin() + last + 1, in.end());
      add_node(ctx, "Reshape", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
      return Status::Ok();
    }
  }
  add_node(ctx, "Flatten", fb::FlattenParamT{}, {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

// Caffe replaces input axes [axis, axis + num_axes) by `shape`, where 0 copies the
// input's extent at the same position and -1 is inferred. Kestrel's Reshape has the
// same 0 and -1 rules over the whole shape, so the kept leading axes become 0s and
// the kept trailing ones (whose positions may shift) explicit extents.
Status convert_reshape(LayerContext& ctx) {
  const caffe::ReshapeParameter& p = ctx.layer.reshape_param();
  std::vector<int> dims;
  int inferred = 0;
  for (int64_t d : p.shape().dim()) {
    if (d < -1 || d > 0x7fffffff) return invalid("shape " + list_text(p.shape().dim()) + " has an invalid entry");
    inferred += d == -1 ? 1 : 0;
    dims.push_back(static_cast<int>(d));
  }
  if (inferred > 1) return invalid("shape " + list_text(dims) + " has more than one -1");
  if (p.num_axes() < -1) return invalid("num_axes must be >= -1, got " + std::to_string(p.num_axes()));

  std::vector<int> out;  // Caffe's target, batch first
  if (p.axis() == 0 && p.num_axes() == -1) {
    out = dims;
  } else {
    std::vector<int> in;
    Status s = caffe_extents(ctx, 0, &in);
    if (!s.ok()) return s;
    const int rank = static_cast<int>(in.size());
    const int start = p.axis() < 0 ? p.axis() + rank + 1 : p.axis();
    const int end = p.num_axes() == -1 ? rank : start + p.num_axes();
    if (start < 0 || start > rank || end > rank) {
      return invalid("axis " + std::to_string(p.axis()) + " and num_axes " + std::to_string(p.num_axes()) +
                     " do not fit a " + std::to_string(rank) + "-axis input");
    }
    out.assign(static_cast<size_t>(start), 0);
    out.insert(out.end(), dims.begin(), dims.end());
    out.insert(out.end(), in.begin() + end, in.end());
  }
  if (out.empty() || (out[0] != 0 && out[0] != 1)) {
    return unsupported("shape", list_text(dims), "the batch dimension must stay 0 or 1");
  }
  if (out.size() == 1) return unsupported("shape", list_text(dims), "nothing left besides the batch");
  fb::ReshapeParamT q;
  q.shape.assign(out.begin() + 1, out.end());
  add_node(ctx, "Reshape", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

// Caffe's order may list only the leading axes; the others follow in their order.
Status convert_permute(LayerContext& ctx) {
  const caffe::PermuteParameter& p = ctx.layer.permute_param();
  std::vector<int> in;
  Status s = caffe_extents(ctx, 0, &in);
  if (!s.ok()) return s;
  const int rank = static_cast<int>(in.size());
  std::vector<int> order;
  std::set<int> seen;
  for (uint32_t a : p.order()) {
    if (a >= static_cast<uint32_t>(rank) || !seen.insert(static_cast<int>(a)).second) {
      return invalid("order " + list_text(p.order()) + " is not a permutation of the input's " +
                     std::to_string(rank) + " axes");
    }
    order.push_back(static_cast<int>(a));
  }
  for (int a = 0; a < rank; ++a) {
    if (!seen.count(a)) order.push_back(a);
  }
  if (order[0] != 0) return unsupported("order", list_text(p.order()), "the batch axis must stay first");
  fb::PermuteParamT q;
  for (size_t i = 1; i < order.size(); ++i) q.order.push_back(order[i] - 1);
  add_node(ctx, "Permute", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_priorbox(LayerContext& ctx) {
  const caffe::PriorBoxParameter& p = ctx.layer.prior_box_param();
  if (p.min_size_size() == 0) return invalid("min_size is required");
  fb::PriorBoxParamT q;
  q.min_sizes.assign(p.min_size().begin(), p.min_size().end());
  q.max_sizes.assign(p.max_size().begin(), p.max_size().end());
  q.aspect_ratios.assign(p.aspect_ratio().begin(), p.aspect_ratio().end());
  q.variances.assign(p.variance().begin(), p.variance().end());
  q.flip = p.flip();
  q.clip = p.clip();
  q.offset = p.offset();
  Status s;
  if (p.has_img_h() || p.has_img_w()) {
    if (p.has_img_size()) return invalid("either img_size or img_h/img_w, not both");
    if (!(p.has_img_h() && p.has_img_w())) return invalid("img_h and img_w must be set together");
    s = to_int("img_h", p.img_h(), &q.image_h);
    if (s.ok()) s = to_int("img_w", p.img_w(), &q.image_w);
  } else if (p.has_img_size()) {
    s = to_int("img_size", p.img_size(), &q.image_h);
    q.image_w = q.image_h;
  }
  if (!s.ok()) return s;
  if (p.has_step_h() || p.has_step_w()) {
    if (p.has_step()) return invalid("either step or step_h/step_w, not both");
    if (!(p.has_step_h() && p.has_step_w())) return invalid("step_h and step_w must be set together");
    q.step_h = p.step_h();
    q.step_w = p.step_w();
  } else if (p.has_step()) {
    q.step_h = q.step_w = p.step();
  }
  if (ctx.bottoms.size() < 2 && (q.image_h <= 0 || q.image_w <= 0)) {
    return invalid("needs the image as bottom 1, or img_size or img_h/img_w");
  }
  add_node(ctx, "PriorBox", std::move(q), ctx.bottoms, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_detection_output(LayerContext& ctx) {
  const caffe::DetectionOutputParameter& p = ctx.layer.detection_output_param();
  const caffe::NonMaximumSuppressionParameter& nms = p.nms_param();
  if (!p.share_location()) return unsupported("share_location", "false");
  if (nms.eta() != 1.f) return unsupported("nms_param.eta", num(nms.eta()), "adaptive NMS");
  fb::DetectionOutputParamT q;
  Status s = to_int("num_classes", p.num_classes(), &q.num_classes);
  if (!s.ok()) return s;
  q.share_location = true;
  q.background_label_id = p.background_label_id();
  q.nms_threshold = nms.nms_threshold();
  q.top_k = nms.has_top_k() ? nms.top_k() : -1;
  q.keep_top_k = p.keep_top_k();
  // Unset, Caffe keeps every score.
  q.confidence_threshold = p.has_confidence_threshold() ? p.confidence_threshold() : -FLT_MAX;
  q.variance_encoded_in_target = p.variance_encoded_in_target();
  switch (p.code_type()) {
    case caffe::PriorBoxParameter::CORNER: q.code_type = fb::CodeType::Corner; break;
    case caffe::PriorBoxParameter::CENTER_SIZE: q.code_type = fb::CodeType::CenterSize; break;
    default: q.code_type = fb::CodeType::CornerSize; break;
  }
  add_node(ctx, "DetectionOutput", std::move(q), ctx.bottoms, {ctx.tops[0]});
  return Status::Ok();
}

Status convert_shuffle_channel(LayerContext& ctx) {
  fb::ShuffleChannelParamT q;
  Status s = to_int("group", ctx.layer.shuffle_channel_param().group(), &q.group);
  if (!s.ok()) return s;
  add_node(ctx, "ShuffleChannel", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

// DeepLab's Interp: bilinear with aligned corners, to a size given outright or
// derived from the input's by shrink and zoom factors (in that order, as in Caffe).
Status convert_interp(LayerContext& ctx) {
  const caffe::InterpParameter& p = ctx.layer.interp_param();
  if (p.pad_beg() != 0 || p.pad_end() != 0) {
    return unsupported("pad_beg/pad_end", std::to_string(p.pad_beg()) + "/" + std::to_string(p.pad_end()));
  }
  if (p.shrink_factor() < 1 || p.zoom_factor() < 1) return invalid("shrink_factor and zoom_factor must be >= 1");
  fb::InterpParamT q;
  q.mode = fb::InterpMode::Bilinear;
  q.align_corners = true;
  const bool shrink = p.has_shrink_factor(), zoom = p.has_zoom_factor();
  if (!shrink && !zoom) {
    if (!p.has_height() || !p.has_width() || p.height() <= 0 || p.width() <= 0) {
      return invalid("needs height and width, zoom_factor or shrink_factor");
    }
    q.output_h = p.height();
    q.output_w = p.width();
  } else {
    std::vector<int> in;
    Status s = ctx.shape_of(ctx.bottoms[0], &in);
    if (!s.ok()) return s;
    if (in.size() != 3) return invalid("needs a [N,C,H,W] input");
    int size[2] = {in[1], in[2]};
    for (int& v : size) {
      if (shrink) v = (v - 1) / p.shrink_factor() + 1;
      if (zoom) v = v + (v - 1) * (p.zoom_factor() - 1);
    }
    q.output_h = size[0];
    q.output_w = size[1];
  }
  add_node(ctx, "Interp", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

// One bottom (YOLO forks): nearest-neighbour upsampling by an integer factor. Two
// bottoms (SegNet) is max-unpooling by the pooling indices, which Kestrel lacks.
Status convert_upsample(LayerContext& ctx) {
  const caffe::UpsampleParameter& p = ctx.layer.upsample_param();
  if (ctx.bottoms.size() != 1) {
    return unsupported("bottom", std::to_string(ctx.bottoms.size()) + " bottoms", "max-unpooling by indices");
  }
  if (p.pad_out_h() || p.pad_out_w()) return unsupported("pad_out_h/pad_out_w", "true");
  fb::InterpParamT q;
  q.mode = fb::InterpMode::Nearest;
  Status s;
  if (p.has_upsample_h() || p.has_upsample_w()) {
    if (!(p.has_upsample_h() && p.has_upsample_w())) return invalid("upsample_h and upsample_w must be set together");
    s = to_int("upsample_h", p.upsample_h(), &q.output_h);
    if (s.ok()) s = to_int("upsample_w", p.upsample_w(), &q.output_w);
  } else {
    const uint32_t sh = p.has_scale_h() ? p.scale_h() : p.scale();
    const uint32_t sw = p.has_scale_w() ? p.scale_w() : p.scale();
    if (sh == 0 || sw == 0) return invalid("scale must be > 0");
    q.scale_h = static_cast<float>(sh);
    q.scale_w = static_cast<float>(sw);
  }
  if (!s.ok()) return s;
  add_node(ctx, "Interp", std::move(q), {ctx.bottoms[0]}, {ctx.tops[0]});
  return Status::Ok();
}

}  // namespace kestrel::convert::caffe_import
