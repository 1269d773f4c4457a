// Helpers of the ONNX conformance runner (test_onnx_conformance.cpp): reading ONNX's
// backend test data (serialized onnx.TensorProto files and the model's graph
// signature) into Kestrel Mats and float vectors, and ONNX's backend comparison.
// Free of doctest, so that a standalone program can use it too.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kestrel/mat.h"
#include "onnx.pb.h"

namespace ot {

inline bool read_bytes(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return f.good() || f.eof();
}

inline std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

inline const char* elem_type_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "float32";
    case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::INT16: return "int16";
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT64: return "int64";
    case onnx::TensorProto::STRING: return "string";
    case onnx::TensorProto::BOOL: return "bool";
    case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::DOUBLE: return "float64";
    case onnx::TensorProto::UINT32: return "uint32";
    case onnx::TensorProto::UINT64: return "uint64";
    case onnx::TensorProto::BFLOAT16: return "bfloat16";
    default: return "other";
  }
}

// A test data file: a float tensor with its full ONNX dims.
struct FloatTensor {
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// Reads input_N.pb / output_N.pb. Returns "" or why the file cannot be used as a
// float32 tensor (the caller decides whether that is "unsupported" or an error).
inline std::string read_float_tensor(const std::string& path, FloatTensor* t) {
  std::string bytes;
  if (!read_bytes(path, &bytes)) return "cannot read " + path;
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) return "not a TensorProto: " + path;
  if (p.data_type() != onnx::TensorProto::FLOAT) return std::string(elem_type_name(p.data_type())) + " tensor";
  if (p.data_location() == onnx::TensorProto::EXTERNAL) return "external data";
  t->dims.assign(p.dims().begin(), p.dims().end());
  size_t count = 1;
  for (int64_t d : t->dims) {
    if (d < 0) return "negative dim in " + dims_text(t->dims);
    count *= static_cast<size_t>(d);
  }
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    if (raw.size() != count * sizeof(float)) {
      return "raw_data of " + std::to_string(raw.size()) + " bytes for dims " + dims_text(t->dims);
    }
    t->values.resize(count);
    if (count) std::memcpy(t->values.data(), raw.data(), raw.size());  // little-endian hosts only
  } else {
    if (static_cast<size_t>(p.float_data_size()) != count) {
      return std::to_string(p.float_data_size()) + " float_data values for dims " + dims_text(t->dims);
    }
    t->values.assign(p.float_data().begin(), p.float_data().end());
  }
  return "";
}

// Reads a test data file as it is (any element type), for freezing a graph input
// into an initializer. Returns "" or why it cannot be read.
inline std::string read_tensor_proto(const std::string& path, onnx::TensorProto* p) {
  std::string bytes;
  if (!read_bytes(path, &bytes)) return "cannot read " + path;
  if (!p->ParseFromString(bytes)) return "not a TensorProto: " + path;
  return "";
}

// The model with `values` (named after graph inputs) added as initializers. The inputs
// stay listed in graph.input: the importer (like ONNX) takes an input that is also an
// initializer for a constant. Returns "" or why not.
inline std::string freeze_inputs(const std::string& model_bytes, const std::vector<onnx::TensorProto>& values,
                                 std::string* out) {
  onnx::ModelProto model;
  if (!model.ParseFromString(model_bytes)) return "not a ModelProto";
  onnx::GraphProto* g = model.mutable_graph();
  for (const onnx::TensorProto& v : values) {
    bool is_input = false;
    for (const onnx::ValueInfoProto& i : g->input()) is_input = is_input || i.name() == v.name();
    if (!is_input) return "'" + v.name() + "' is not a graph input";
    for (const onnx::TensorProto& t : g->initializer()) {
      if (t.name() == v.name()) return "'" + v.name() + "' is already an initializer";
    }
    *g->add_initializer() = v;
  }
  if (!model.SerializeToString(out)) return "cannot serialize the model";
  return "";
}

// Why a graph input of these ONNX dims cannot be fed to Kestrel, or "": Kestrel blobs
// hold 1 to 4 dims (a leading dim of 1 may be dropped besides), never empty.
inline std::string carry_problem(const std::vector<int64_t>& d) {
  if (d.empty()) return "a scalar (rank 0)";
  for (int64_t x : d) {
    if (x <= 0) return "an empty tensor " + dims_text(d);
    if (x > (1 << 30)) return "dims " + dims_text(d);
  }
  if (d.size() > 5 || (d.size() == 5 && d[0] != 1)) return "rank " + std::to_string(d.size()) + " " + dims_text(d);
  return "";
}

// Shapes compare without their leading 1s: Kestrel drops a batch of 1 where the
// converter keeps the image layout, and holds a 1-D [1] for a scalar.
inline std::vector<int64_t> without_leading_ones(std::vector<int64_t> d) {
  while (!d.empty() && d[0] == 1) d.erase(d.begin());
  return d;
}

