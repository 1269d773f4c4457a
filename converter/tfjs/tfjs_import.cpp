// TF.js front end: parses model.json (protobuf's JSON parser on tfjs.proto), reads the
// weights (tfjs_weights.cpp), orders the nodes, decides which part of the graph
// becomes layers and where it is cut, then converts that part node by node: constants
// fold, Placeholders become inputs, every other op goes to its converter.
#include "tfjs/tfjs_import.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "tfjs/tfjs_ops.h"
#include "tfjs/tfjs_weights.h"

namespace kestrel::convert {
namespace tfjs_import {

// "x" -> "x:0"; "x:1" stays; "" for a control input "^x".
std::string tensor_name(const std::string& input) {
  if (input.empty() || input[0] == '^') return "";
  const size_t colon = input.rfind(':');
  if (colon != std::string::npos && colon + 1 < input.size() &&
      std::all_of(input.begin() + static_cast<long>(colon) + 1, input.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    return input;
  }
  return input + ":0";
}

std::string node_of(const std::string& tensor) { return tensor.substr(0, tensor.rfind(':')); }

size_t output_index(const std::string& tensor) {
  return static_cast<size_t>(std::stoul(tensor.substr(tensor.rfind(':') + 1)));
}

// The Kestrel blob of a node's output k.
std::string blob_name(const std::string& node, size_t k) { return k == 0 ? node : node + ":" + std::to_string(k); }

const OpSpec* find_spec(const std::string& op) {
  for (const auto* table : {&conv_ops(), &math_ops(), &shape_ops()}) {
    for (const OpSpec& s : *table) {
      if (op == s.op) return &s;
    }
  }
  return nullptr;
}

// Ops that only move data: a cut never ends on one that only post-processing reads.
bool moves_data(const std::string& op) {
  return op == "Reshape" || op == "Squeeze" || op == "ExpandDims" || op == "Identity" || op == "Unpack" ||
         op == "Cast" || op == "Transpose";
}

class Importer {
 public:
  Importer(const TfjsImportOptions& options, Graph* graph) : g(*graph), options_(options) {}
  Status run(const tfjs::GraphModel& model, std::map<std::string, ConstTensor> weights);

  std::map<std::string, ConstTensor> consts;   // tensor "node:k" -> value
  std::map<std::string, std::string> blob_of;  // tensor "node:k" -> Kestrel blob
  std::map<std::string, Layout> layouts;       // Kestrel blob -> layout
  ShapeTracker shapes;
  Graph& g;

  std::string unique_blob(const std::string& base) {
    std::string name = base;
    for (int k = 2; taken_.count(name); ++k) name = base + "#" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

 private:
  enum Kind { kConst, kLayer, kPost, kUnknown };

  Status order_nodes(const tfjs::GraphDef& graph);
  Status classify();
  Status choose_outputs(const tfjs::GraphModel& model, std::vector<std::string>* outputs);
  Status declare_input(const tfjs::NodeDef& n);
  Status convert(const tfjs::NodeDef& n);
  Status finish_outputs(const std::vector<std::string>& outputs);

  static std::string describe(const tfjs::NodeDef& n) { return "node '" + n.name() + "' (" + n.op() + ")"; }
  static std::vector<std::string> data_inputs(const tfjs::NodeDef& n) {
    std::vector<std::string> r;
    for (const std::string& i : n.input()) {
      const std::string t = tensor_name(i);
      if (!t.empty()) r.push_back(t);
    }
    return r;
  }
  Kind kind_of_tensor(const std::string& t) const {
    const auto it = kind_.find(node_of(t));
    return it == kind_.end() ? kUnknown : it->second;
  }

  const TfjsImportOptions& options_;
  std::set<std::string> taken_;
  std::vector<const tfjs::NodeDef*> order_;  // topological
  std::map<std::string, const tfjs::NodeDef*> by_name_;
  std::map<std::string, Kind> kind_;  // per node name
  std::map<std::string, std::vector<const tfjs::NodeDef*>> readers_;  // tensor -> the nodes reading it
  std::map<std::string, std::string> input_dtypes_;                   // placeholder -> its TF dtype
};

Status Importer::order_nodes(const tfjs::GraphDef& graph) {
  for (const tfjs::NodeDef& n : graph.node()) {
    if (n.name().empty()) return invalid("a node has no name");
    if (!by_name_.emplace(n.name(), &n).second) return invalid("node name '" + n.name() + "' appears twice");
    taken_.insert(n.name());
    if (is_control_flow_op(n.op())) {
      return Status(ErrorCode::kUnsupported,
                    describe(n) + ": control flow is not supported (a graph model with loops or conditions "
                                  "runs only in TF.js's executeAsync)");
    }
  }
  // Kahn's algorithm over data and control edges, stable in file order.
  std::map<std::string, int> pending;
  std::map<std::string, std::vector<const tfjs::NodeDef*>> after;
  for (const tfjs::NodeDef& n : graph.node()) {
    int count = 0;
    for (const std::string& raw : n.input()) {
      const std::string src = raw.empty() ? "" : node_of(raw[0] == '^' ? raw.substr(1) + ":0" : tensor_name(raw));
      if (!by_name_.count(src)) return invalid(describe(n) + ": input '" + raw + "' names no node");
      after[src].push_back(&n);
      ++count;
      const std::string t = tensor_name(raw);
      if (!t.empty()) readers_[t].push_back(&n);
    }
    pending[n.name()] = count;
  }
  std::vector<const tfjs::NodeDef*> ready;
  for (const tfjs::NodeDef& n : graph.node()) {
    if (pending[n.name()] == 0) ready.push_back(&n);
  }
  for (size_t i = 0; i < ready.size(); ++i) {
    order_.push_back(ready[i]);
    for (const tfjs::NodeDef* next : after[ready[i]->name()]) {
      if (--pending[next->name()] == 0) ready.push_back(next);
    }
  }
  if (order_.size() != static_cast<size_t>(graph.node_size())) {
    for (const tfjs::NodeDef& n : graph.node()) {
      if (pending[n.name()] > 0) return invalid(describe(n) + ": the graph has a cycle through this node");
    }
  }
  return Status::Ok();
}

// Forward over the ordered nodes: a node is a constant when every input is one and it
// folds (Shape: when its input becomes a layer, whose shape is then known), a layer
// when its op converts and it reads the run-time part, post-processing when its op is
// one or it reads post-processing.
Status Importer::classify() {
  for (const tfjs::NodeDef* n : order_) {
    const std::vector<std::string> ins = data_inputs(*n);
    bool all_const = true, any_post = false, any_unknown = false;
    for (const std::string& t : ins) {
      const Kind k = kind_of_tensor(t);
      all_const = all_const && k == kConst;
      any_post = any_post || k == kPost;
      any_unknown = any_unknown || k == kUnknown;
    }
    Kind k;
    const tfjs::DataType type = n->attr().count("T") ? n->attr().at("T").type() : tfjs::DT_FLOAT;
    const bool float_op = type == tfjs::DT_FLOAT;
    if (n->op() == "Const") {
      k = kConst;
    } else if (n->op() == "Placeholder") {
      k = kLayer;
    } else if (any_post || any_unknown) {
      k = kPost;
    } else if (find_folder(n->op()) && (all_const || (n->op() == "Shape" && !ins.empty()))) {
      k = kConst;
    } else if (n->op() == "Cast") {
      // int -> float of a run-time tensor (an int32 Placeholder): the blob is float already.
      const bool to_float = n->attr().count("DstT") && n->attr().at("DstT").type() == tfjs::DT_FLOAT;
      const bool from_input = !ins.empty() && by_name_.at(node_of(ins[0]))->op() == "Placeholder";
      k = to_float && from_input ? kLayer : kPost;
    } else if (find_spec(n->op()) && float_op) {
      k = kLayer;
    } else if (is_postprocessing_op(n->op()) || !float_op) {
      k = kPost;
    } else {
      k = kUnknown;
    }
    kind_[n->name()] = k;
  }
  return Status::Ok();
}

// The tensors the imported part ends at. Requested ones must be computed by layers.
// By default: tensors of layer nodes that post-processing reads, and the graph's own
// outputs where layers compute them; a layer node read only by post-processing is left
// out (trimmed) when it only moves data, or when every run-time input is exported
// anyway (CenterNet's 3x3 peak MaxPool of its exported heatmap).
Status Importer::choose_outputs(const tfjs::GraphModel& model, std::vector<std::string>* outputs) {
  if (!options_.outputs.empty()) {
    for (const std::string& o : options_.outputs) {
      const std::string t = tensor_name(o);
      const auto node = by_name_.find(node_of(t));
      if (node == by_name_.end()) return Status(ErrorCode::kInvalidArgument, "--outputs names '" + o + "', no node");
      const Kind k = kind_.at(node->first);
      if (k == kUnknown) {
        return Status(ErrorCode::kUnsupported, describe(*node->second) + ": op type not supported by Kestrel");
      }
      if (k != kLayer || node->second->op() == "Placeholder") {
        return Status(ErrorCode::kUnsupported,
                      "--outputs names '" + o + "', which " +
                          (k == kConst ? std::string("is a constant") : "is not computed by layers (post-processing)"));
      }
      outputs->push_back(t);
    }
    return Status::Ok();
  }
  std::set<std::string> graph_outputs;
  for (const auto& [key, info] : model.signature().outputs()) {
    const std::string t = tensor_name(info.name().empty() ? key : info.name());
    if (by_name_.count(node_of(t))) graph_outputs.insert(t);
  }
  if (graph_outputs.empty()) {
    for (const tfjs::NodeDef* n : order_) {
      if (n->op() != "Const" && !readers_.count(n->name() + ":0")) graph_outputs.insert(n->name() + ":0");
    }
  }
  for (const tfjs::NodeDef* n : order_) {
    if (kind_.at(n->name()) != kUnknown) continue;
    for (const std::string& t : data_inputs(*n)) {
      if (kind_of_tensor(t) == kLayer) {
        return Status(ErrorCode::kUnsupported, describe(*n) + ": op type not supported by Kestrel");
      }
    }
  }
  auto is_layer = [&](const tfjs::NodeDef* n) { return kind_.at(n->name()) == kLayer; };
  // A tensor "exported" before trimming: a graph output, or read by post-processing.
  auto exported = [&](const std::string& t) {
    if (graph_outputs.count(t)) return true;
    const auto r = readers_.find(t);
    return r != readers_.end() && std::any_of(r->second.begin(), r->second.end(),
                                              [&](const tfjs::NodeDef* c) { return !is_layer(c); });
  };
  std::set<std::string> trimmed;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const tfjs::NodeDef* n = *it;
    if (!is_layer(n) || n->op() == "Placeholder" || graph_outputs.count(n->name() + ":0")) continue;
    const auto r = readers_.find(n->name() + ":0");
    if (r == readers_.end()) continue;
    const bool only_post = std::all_of(r->second.begin(), r->second.end(), [&](const tfjs::NodeDef* c) {
      return !is_layer(c) || trimmed.count(c->name());
    });
    if (!only_post) continue;
    bool inputs_exported = true;
    for (const std::string& t : data_inputs(*n)) {
      if (kind_of_tensor(t) == kLayer && !exported(t)) inputs_exported = false;
    }
    if (moves_data(n->op()) || inputs_exported) trimmed.insert(n->name());
  }
  for (const tfjs::NodeDef* n : order_) {
    if (!is_layer(n) || trimmed.count(n->name()) || n->op() == "Placeholder") continue;
    const std::string t = n->name() + ":0";
    const auto r = readers_.find(t);
    const bool read_by_rest = r != readers_.end() && std::any_of(r->second.begin(), r->second.end(), [&](const tfjs::NodeDef* c) {
                                return !is_layer(c) || trimmed.count(c->name());
                              });
    if (graph_outputs.count(t) || read_by_rest) outputs->push_back(t);
  }
  if (outputs->empty()) {
    return Status(ErrorCode::kUnsupported, "no layer op reaches an output: nothing to import (name tensors with --outputs)");
  }
  return Status::Ok();
}

Status Importer::declare_input(const tfjs::NodeDef& n) {
  const std::string what = "input '" + n.name() + "'";
  std::vector<int64_t> dims;
  bool overridden = false;
  for (const auto& [name, shape] : options_.input_shapes) {
    if (name == n.name()) dims.assign(shape.begin(), shape.end()), overridden = true;
  }
  if (!overridden) {
    const auto shape = n.attr().find("shape");
    if (shape == n.attr().end() || shape->second.shape().unknown_rank()) {
      return Status(ErrorCode::kInvalidArgument,
                    what + " has no shape; give one with --input-shape " + n.name() + "=1,H,W,C");
    }
    const auto& d = shape->second.shape().dim();
    for (int i = 0; i < d.size(); ++i) {
      // An unknown batch is 1; an unknown other dim needs --input-shape.
      if (d[i].size() < 0 && i > 0) {
        return Status(ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(i) +
                                                       " is unknown; give the shape with --input-shape " +
                                                       n.name() + "=1,...");
      }
      dims.push_back(d[i].size() < 0 ? 1 : d[i].size());
    }
  }
  for (int64_t d : dims) {
    if (d <= 0 || d > INT_MAX) return Status(ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(d) + " is invalid");
  }
  const tfjs::DataType type = n.attr().count("dtype") ? n.attr().at("dtype").type() : tfjs::DT_FLOAT;
  if (type != tfjs::DT_FLOAT && type != tfjs::DT_INT32 && type != tfjs::DT_UINT8) {
    return Status(ErrorCode::kUnsupported, what + ": dtype " + tfjs::DataType_Name(type) + " is not supported");
  }
  Layout l;
  Status s = pick_layout(dims, &l);
  if (!s.ok()) return Status(ErrorCode::kUnsupported, what + ": " + s.message());
  const std::vector<int> shape = kestrel_dims(dims, l);
  g.inputs.push_back(GraphInput{n.name(), shape});
  shapes.set(n.name(), shape);
  layouts[n.name()] = l;
  blob_of[n.name() + ":0"] = n.name();
  input_dtypes_[n.name()] = type == tfjs::DT_FLOAT ? "float32" : type == tfjs::DT_INT32 ? "int32" : "uint8";
  return Status::Ok();
}

Status Importer::convert(const tfjs::NodeDef& n) {
  OpContext ctx{n, *this, g};
  const Kind k = kind_.at(n.name());
  if (n.op() == "Const") return Status::Ok();  // its value is in consts already
  if (k == kConst) return find_folder(n.op())->convert(ctx);
  if (n.op() == "Placeholder") return declare_input(n);
  const OpSpec* spec = find_spec(n.op());
  const int count = static_cast<int>(ctx.num_inputs());
  if (count < spec->min_inputs || count > spec->max_inputs) {
    return invalid("has " + std::to_string(count) + " inputs; expected " + std::to_string(spec->min_inputs) + " to " +
                   std::to_string(spec->max_inputs));
  }
  return spec->convert(ctx);
}

// Graph outputs keep the TF tensor's name: a blob reached through Identity aliases is
// renamed to it when nothing else claims that name.
Status Importer::finish_outputs(const std::vector<std::string>& outputs) {
  std::vector<std::string> names;
  for (const std::string& t : outputs) {
    const auto it = blob_of.find(t);
    if (it == blob_of.end()) return Status(ErrorCode::kInternal, "output '" + t + "' was not converted");
    std::string blob = it->second;
    // What the blob holds in TF terms, for tools that read and write NHWC tensors.
    std::vector<int64_t> dims;
    OpContext ctx{*order_.front(), *this, g};
    Status s = ctx.tf_shape(blob, &dims);
    if (!s.ok()) return s;
    const Layout layout = layouts.at(blob);
    const std::string want = blob_name(node_of(t), output_index(t));
    const bool is_input = std::any_of(g.inputs.begin(), g.inputs.end(), [&](const GraphInput& i) { return i.name == blob; });
    const bool free = std::none_of(g.nodes.begin(), g.nodes.end(), [&](const Node& nd) {
      return std::find(nd.outputs.begin(), nd.outputs.end(), want) != nd.outputs.end();
    });
    if (blob != want && !is_input && free && std::find(names.begin(), names.end(), blob) == names.end()) {
      for (Node& nd : g.nodes) std::replace(nd.outputs.begin(), nd.outputs.end(), blob, want);
      g.replace_uses(blob, want);
      for (auto& [tensor, b] : blob_of) {
        if (b == blob) b = want;
      }
      layouts[want] = layout;
      blob = want;
    }
    if (std::find(names.begin(), names.end(), blob) != names.end()) continue;
    names.push_back(blob);
    g.outputs.push_back(blob);
    std::string shape;
    for (int64_t d : dims) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    g.metadata.emplace_back("tf_output." + blob, t + " " + shape + (layout.channels_last ? " nhwc" : ""));
  }
  return Status::Ok();
}

Status Importer::run(const tfjs::GraphModel& model, std::map<std::string, ConstTensor> weights) {
  if (!model.format().empty() && model.format() != "graph-model") {
    return Status(ErrorCode::kUnsupported, "format '" + model.format() + "' is not a TF.js graph model (layers models are not supported)");
  }
  if (model.model_topology().node_size() == 0) return invalid("modelTopology has no nodes");
  Status s = order_nodes(model.model_topology());
  if (!s.ok()) return s;
  for (const tfjs::NodeDef* n : order_) {
    if (n->op() != "Const") continue;
    auto w = weights.find(n->name());
    if (w != weights.end()) {
      consts[n->name() + ":0"] = std::move(w->second);
      continue;
    }
    // The converter moves every Const into the manifest; small inline values also read.
    ConstTensor c;
    s = inline_tensor(*n, &c);
    if (!s.ok()) return Status(s.code(), describe(*n) + ": " + s.message());
    consts[n->name() + ":0"] = std::move(c);
  }
  if (!(s = classify()).ok()) return s;
  std::vector<std::string> outputs;
  if (!(s = choose_outputs(model, &outputs)).ok()) return s;
  for (const auto& entry : options_.input_shapes) {
    const std::string& name = entry.first;  // clang 14 cannot capture a structured binding
    const auto n = by_name_.find(name);
    if (n == by_name_.end() || n->second->op() != "Placeholder") {
      return Status(ErrorCode::kInvalidArgument, "--input-shape names '" + name + "', not a model input");
    }
  }
  // The nodes the outputs need, in order.
  std::set<std::string> needed;
  std::vector<std::string> stack;
  for (const std::string& t : outputs) stack.push_back(node_of(t));
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (!needed.insert(name).second) continue;
    for (const std::string& t : data_inputs(*by_name_.at(name))) stack.push_back(node_of(t));
  }
  for (const tfjs::NodeDef* n : order_) {
    if (!needed.count(n->name())) continue;
    s = convert(*n);
    if (!s.ok()) return Status(s.code(), describe(*n) + ": " + s.message());
  }
  if (g.inputs.empty()) return invalid("the imported part has no run-time input");
  if (!(s = finish_outputs(outputs)).ok()) return s;
  g.metadata.emplace_back("source", "tfjs");
  g.metadata.emplace_back("source_layout", "nhwc");
  // TensorFlow's image models read RGB; Kestrel's image path defaults to Caffe's BGR.
  g.metadata.emplace_back("channel_order", "rgb");
  if (g.inputs.size() == 1 && layouts.at(g.inputs[0].name).channels_last &&
      input_dtypes_.at(g.inputs[0].name) != "float32") {
    // An integer image input: its pre-processing becomes mean/norm (the image path and
    // kestrel-run's source-layout --input apply them).
    std::vector<float> mean, norm;
    s = fold_input_affine(g, g.inputs[0].name, g.inputs[0].shape[0], &mean, &norm);
    if (!s.ok()) return s;
    auto join = [](const std::vector<float>& v) {
      std::string t;
      char buf[32];
      for (float x : v) {
        std::snprintf(buf, sizeof buf, "%.9g", x);
        t += (t.empty() ? "" : ",") + std::string(buf);
      }
      return t;
    };
    if (!mean.empty()) {
      g.metadata.emplace_back("mean", join(mean));
      g.metadata.emplace_back("norm", join(norm));
      g.metadata.emplace_back("folded_preprocess", g.inputs[0].name);
    }
  }
  for (const GraphInput& in : g.inputs) {
    std::vector<int64_t> dims;
    OpContext ctx{*order_.front(), *this, g};
    if (!(s = ctx.tf_shape(in.name, &dims)).ok()) return s;
    std::string shape;
    for (int64_t d : dims) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    g.metadata.emplace_back("tf_input." + in.name, in.name + ":0 " + shape + (layouts.at(in.name).channels_last ? " nhwc" : "") +
                                                       " " + input_dtypes_.at(in.name));
  }
  if (!model.generated_by().empty()) g.metadata.emplace_back("generated_by", model.generated_by());
  return Status::Ok();
}

// ---- OpContext ----

size_t OpContext::num_inputs() const {
  size_t n = 0;
  for (const std::string& i : node.input()) n += !i.empty() && i[0] != '^';
  return n;
}

std::string OpContext::in(size_t i) const {
  size_t k = 0;
  for (const std::string& raw : node.input()) {
    if (raw.empty() || raw[0] == '^') continue;
    if (k++ == i) return tensor_name(raw);
  }
  return "";
}

const ConstTensor* OpContext::constant(size_t i) const {
  const auto it = importer.consts.find(in(i));
  return it == importer.consts.end() ? nullptr : &it->second;
}

Status OpContext::blob(size_t i, std::string* name) const {
  const std::string t = in(i);
  const auto it = importer.blob_of.find(t);
  if (it == importer.blob_of.end()) {
    return unsupported("input " + std::to_string(i) + (t.empty() ? " is missing" : " ('" + t + "') must be computed at run time, not a constant"));
  }
  *name = it->second;
  return Status::Ok();
}

Layout OpContext::layout(const std::string& b) const {
  const auto it = importer.layouts.find(b);
  return it == importer.layouts.end() ? Layout{} : it->second;
}

Status OpContext::extents(const std::string& b, std::vector<int>* e) const { return importer.shapes.get(graph, b, e); }

Status OpContext::tf_shape(const std::string& b, std::vector<int64_t>* dims) const {
  std::vector<int> e;
  Status s = extents(b, &e);
  if (!s.ok()) return s;
  const Layout l = layout(b);
  dims->assign(static_cast<size_t>(l.ones), 1);
  if (l.channels_last) {
    if (e.size() != 3) return Status(ErrorCode::kInternal, "channels-last blob '" + b + "' is not 3-D");
    dims->insert(dims->end(), {e[1], e[2], e[0]});
  } else {
    dims->insert(dims->end(), e.begin(), e.end());
  }
  return Status::Ok();
}

std::string OpContext::out(size_t k) const { return blob_name(node.name(), k); }

void OpContext::set_output(size_t k, const std::string& b, Layout l) const {
  importer.blob_of[node.name() + ":" + std::to_string(k)] = b;
  importer.layouts[b] = l;
}

void OpContext::set_constant(size_t k, ConstTensor t) const {
  importer.consts[node.name() + ":" + std::to_string(k)] = std::move(t);
}

std::string OpContext::new_blob(const std::string& suffix, Layout l) const {
  const std::string name = importer.unique_blob(node.name() + suffix);
  importer.layouts[name] = l;
  return name;
}

const tfjs::AttrValue* OpContext::attr(const char* name) const {
  const auto it = node.attr().find(name);
  return it == node.attr().end() ? nullptr : &it->second;
}
int64_t OpContext::attr_int(const char* name, int64_t fallback) const {
  const tfjs::AttrValue* a = attr(name);
  return a && a->value_case() == tfjs::AttrValue::kI ? a->i() : fallback;
}
float OpContext::attr_float(const char* name, float fallback) const {
  const tfjs::AttrValue* a = attr(name);
  return a && a->value_case() == tfjs::AttrValue::kF ? a->f() : fallback;
}
bool OpContext::attr_bool(const char* name, bool fallback) const {
  const tfjs::AttrValue* a = attr(name);
  return a && a->value_case() == tfjs::AttrValue::kB ? a->b() : fallback;
}
std::string OpContext::attr_string(const char* name, const std::string& fallback) const {
  const tfjs::AttrValue* a = attr(name);
  return a && a->value_case() == tfjs::AttrValue::kS ? a->s() : fallback;
}
std::vector<int64_t> OpContext::attr_ints(const char* name) const {
  const tfjs::AttrValue* a = attr(name);
  if (!a || a->value_case() != tfjs::AttrValue::kList) return {};
  return std::vector<int64_t>(a->list().i().begin(), a->list().i().end());
}
std::vector<std::string> OpContext::attr_strings(const char* name) const {
  const tfjs::AttrValue* a = attr(name);
  if (!a || a->value_case() != tfjs::AttrValue::kList) return {};
  return std::vector<std::string>(a->list().s().begin(), a->list().s().end());
}
tfjs::DataType OpContext::attr_type(const char* name, tfjs::DataType fallback) const {
  const tfjs::AttrValue* a = attr(name);
  return a && a->value_case() == tfjs::AttrValue::kType ? a->type() : fallback;
}

}  // namespace tfjs_import

namespace {

Status parse_model(const std::string& json, tfjs::GraphModel* model) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  const auto s = google::protobuf::util::JsonStringToMessage(json, model, opts);
  if (!s.ok()) return Status(ErrorCode::kCorruptModel, "not a valid TF.js model.json: " + std::string(s.message()));
  return Status::Ok();
}

Status import_parsed(const tfjs::GraphModel& model, const tfjs_import::ShardReader& read_shard,
                     const TfjsImportOptions& options, Graph* graph) {
  std::map<std::string, tfjs_import::ConstTensor> weights;
  Status s = tfjs_import::read_weights(model, read_shard, &weights);
  if (!s.ok()) return s;
  Graph g;
  s = tfjs_import::Importer(options, &g).run(model, std::move(weights));
  if (!s.ok()) return s;
  *graph = std::move(g);
  return Status::Ok();
}

}  // namespace

