// ONNX front end: reads the ModelProto, turns initializers into constants, declares
// the run-time inputs (with their layouts, see onnx_ops.h), then walks the nodes in
// order: a node whose inputs are all constants (or a Shape of a known shape) is
// folded, any other goes to the converter for its op type.
#include "onnx/onnx_import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "graph/shape_tracker.h"
#include "onnx/onnx_ops.h"

namespace kestrel::convert {
namespace onnx_import {

class Importer {
 public:
  Importer(const OnnxImportOptions& options, Graph* graph) : options_(options), g_(*graph) {}
  Status run(const onnx::ModelProto& model);

  std::map<std::string, ConstTensor> consts;
  // Run-time blobs (graph inputs, node outputs, intermediates) -> batched (see onnx_ops.h).
  std::map<std::string, bool> blobs;
  Status shape(const std::string& blob, std::vector<int64_t>* dims);
  std::string unique_blob(const std::string& base);

 private:
  Status declare_input(const onnx::ValueInfoProto& v);
  Status convert_node(const onnx::NodeProto& n, int opset);

  const OnnxImportOptions& options_;
  Graph& g_;
  std::set<std::string> taken_;  // every name in the model, and the intermediates made
  ShapeTracker shapes_;
};

std::string Importer::unique_blob(const std::string& base) {
  std::string name = base;
  for (int k = 2; taken_.count(name) || consts.count(name); ++k) name = base + "#" + std::to_string(k);
  taken_.insert(name);
  return name;
}

Status Importer::shape(const std::string& blob, std::vector<int64_t>* dims) {
  const auto layout = blobs.find(blob);
  if (layout == blobs.end()) return Status(ErrorCode::kInternal, "'" + blob + "' is not a run-time blob");
  std::vector<int> ext;
  Status s = shapes_.get(g_, blob, &ext);
  if (!s.ok()) return s;
  dims->assign(layout->second ? 1 : 0, 1);
  for (int e : ext) dims->push_back(e);
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
  for (int64_t d : dims) {
    if (d < 0 || d > INT_MAX) {
      return Status(ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(d) + " is invalid");
    }
  }
  // Rank >= 3 with dim 0 of 1: an image batch of 1 (what the image layers take); a
  // rank-2 [1,K] stays as it is, like any other shape.
  bool batched = false;
  Status s = pick_layout(dims, dims.size() >= 3, &batched);
  if (!s.ok()) {
    const std::string hint = dims.size() == 5 ? " (override with --input-shape " + v.name() + "=1,...)" : "";
    return Status(ErrorCode::kUnsupported, what + ": " + s.message() + hint);
  }
  g_.inputs.push_back(GraphInput{v.name(), kestrel_dims(dims, batched)});
  shapes_.set(v.name(), g_.inputs.back().shape);
  blobs[v.name()] = batched;
  return Status::Ok();
}

const OpSpec* find_spec(const std::string& type) {
  for (const auto* table : {&compute_ops(), &math_ops(), &shape_ops(), &resize_ops()}) {
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
  if (!spec && n.op_type() == "Erf") {
    return unsupported("op type not supported by Kestrel (Erf only inside the GELU x * 0.5 * (1 + Erf(x / sqrt(2))))");
  }
  if (!spec) return unsupported("op type not supported by Kestrel");
  if (n.input_size() < spec->min_inputs || n.input_size() > spec->max_inputs) {
    return invalid("has " + std::to_string(n.input_size()) + " inputs; expected " +
                   std::to_string(spec->min_inputs) + " to " + std::to_string(spec->max_inputs));
  }
  if (fold) return spec->convert(ctx);
  // Outputs take the first run-time input's layout unless the converter says otherwise.
  bool batched = false;
  for (const std::string& i : n.input()) {
    const auto it = blobs.find(i);
    if (it != blobs.end()) {
      batched = it->second;
      break;
    }
  }
  for (const std::string& o : n.output()) {
    if (o.empty()) continue;
    if (blobs.count(o) || consts.count(o)) return invalid("output '" + o + "' is produced twice");
    blobs[o] = batched;
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
  for (const auto& entry : options_.input_shapes) {
    const std::string& name = entry.first;  // clang 14 cannot capture a structured binding
    const bool found = std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const GraphInput& i) { return i.name == name; });
    if (!found) return Status(ErrorCode::kInvalidArgument, "--input-shape names '" + name + "', not a model input");
  }
  // Unnamed nodes (common in test models) go by their first output.
  auto describe = [opset](const onnx::NodeProto& n) {
    const std::string label = n.name().empty() && n.output_size() > 0 ? n.output(0) : n.name();
    return "node '" + label + "' (" + n.op_type() + ", opset " + std::to_string(opset) + ")";
  };
  // Intermediates get names no model tensor has.
  for (const onnx::ValueInfoProto& v : graph.input()) taken_.insert(v.name());
  for (const onnx::NodeProto& n : graph.node()) taken_.insert(n.output().begin(), n.output().end());
  std::deque<onnx::NodeProto> made;
  for (const onnx::NodeProto* node : fuse_patterns(graph, &made)) {
    const onnx::NodeProto& n = *node;
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return Status(ErrorCode::kUnsupported, "node '" + n.name() + "' (" + n.domain() + "::" + n.op_type() +
                                                 "): custom domains are not supported");
    }
    Status s = convert_node(n, opset);
    if (!s.ok()) return Status(s.code(), describe(n) + ": " + s.message());
  }
  for (const onnx::ValueInfoProto& v : graph.output()) {
    if (blobs.count(v.name())) {
      g_.outputs.push_back(v.name());
      continue;
    }
    const std::string what = "output '" + v.name() + "' is a constant; Kestrel outputs are computed from inputs";
    for (const onnx::NodeProto& n : graph.node()) {
      if (std::find(n.output().begin(), n.output().end(), v.name()) != n.output().end()) {
        return Status(ErrorCode::kUnsupported, describe(n) + ": " + what);
      }
    }
    return Status(ErrorCode::kUnsupported, what);
  }
  if (g_.inputs.empty()) return invalid("the model has no run-time inputs");
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

bool OpContext::batched(const std::string& b) const {
  const auto it = importer.blobs.find(b);
  return it != importer.blobs.end() && it->second;
}

void OpContext::set_batched(const std::string& b, bool batched) const { importer.blobs[b] = batched; }

std::string OpContext::new_blob(const std::string& suffix, bool batched) const {
  const std::string name = importer.unique_blob(out(0) + suffix);
  importer.blobs[name] = batched;
  return name;
}

Status OpContext::reshape(const std::string& x, const std::vector<int64_t>& dims, bool batched, std::string* y) const {
  if (y->empty()) *y = new_blob("/reshape", batched);
  set_batched(*y, batched);
  fb::ReshapeParamT p;
  p.shape = kestrel_dims(dims, batched);
  add("Reshape", std::move(p), {x}, {*y}, "/reshape_" + *y);
  return Status::Ok();
}

Status OpContext::as_batched(const std::string& x, std::string* y) const {
  std::vector<int64_t> dims;
  Status s = shape(x, &dims);
  if (!s.ok()) return s;
  if (batched(x)) {
    *y = x;
    return Status::Ok();
  }
  if (dims.size() < 2 || dims[0] != 1) {
    const std::string batch = dims.size() < 2 ? "no batch axis" : "a batch of " + std::to_string(dims[0]);
    return unsupported("input " + dims_text(dims) + " has " + batch + "; Kestrel's " + node.op_type() +
                       " takes one image, dim 0 must be 1");
  }
  y->clear();
  return reshape(x, dims, true, y);
}

Status OpContext::as_batchless(const std::string& x, std::string* y) const {
  std::vector<int64_t> dims;
  Status s = shape(x, &dims);
  if (!s.ok()) return s;
  if (!batched(x)) {
    *y = x;
    return Status::Ok();
  }
  if (dims.size() > 4) {
    return unsupported("input " + dims_text(dims) +
                       ": the op works on the batch axis, which Kestrel keeps for at most 4 dims");
  }
  y->clear();
  return reshape(x, dims, false, y);
}

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
  for (const auto* table : {&onnx_import::compute_ops(), &onnx_import::math_ops(), &onnx_import::shape_ops(),
                            &onnx_import::resize_ops()}) {
    for (const onnx_import::OpSpec& s : *table) ops.insert(s.type);
  }
  return std::vector<std::string>(ops.begin(), ops.end());
}

}  // namespace kestrel::convert
