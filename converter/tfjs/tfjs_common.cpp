// What every TF.js op converter shares: constants, axes and broadcasting, and the
// layout arithmetic between TF's NHWC tensors and Kestrel's [C,H,W] blobs.
#include <algorithm>
#include <cstdint>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {

size_t ConstTensor::count() const {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

Status unsupported(const std::string& what) { return Status(ErrorCode::kUnsupported, what); }
Status invalid(const std::string& what) { return Status(ErrorCode::kCorruptModel, what); }

std::string dims_text(const std::vector<int64_t>& v) {
  std::string t;
  for (int64_t d : v) t += (t.empty() ? "" : ",") + std::to_string(d);
  return "[" + t + "]";
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    // Saturates instead of overflowing (a crafted graph's dims): no real tensor is that
    // large, and the shape checks downstream refuse it.
    if (__builtin_mul_overflow(p, d, &p)) return INT64_MAX;
  }
  return p;
}

Status const_ints(const OpContext& ctx, size_t i, const char* what, std::vector<int64_t>* out) {
  const ConstTensor* c = ctx.constant(i);
  if (!c) return unsupported(std::string(what) + " must be a constant");
  out->clear();
  for (double v : c->values) out->push_back(static_cast<int64_t>(v));
  return Status::Ok();
}

Status normalize_axis(int64_t axis, size_t rank, const char* what, size_t* out) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  *out = static_cast<size_t>(axis < 0 ? axis + r : axis);
  return Status::Ok();
}

bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t n = std::max(a.size(), b.size());
  out->assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    (*out)[i] = x == 1 ? y : x;
  }
  return true;
}

Status pick_layout(const std::vector<int64_t>& dims, Layout* l) {
  if (dims.empty()) return unsupported("scalar tensors are not supported at run time");
  if (dims.size() == 4 && dims[0] == 1) {
    *l = Layout{true, 1};
    return Status::Ok();
  }
  // Plain: leading 1s go (at least one dim stays), down to Kestrel's 4 dims.
  size_t ones = 0;
  while (ones + 1 < dims.size() && dims[ones] == 1) ++ones;
  if (dims.size() - ones > 4) return unsupported("shape " + dims_text(dims) + " has more than 4 dims besides leading 1s");
  *l = Layout{false, static_cast<int>(ones)};
  return Status::Ok();
}

std::vector<int> kestrel_dims(const std::vector<int64_t>& tf, const Layout& l) {
  if (l.channels_last) {
    const size_t r = tf.size();
    return {static_cast<int>(tf[r - 1]), static_cast<int>(tf[r - 3]), static_cast<int>(tf[r - 2])};
  }
  return std::vector<int>(tf.begin() + l.ones, tf.end());
}

Status as_tf_order(const OpContext& ctx, const std::string& x, std::string* y, std::vector<int64_t>* dims) {
  Status s = ctx.tf_shape(x, dims);
  if (!s.ok()) return s;
  const Layout l = ctx.layout(x);
  const size_t r = dims->size();
  if (!l.channels_last || (*dims)[r - 1] == 1 || (*dims)[r - 2] * (*dims)[r - 3] == 1) {
    *y = x;
    return Status::Ok();
  }
  *y = ctx.new_blob("/nhwc", Layout{false, l.ones});
  fb::PermuteParamT p;
  p.order = {1, 2, 0};
  ctx.add("Permute", std::move(p), {x}, {*y}, "/to_nhwc_" + *y);
  return Status::Ok();
}

