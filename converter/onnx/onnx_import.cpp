// ONNX front end: reads the ModelProto, turns initializers into constants, declares
// the run-time inputs (batch 1, dropped), then walks the nodes in order: a node whose
// inputs are all constants (or a Shape of a known shape) is folded, any other goes to
// the converter for its op type (onnx_ops.cpp, onnx_ops_shape.cpp).
#include "onnx/onnx_import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "onnx/onnx_ops.h"

namespace kestrel::convert {
namespace onnx_import {

class Importer {
 public:
  Importer(const OnnxImportOptions& options, Graph* graph) : options_(options), g_(*graph) {}
  Status run(const onnx::ModelProto& model);

  std::map<std::string, ConstTensor> consts;
  std::set<std::string> blobs;  // run-time blobs: graph inputs and node outputs
  Status shape(const std::string& blob, std::vector<int64_t>* dims);
  std::string unique_blob(const std::string& base);

 private:
  Status declare_input(const onnx::ValueInfoProto& v);
  Status convert_node(const onnx::NodeProto& n, int opset);

  const OnnxImportOptions& options_;
  Graph& g_;
  std::set<std::string> taken_;
  std::map<std::string, Shape> shapes_;
  size_t shapes_for_nodes_ = SIZE_MAX;
};

std::string Importer::unique_blob(const std::string& base) {
  std::string name = base;
  for (int k = 2; taken_.count(name) || consts.count(name); ++k) name = base + "#" + std::to_string(k);
  taken_.insert(name);
  return name;
}

Status Importer::shape(const std::string& blob, std::vector<int64_t>* dims) {
  for (const GraphInput& in : g_.inputs) {
    if (in.name == blob) {
      dims->assign(1, 1);
      dims->insert(dims->end(), in.shape.begin(), in.shape.end());
      return Status::Ok();
    }
  }
  if (shapes_for_nodes_ != g_.nodes.size()) {
    // Kestrel's loader wants declared outputs: every blob serves for this purpose.
    const std::vector<std::string> saved = g_.outputs;
    g_.outputs.clear();
    for (const Node& n : g_.nodes) g_.outputs.insert(g_.outputs.end(), n.outputs.begin(), n.outputs.end());
    Status s = infer_shapes(g_, &shapes_);
    g_.outputs = saved;
    if (!s.ok()) return s.with_context("inferring the shapes of the nodes before it");
    shapes_for_nodes_ = g_.nodes.size();
  }
  const auto it = shapes_.find(blob);
  if (it == shapes_.end()) return Status(ErrorCode::kInternal, "no shape for blob '" + blob + "'");
  const Shape& s = it->second;
  switch (s.dims) {
    case 1: *dims = {1, s.w}; break;
    case 2: *dims = {1, s.h, s.w}; break;
    case 3: *dims = {1, s.c, s.h, s.w}; break;
    default: *dims = {1, s.c, s.d, s.h, s.w}; break;
  }
  return Status::Ok();
}

Status Importer::declare_input(const onnx::ValueInfoProto& v) {
  const std::string what = "input '" + v.name() + "'";
  std::vector<int64_t> dims;
  bool overridden = false;
  for (const auto& [name, shape] : options_.input_shapes) {
    if (name == v.name()) dims.assign(shape.begin(), shape.end()), overridden = true;
  }
  if (!overridden) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
      return Status(ErrorCode::kInvalidArgument, what + " has no shape; give one with --input-shape " + v.name() +
                                                     "=1,C,H,W");
    }
    const auto& shape = v.type().tensor_type().shape();
    for (int i = 0; i < shape.dim_size(); ++i) {
      const auto& d = shape.dim(i);
      // A symbolic batch is 1; a symbolic spatial dim needs --input-shape.
      if (!d.has_dim_value() && i > 0) {
        return Status(ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(i) +
                                                       " is symbolic; give the shape with --input-shape " +
                                                       v.name() + "=1,...");
      }
      dims.push_back(d.has_dim_value() ? d.dim_value() : 1);
    }
  }
  if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT &&
      v.type().tensor_type().elem_type() != onnx::TensorProto::UNDEFINED) {
    return Status(ErrorCode::kUnsupported, what + ": only float32 inputs are supported");
  }
  if (dims.size() < 2 || dims.size() > 5) {
    return Status(ErrorCode::kUnsupported,
                  what + ": " + std::to_string(dims.size()) + " dims; Kestrel takes N plus 1 to 4 dims");
  }
  if (dims[0] != 1) {
    return Status(ErrorCode::kUnsupported, what + ": batch " + std::to_string(dims[0]) +
                                               " is not supported, only 1 (override with --input-shape " + v.name() +
                                               "=1,...)");
  }
  GraphInput in{v.name(), {}};
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i] <= 0 || dims[i] > INT_MAX) {
      return Status(ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(dims[i]) + " is invalid");
    }
    in.shape.push_back(static_cast<int>(dims[i]));
  }
  g_.inputs.push_back(in);
  blobs.insert(v.name());
  taken_.insert(v.name());
  return Status::Ok();
}