Status import_tfjs(const std::string& model_json_path, const TfjsImportOptions& options, Graph* graph) {
  std::ifstream f(model_json_path, std::ios::binary);
  if (!f) return Status(ErrorCode::kNotFound, model_json_path + ": cannot open the model");
  const std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  tfjs::GraphModel model;
  Status s = parse_model(json, &model);
  if (!s.ok()) return s.with_context(model_json_path);
  const size_t slash = model_json_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : model_json_path.substr(0, slash + 1);
  auto read_shard = [&](const std::string& path, std::string* bytes) {
    if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos) {
      return Status(ErrorCode::kCorruptModel, "shard path '" + path + "' leaves the model's folder");
    }
    std::ifstream shard(dir + path, std::ios::binary);
    if (!shard) return Status(ErrorCode::kNotFound, dir + path + ": cannot open the weight shard");
    bytes->assign(std::istreambuf_iterator<char>(shard), std::istreambuf_iterator<char>());
    if (shard.bad()) return Status(ErrorCode::kIoError, dir + path + ": cannot read the weight shard");
    return Status::Ok();
  };
  s = import_parsed(model, read_shard, options, graph);
  return s.ok() ? s : s.with_context(model_json_path);
}

Status import_tfjs_files(const TfjsFiles& files, const TfjsImportOptions& options, Graph* graph) {
  tfjs::GraphModel model;
  Status s = parse_model(files.model_json, &model);
  if (!s.ok()) return s;
  auto read_shard = [&](const std::string& path, std::string* bytes) {
    for (const auto& [name, data] : files.shards) {
      if (name == path) {
        *bytes = data;
        return Status::Ok();
      }
    }
    return Status(ErrorCode::kNotFound, path + ": no such weight shard");
  };
  return import_parsed(model, read_shard, options, graph);
}

std::vector<std::string> supported_tfjs_ops() {
  std::set<std::string> ops = {"Const", "Placeholder"};
  for (const std::string& op : tfjs_import::folder_ops()) ops.insert(op);
  for (const auto* table : {&tfjs_import::conv_ops(), &tfjs_import::math_ops(), &tfjs_import::shape_ops()}) {
    for (const tfjs_import::OpSpec& s : *table) ops.insert(s.op);
  }
  return std::vector<std::string>(ops.begin(), ops.end());
}

}  // namespace kestrel::convert