Status reshape_to(const OpContext& ctx, const std::string& x, const std::vector<int64_t>& dims, std::string* y,
                  Layout* l) {
  std::vector<int64_t> src;
  Status s = ctx.tf_shape(x, &src);
  if (!s.ok()) return s;
  if (product(src) != product(dims)) {
    return invalid("cannot reshape " + dims_text(src) + " to " + dims_text(dims) + ": element counts differ");
  }
  const Layout from = ctx.layout(x);
  const size_t r = dims.size();
  if (from.channels_last && r >= 3 && std::equal(dims.end() - 3, dims.end(), src.end() - 3) &&
      std::all_of(dims.begin(), dims.end() - 3, [](int64_t d) { return d == 1; })) {
    *y = x;  // an image with more or fewer leading 1s ([1,H,W,C] <-> [H,W,C]): the same blob
    *l = Layout{true, static_cast<int>(r) - 3};
    return Status::Ok();
  }
  if (!(s = pick_layout(dims, l)).ok()) return s;
  std::vector<int> have;
  if (!(s = ctx.extents(x, &have)).ok()) return s;
  if (from.channels_last == l->channels_last && have == kestrel_dims(dims, *l)) {
    *y = x;  // only leading 1s change: the same blob
    return Status::Ok();
  }
  std::string flat;
  std::vector<int64_t> unused;
  if (!(s = as_tf_order(ctx, x, &flat, &unused)).ok()) return s;
  const bool permute = l->channels_last && dims[r - 1] != 1 && dims[r - 2] * dims[r - 3] != 1;
  if (y->empty()) *y = ctx.new_blob("/reshape", *l);
  fb::ReshapeParamT p;
  if (permute) {
    const std::string hwc = ctx.new_blob("/hwc", Layout{false, l->ones});
    p.shape = {static_cast<int>(dims[r - 3]), static_cast<int>(dims[r - 2]), static_cast<int>(dims[r - 1])};
    ctx.add("Reshape", std::move(p), {flat}, {hwc}, "/reshape_" + hwc);
    fb::PermuteParamT perm;
    perm.order = {2, 0, 1};
    ctx.add("Permute", std::move(perm), {hwc}, {*y}, "/to_chw_" + *y);
  } else {
    p.shape = kestrel_dims(dims, *l);
    ctx.add("Reshape", std::move(p), {flat}, {*y}, "/reshape_" + *y);
  }
  return Status::Ok();
}

Status as_channels_last(const OpContext& ctx, const std::string& x, std::string* y) {
  if (ctx.layout(x).channels_last) {
    *y = x;
    return Status::Ok();
  }
  std::vector<int64_t> dims;
  Status s = ctx.tf_shape(x, &dims);
  if (!s.ok()) return s;
  while (dims.size() > 4 && dims[0] == 1) dims.erase(dims.begin());
  while (dims.size() < 4) dims.insert(dims.begin(), 1);
  if (dims.size() != 4 || dims[0] != 1) {
    return unsupported("input " + dims_text(dims) + " is not an image (a batch of 1, [1,H,W,C])");
  }
  y->clear();
  Layout l;
  return reshape_to(ctx, x, dims, y, &l);
}

Status const_as_weight(const ConstTensor& c, const Layout& l, Tensor* w) {
  std::vector<int64_t> dims = c.dims;
  w->half = c.half;
  if (!l.channels_last) {
    size_t ones = 0;
    while (ones + 1 < dims.size() && dims[ones] == 1) ++ones;
    dims.erase(dims.begin(), dims.begin() + static_cast<long>(ones));
    if (dims.empty()) dims = {1};
    if (dims.size() > 4) return unsupported("constant " + dims_text(c.dims) + " has more than 4 dims");
    w->shape.assign(dims.begin(), dims.end());
    w->data.assign(c.values.begin(), c.values.end());
    return Status::Ok();
  }
  while (dims.size() > 4 && dims[0] == 1) dims.erase(dims.begin());
  while (dims.size() < 4) dims.insert(dims.begin(), 1);
  if (dims.size() != 4 || dims[0] != 1) {
    return unsupported("constant " + dims_text(c.dims) + " does not broadcast against an image [1,H,W,C]");
  }
  const int64_t H = dims[1], W = dims[2], C = dims[3];
  w->shape = {static_cast<int>(C), static_cast<int>(H), static_cast<int>(W)};
  w->data.resize(c.values.size());
  for (int64_t y = 0; y < H; ++y) {
    for (int64_t x = 0; x < W; ++x) {
      for (int64_t ch = 0; ch < C; ++ch) {
        w->data[static_cast<size_t>((ch * H + y) * W + x)] = static_cast<float>(c.values[static_cast<size_t>((y * W + x) * C + ch)]);
      }
    }
  }
  return Status::Ok();
}

}  // namespace kestrel::convert::tfjs_import