const OpSpec* find_spec(const std::string& type) {
  for (const auto* table : {&compute_ops(), &shape_ops()}) {
    for (const OpSpec& s : *table) {
      if (type == s.type) return &s;
    }
  }
  return nullptr;
}

Status Importer::convert_node(const onnx::NodeProto& n, int opset) {
  OpContext ctx{n, opset, *this, g_};
  bool all_const = true;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    if (!consts.count(n.input(i)) && !blobs.count(n.input(i))) {
      return invalid("input '" + n.input(i) + "' is not a graph input, an initializer or an earlier node's output");
    }
    all_const = all_const && consts.count(n.input(i)) > 0;
  }
  const OpSpec* folder = find_folder(n.op_type());
  // Shape only needs its input's shape, which every run-time blob has.
  const bool fold = folder && (all_const || n.op_type() == "Shape");
  const OpSpec* spec = fold ? folder : find_spec(n.op_type());
  if (!spec) return unsupported("op type not supported by Kestrel");
  if (n.input_size() < spec->min_inputs || n.input_size() > spec->max_inputs) {
    return invalid("has " + std::to_string(n.input_size()) + " inputs; expected " +
                   std::to_string(spec->min_inputs) + " to " + std::to_string(spec->max_inputs));
  }
  if (fold) return spec->convert(ctx);
  for (const std::string& o : n.output()) {
    if (!o.empty()) taken_.insert(o), blobs.insert(o);
  }
  return spec->convert(ctx);
}

Status Importer::run(const onnx::ModelProto& model) {
  int opset = -1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  }
  if (opset < 0) opset = 1;  // IR v3 models without opset_import use opset 1
  const onnx::GraphProto& graph = model.graph();
  for (const onnx::TensorProto& t : graph.initializer()) {
    ConstTensor c;
    Status s = read_tensor(t, &c);
    if (!s.ok()) return s.with_context("initializer '" + t.name() + "'");
    consts[t.name()] = std::move(c);
  }
  for (const onnx::ValueInfoProto& v : graph.input()) {
    if (consts.count(v.name())) continue;  // older exporters list initializers as inputs
    Status s = declare_input(v);
    if (!s.ok()) return s;
  }
  for (const auto& [name, shape] : options_.input_shapes) {
    const bool found = std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const GraphInput& i) { return i.name == name; });
    if (!found) return Status(ErrorCode::kInvalidArgument, "--input-shape names '" + name + "', not a model input");
  }
  if (g_.inputs.empty()) return invalid("the model has no run-time inputs");
  for (const onnx::NodeProto& n : graph.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return Status(ErrorCode::kUnsupported, "node '" + n.name() + "' (" + n.domain() + "::" + n.op_type() +
                                                 "): custom domains are not supported");
    }
    Status s = convert_node(n, opset);
    if (!s.ok()) {
      // Unnamed nodes (common in test models) go by their first output.
      const std::string label = n.name().empty() && n.output_size() > 0 ? n.output(0) : n.name();
      return Status(s.code(), "node '" + label + "' (" + n.op_type() + ", opset " + std::to_string(opset) +
                                  "): " + s.message());
    }
  }
  for (const onnx::ValueInfoProto& v : graph.output()) {
    if (!blobs.count(v.name())) {
      return Status(ErrorCode::kUnsupported, "output '" + v.name() + "' is a constant; Kestrel outputs are computed");
    }
    g_.outputs.push_back(v.name());
  }
  return Status::Ok();
}

