// What every ONNX op converter shares: constants, attributes, axis and layout
// arithmetic, and the single-activation converter.
#include <algorithm>
#include <climits>
#include <cstring>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {

// ---- ConstTensor ----

size_t ConstTensor::count() const {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

std::vector<int> ConstTensor::int_dims() const { return std::vector<int>(dims.begin(), dims.end()); }

Tensor ConstTensor::to_weight() const {
  Tensor t;
  t.shape = dims.empty() ? std::vector<int>{1} : int_dims();
  t.data.assign(values.begin(), values.end());
  return t;
}

// ---- attributes ----

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t fallback) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& n, const char* name, float fallback) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? a->f() : fallback;
}

std::string attr_string(const onnx::NodeProto& n, const char* name, const std::string& fallback) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

// ---- shared helpers ----

Status unsupported(const std::string& what) { return Status(ErrorCode::kUnsupported, what); }
Status invalid(const std::string& what) { return Status(ErrorCode::kCorruptModel, what); }

std::string dims_text(const std::vector<int64_t>& v) {
  std::string t;
  for (int64_t d : v) t += (t.empty() ? "" : ",") + std::to_string(d);
  return "[" + t + "]";
}

int clamp_int(int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, INT_MIN, INT_MAX)); }

namespace {

// Little-endian raw_data of `T` values.
template <class T>
void raw_values(const std::string& raw, std::vector<double>* out) {
  const size_t n = raw.size() / sizeof(T);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    (*out)[i] = static_cast<double>(v);
  }
}

}  // namespace

Status read_tensor(const onnx::TensorProto& t, ConstTensor* out) {
  using TP = onnx::TensorProto;
  if (t.data_location() == TP::EXTERNAL) return unsupported("external tensor data is not supported");
  out->dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : out->dims) {
    if (d < 0 || d > INT_MAX) return invalid("dimension " + std::to_string(d) + " is invalid");
  }
  const bool raw = t.has_raw_data();
  const std::string& r = t.raw_data();
  out->is_float = t.data_type() == TP::FLOAT || t.data_type() == TP::DOUBLE;
  switch (t.data_type()) {
    case TP::FLOAT:
      if (raw) raw_values<float>(r, &out->values);
      else out->values.assign(t.float_data().begin(), t.float_data().end());
      break;
    case TP::DOUBLE:
      if (raw) raw_values<double>(r, &out->values);
      else out->values.assign(t.double_data().begin(), t.double_data().end());
      break;
    case TP::INT64:
      if (raw) raw_values<int64_t>(r, &out->values);
      else out->values.assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case TP::INT32:
      if (raw) raw_values<int32_t>(r, &out->values);
      else out->values.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case TP::INT8:
      if (raw) raw_values<int8_t>(r, &out->values);
      else out->values.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case TP::UINT8:
    case TP::BOOL:
      if (raw) raw_values<uint8_t>(r, &out->values);
      else out->values.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    default:
      return unsupported("tensor data type " + std::to_string(t.data_type()) + " is not supported");
  }
  if (out->values.size() != out->count()) {
    return invalid("holds " + std::to_string(out->values.size()) + " values but its shape " + dims_text(out->dims) +
                   " holds " + std::to_string(out->count()));
  }
  return Status::Ok();
}

Status normalize_axis(int64_t axis, size_t rank, const char* what, size_t* out) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                   std::to_string(rank));
  }
  *out = static_cast<size_t>(axis < 0 ? axis + r : axis);
  return Status::Ok();
}

Status kestrel_axis(int64_t axis, size_t rank, bool batched, const char* what, int* out) {
  size_t a = 0;
  Status s = normalize_axis(axis, rank, what, &a);
  if (!s.ok()) return s;
  if (batched && a == 0) return unsupported(std::string(what) + " is the batch axis");
  *out = static_cast<int>(a) - (batched ? 1 : 0);
  return Status::Ok();
}

Status kestrel_axes_of(const OpContext& ctx, std::string* x, const std::vector<int64_t>& axes, const char* what,
                       std::vector<int>* out) {
  std::vector<int64_t> dims;
  Status s = ctx.shape(*x, &dims);
  if (!s.ok()) return s;
  for (int64_t a : axes) {
    size_t k = 0;
    if (!(s = normalize_axis(a, dims.size(), what, &k)).ok()) return s;
    if (k == 0 && ctx.batched(*x) && !(s = ctx.as_batchless(*x, x)).ok()) return s;
  }
  out->resize(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!(s = kestrel_axis(axes[i], dims.size(), ctx.batched(*x), what, &(*out)[i])).ok()) return s;
  }
  return Status::Ok();
}

Status pick_layout(const std::vector<int64_t>& dims, bool prefer_batched, bool* batched) {
  if (dims.empty()) return unsupported("a scalar (rank-0) run-time tensor; Kestrel blobs have 1 to 4 dims");
  for (int64_t d : dims) {
    if (d <= 0) return unsupported("an empty tensor " + dims_text(dims));
    if (d > INT_MAX) return unsupported("dimension " + std::to_string(d) + " is too large");
  }
  const bool can_batch = dims.size() >= 2 && dims[0] == 1;
  if (dims.size() > 5 || (dims.size() == 5 && !can_batch)) {
    return unsupported("shape " + dims_text(dims) + ": Kestrel blobs have at most 4 dims besides a batch of 1");
  }
  *batched = can_batch && (prefer_batched || dims.size() == 5);
  return Status::Ok();
}

std::vector<int> kestrel_dims(const std::vector<int64_t>& dims, bool batched) {
  return std::vector<int>(dims.begin() + (batched ? 1 : 0), dims.end());
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, dims.size()); ++i) p *= dims[i];
  return p;
}

bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

Status const_ints(const OpContext& ctx, size_t i, const char* what, std::vector<int64_t>* out) {
  const ConstTensor* c = ctx.constant(i);
  if (!c) return unsupported(std::string(what) + " must be a constant (input '" + ctx.in(i) + "')");
  out->assign(c->values.begin(), c->values.end());
  return Status::Ok();
}

Status add_activation(OpContext& ctx, fb::ActivationType type, float alpha, float beta) {
  std::string x;
  Status s = ctx.blob(0, &x);
  if (!s.ok()) return s;
  fb::ActivationParamT p;
  p.activation = std::make_unique<fb::ActivationT>();
  p.activation->type = type;
  p.activation->alpha = alpha;
  p.activation->beta = beta;
  ctx.add("Activation", std::move(p), {x}, {ctx.out(0)});
  return Status::Ok();
}

}  // namespace kestrel::convert::onnx_import