// A Mat of `shape` holding `v` in ONNX (row-major) order; false when the counts differ.
inline bool make_mat(const kestrel::Shape& shape, const std::vector<float>& v, kestrel::Mat* m) {
  if (shape.total() != v.size() || !m->create(shape)) return false;
  const size_t plane = size_t(m->w) * m->h * m->d;
  for (int q = 0; q < m->c; ++q) std::copy_n(v.data() + plane * q, plane, m->channel(q));
  return true;
}

// A Mat's dims outermost first (as kt::dims_of, without doctest).
inline std::vector<int> mat_dims(const kestrel::Mat& m) {
  switch (m.dims) {
    case 1: return {m.w};
    case 2: return {m.h, m.w};
    case 3: return {m.channels(), m.h, m.w};
    default: return {m.channels(), m.d, m.h, m.w};
  }
}

// The real values in logical order (channel padding skipped, packing undone).
inline std::vector<float> mat_values(const kestrel::Mat& in) {
  const kestrel::Mat m = in.elempack == 1 ? in : kestrel::convert_packing(in, 1);
  std::vector<float> v;
  const size_t plane = size_t(m.w) * m.h * m.d;
  for (int q = 0; q < m.c; ++q) v.insert(v.end(), m.channel(q), m.channel(q) + plane);
  return v;
}

// The backend tolerance, as ONNX's test runner checks it (np.testing.assert_allclose):
// |got - want| <= atol + rtol * |want| elementwise, NaN equal to NaN, infinities exact;
// rtol is ONNX's 1e-3, atol 1e-5 (float32 kernels sum in another order).
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-3;

// Returns "" or what differs.
inline std::string compare_values(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
  }
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    bool ok;
    double excess = 0;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
      excess = INFINITY;
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
      excess = INFINITY;
    } else {
      const double tol = kAtol + kRtol * std::fabs(w);
      excess = std::fabs(g - w) - tol;
      ok = excess <= 0;
    }
    if (!ok) {
      ++bad;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (!bad) return "";
  std::ostringstream ss;
  ss << bad << "/" << got.size() << " values out of tolerance; worst at flat index " << worst << ": got " << got[worst]
     << ", expected " << want[worst] << " (|diff| " << std::fabs(double(got[worst]) - double(want[worst])) << ")";
  return ss.str();
}

// ---- the model's signature and nodes ----

struct ValueInfo {
  std::string name;
  bool is_tensor = false;
  int elem_type = 0;
  bool has_shape = false;
  std::vector<int64_t> dims;  // -1 for a symbolic or missing dim
  bool fixed() const {
    if (!has_shape) return false;
    for (int64_t d : dims) {
      if (d < 0) return false;
    }
    return true;
  }
  std::string type_text() const {
    if (!is_tensor) return "not a tensor (sequence, map or optional)";
    return elem_type_name(elem_type);
  }
};

struct NodeInfo {
  std::string name, op_type, domain;
};

struct ModelInfo {
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers, in order
  std::vector<ValueInfo> outputs;
  std::vector<NodeInfo> nodes;    // top-level graph
  std::vector<std::string> op_types;  // distinct, in order of first use
  int64_t opset = 0;                  // default domain
};

inline ValueInfo value_info(const onnx::ValueInfoProto& v) {
  ValueInfo r;
  r.name = v.name();
  if (v.type().value_case() == onnx::TypeProto::kTensorType) {
    const onnx::TypeProto::Tensor& t = v.type().tensor_type();
    r.is_tensor = true;
    r.elem_type = t.elem_type();
    r.has_shape = t.has_shape();
    for (const onnx::TensorShapeProto::Dimension& d : t.shape().dim()) {
      r.dims.push_back(d.value_case() == onnx::TensorShapeProto::Dimension::kDimValue ? d.dim_value() : -1);
    }
  }
  return r;
}

// Returns "" or why the model cannot be read.
inline std::string read_model_info(const std::string& bytes, ModelInfo* info) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return "not a ModelProto";
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> init;
  for (const onnx::TensorProto& t : g.initializer()) init.insert(t.name());
  for (const onnx::SparseTensorProto& t : g.sparse_initializer()) init.insert(t.values().name());
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (!init.count(v.name())) info->inputs.push_back(value_info(v));
  }
  for (const onnx::ValueInfoProto& v : g.output()) info->outputs.push_back(value_info(v));
  std::set<std::string> seen;
  for (const onnx::NodeProto& n : g.node()) {
    info->nodes.push_back({n.name(), n.op_type(), n.domain()});
    const std::string key = (n.domain().empty() || n.domain() == "ai.onnx") ? n.op_type() : n.domain() + "." + n.op_type();
    if (seen.insert(key).second) info->op_types.push_back(key);
  }
  for (const onnx::OperatorSetIdProto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") info->opset = o.version();
  }
  return "";
}

}  // namespace ot