// ---- OpContext ----

const std::string& OpContext::in(size_t i) const {
  static const std::string kNone;
  return i < static_cast<size_t>(node.input_size()) ? node.input(static_cast<int>(i)) : kNone;
}

const std::string& OpContext::out(size_t i) const {
  static const std::string kNone;
  return i < static_cast<size_t>(node.output_size()) ? node.output(static_cast<int>(i)) : kNone;
}

const ConstTensor* OpContext::constant(size_t i) const {
  const auto it = importer.consts.find(in(i));
  return it == importer.consts.end() ? nullptr : &it->second;
}

Status OpContext::blob(size_t i, std::string* name) const {
  if (in(i).empty() || !importer.blobs.count(in(i))) {
    return unsupported("input " + std::to_string(i) + (in(i).empty() ? " is missing" : " ('" + in(i) +
                                                                                    "') must be computed at run "
                                                                                    "time, not a constant"));
  }
  *name = in(i);
  return Status::Ok();
}

Status OpContext::shape(const std::string& b, std::vector<int64_t>* dims) const { return importer.shape(b, dims); }

void OpContext::set_constant(size_t i, ConstTensor t) const { importer.consts[out(i)] = std::move(t); }

std::string OpContext::unique_blob(const std::string& base) const { return importer.unique_blob(base); }

}  // namespace onnx_import

namespace {

Status import_model(const onnx::ModelProto& model, const OnnxImportOptions& options, Graph* graph) {
  Graph g;
  Status s = onnx_import::Importer(options, &g).run(model);
  if (!s.ok()) return s;
  *graph = std::move(g);
  return Status::Ok();
}

bool parse(google::protobuf::io::ZeroCopyInputStream* in, onnx::ModelProto* model) {
  google::protobuf::io::CodedInputStream coded(in);
  // The default 64 MiB limit is below many models' weights.
  coded.SetTotalBytesLimit(INT_MAX);
  return model->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage() && model->has_graph();
}

}  // namespace

Status import_onnx(const std::string& model_path, const OnnxImportOptions& options, Graph* graph) {
  const int fd = ::open(model_path.c_str(), O_RDONLY);
  if (fd < 0) return Status(ErrorCode::kNotFound, model_path + ": cannot open the model");
  onnx::ModelProto model;
  bool ok = false;
  {
    google::protobuf::io::FileInputStream file(fd);
    ok = parse(&file, &model);
  }
  ::close(fd);
  if (!ok) return Status(ErrorCode::kCorruptModel, model_path + ": not a valid ONNX model (binary ModelProto)");
  Status s = import_model(model, options, graph);
  return s.ok() ? s : s.with_context(model_path);
}

Status import_onnx_bytes(const void* data, size_t size, const OnnxImportOptions& options, Graph* graph) {
  if (size > static_cast<size_t>(INT_MAX)) return Status(ErrorCode::kUnsupported, "ONNX model over 2 GiB");
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream in(data, static_cast<int>(size));
  if (!parse(&in, &model)) return Status(ErrorCode::kCorruptModel, "not a valid ONNX model (binary ModelProto)");
  return import_model(model, options, graph);
}

std::vector<std::string> supported_onnx_ops() {
  std::set<std::string> ops;
  for (const std::string& t : onnx_import::folder_types()) ops.insert(t);
  for (const auto* table : {&onnx_import::compute_ops(), &onnx_import::shape_ops()}) {
    for (const onnx_import::OpSpec& s : *table) ops.insert(s.type);
  }
  return std::vector<std::string>(ops.begin(), ops.end());
}

}  // namespace kestrel::convert
