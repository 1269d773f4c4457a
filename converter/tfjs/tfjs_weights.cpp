#include "tfjs/tfjs_weights.h"

#include <cmath>
#include <cstring>

#include "core/half.h"

namespace kestrel::convert::tfjs_import {
namespace {

// How one manifest entry is stored: bytes per element, and how to decode one.
struct Storage {
  size_t bytes = 0;
  enum Kind { kF32, kI32, kBool, kF16, kU8, kU16 } kind = kF32;
};

Status storage_of(const tfjs::WeightEntry& w, Storage* st) {
  const std::string q = w.has_quantization() ? w.quantization().dtype() : "";
  if (q == "float16") {
    *st = {2, Storage::kF16};
  } else if (q == "uint8") {
    *st = {1, Storage::kU8};
  } else if (q == "uint16") {
    *st = {2, Storage::kU16};
  } else if (!q.empty()) {
    return Status(ErrorCode::kUnsupported, "quantization dtype '" + q + "' is not supported");
  } else if (w.dtype() == "float32") {
    *st = {4, Storage::kF32};
  } else if (w.dtype() == "int32") {
    *st = {4, Storage::kI32};
  } else if (w.dtype() == "bool") {
    *st = {1, Storage::kBool};
  } else {
    return Status(ErrorCode::kUnsupported, "dtype '" + w.dtype() + "' is not supported");
  }
  if ((st->kind == Storage::kU8 || st->kind == Storage::kU16) &&
      (!(w.quantization().scale() != 0.f) || !std::isfinite(w.quantization().scale()) ||
       !std::isfinite(w.quantization().min()))) {
    return Status(ErrorCode::kCorruptModel, "quantization scale " + std::to_string(w.quantization().scale()) +
                                                " / min " + std::to_string(w.quantization().min()) +
                                                " is invalid (the scale must be finite and not 0)");
  }
  return Status::Ok();
}

tfjs::DataType value_type(const tfjs::WeightEntry& w) {
  const std::string& t = w.dtype();
  return t == "int32" ? tfjs::DT_INT32 : t == "bool" ? tfjs::DT_BOOL : tfjs::DT_FLOAT;
}

void decode(const tfjs::WeightEntry& w, const Storage& st, const uint8_t* p, size_t n, ConstTensor* c) {
  c->values.resize(n);
  const float scale = w.quantization().scale(), min = w.quantization().min();
  for (size_t i = 0; i < n; ++i, p += st.bytes) {
    double v = 0;
    switch (st.kind) {
      case Storage::kF32: { float f; std::memcpy(&f, p, 4); v = f; break; }
      case Storage::kI32: { int32_t k; std::memcpy(&k, p, 4); v = k; break; }
      case Storage::kBool: v = *p != 0; break;
      case Storage::kF16: { uint16_t h; std::memcpy(&h, p, 2); v = half_to_float(h); break; }
      // TF.js dequantizes in float32: min + q * scale.
      case Storage::kU8: v = static_cast<float>(static_cast<float>(*p) * scale + min); break;
      case Storage::kU16: { uint16_t q; std::memcpy(&q, p, 2); v = static_cast<float>(static_cast<float>(q) * scale + min); break; }
    }
    // Quantized int32 weights round back to integers, as TF.js does.
    if (c->dtype == tfjs::DT_INT32 && (st.kind == Storage::kU8 || st.kind == Storage::kU16)) v = std::round(v);
    c->values[i] = v;
  }
  c->half = st.kind == Storage::kF16 && c->dtype == tfjs::DT_FLOAT;
}

}  // namespace

Status read_weights(const tfjs::GraphModel& model, const ShardReader& read_shard,
                    std::map<std::string, ConstTensor>* out) {
  for (int gi = 0; gi < model.weights_manifest_size(); ++gi) {
    const tfjs::WeightGroup& group = model.weights_manifest(gi);
    std::string bytes;
    for (const std::string& path : group.paths()) {
      std::string shard;
      Status s = read_shard(path, &shard);
      if (!s.ok()) return s;
      bytes += shard;
    }
    const std::string where = "weights group " + std::to_string(gi) +
                              (group.paths_size() ? " ('" + group.paths(0) + "'...)" : std::string(""));
    size_t offset = 0;
    for (const tfjs::WeightEntry& w : group.weights()) {
      const std::string what = where + ", weight '" + w.name() + "'";
      Storage st;
      Status s = storage_of(w, &st);
      if (!s.ok()) return Status(s.code(), what + ": " + s.message());
      ConstTensor c;
      c.dtype = value_type(w);
      size_t n = 1;
      for (int64_t d : w.shape()) {
        if (d < 0 || d > (int64_t{1} << 31) || n > (size_t{1} << 40) / static_cast<size_t>(std::max<int64_t>(d, 1))) {
          return Status(ErrorCode::kCorruptModel, what + ": shape dimension " + std::to_string(d) + " is invalid");
        }
        c.dims.push_back(d);
        n *= static_cast<size_t>(d);
      }
      const size_t need = n * st.bytes;
      if (offset + need > bytes.size()) {
        return Status(ErrorCode::kCorruptModel, what + ": needs bytes " + std::to_string(offset) + ".." +
                                                    std::to_string(offset + need) + " but the shards hold " +
                                                    std::to_string(bytes.size()) + " (a short or missing shard?)");
      }
      decode(w, st, reinterpret_cast<const uint8_t*>(bytes.data()) + offset, n, &c);
      offset += need;
      if (!out->emplace(w.name(), std::move(c)).second) {
        return Status(ErrorCode::kCorruptModel, what + ": the manifest lists this weight twice");
      }
    }
    if (offset != bytes.size()) {
      return Status(ErrorCode::kCorruptModel, where + ": the weights take " + std::to_string(offset) +
                                                  " bytes but the shards hold " + std::to_string(bytes.size()));
    }
  }
  return Status::Ok();
}

Status inline_tensor(const tfjs::NodeDef& node, ConstTensor* out) {
  const auto it = node.attr().find("value");
  if (it == node.attr().end() || it->second.value_case() != tfjs::AttrValue::kTensor) {
    return Status(ErrorCode::kCorruptModel, "a Const with no weight in the manifest and no value");
  }
  const tfjs::TensorProto& t = it->second.tensor();
  out->dtype = t.dtype();
  size_t n = 1;
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() < 0 || d.size() > (1 << 24)) return Status(ErrorCode::kCorruptModel, "inline Const dimension is invalid");
    out->dims.push_back(d.size());
    n *= static_cast<size_t>(d.size());
  }
  std::vector<double> v;
  for (float f : t.float_val()) v.push_back(f);
  for (int32_t i : t.int_val()) v.push_back(i);
  for (int64_t i : t.int64_val()) v.push_back(static_cast<double>(i));
  for (bool b : t.bool_val()) v.push_back(b);
  // TensorFlow writes a splat (every element equal) as one value.
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n) {
    return Status(ErrorCode::kCorruptModel, "a Const with no weight in the manifest and " + std::to_string(v.size()) +
                                                " inline values for " + std::to_string(n) + " elements");
  }
  out->values = std::move(v);
  return Status::Ok();
}

}  // namespace kestrel::convert::tfjs_import
