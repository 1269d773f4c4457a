// Internal to the ONNX front end: what onnx_import.cpp hands an op converter (the
// node, its opset, the constants and shapes known so far), the helpers they share,
// and the converters by topic (onnx_fold.cpp, onnx_ops.cpp, onnx_ops_shape.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "onnx.pb.h"

namespace kestrel::convert::onnx_import {

// A tensor known at conversion time: an initializer, a Constant node's value or a
// folded result. Values are kept as double so that int64 shape arithmetic and float
// weights share one representation (int64 shape values fit a double exactly).
struct ConstTensor {
  std::vector<int64_t> dims;  // the full ONNX shape (batch included where it has one)
  std::vector<double> values;
  bool is_float = true;

  size_t count() const;
  std::vector<int> int_dims() const;
  Tensor to_weight() const;  // float32 tensor with the same dims (rank 0 -> [1])
};

class Importer;

struct OpContext {
  const onnx::NodeProto& node;
  int opset;
  Importer& importer;
  Graph& graph;

  // Input i's name, "" when absent or omitted.
  const std::string& in(size_t i) const;
  const std::string& out(size_t i) const;
  size_t num_inputs() const { return static_cast<size_t>(node.input_size()); }
  // The constant behind input i, nullptr when it is a run-time blob (or absent).
  const ConstTensor* constant(size_t i) const;
  // Input i must be a run-time blob (a graph input or a node's output).
  Status blob(size_t i, std::string* name) const;
  // The ONNX shape of a run-time blob (batch 1 first), from Kestrel's own shape
  // inference over the nodes converted so far.
  Status shape(const std::string& blob, std::vector<int64_t>* dims) const;
  // Records output i as a constant (folded); nothing is added to the graph.
  void set_constant(size_t i, ConstTensor t) const;
  // A blob name no other blob has, for intermediates of ops that become several nodes.
  std::string unique_blob(const std::string& base) const;

  template <class Params>
  Node& add(const char* type, Params params, std::vector<std::string> inputs, std::vector<std::string> outputs,
            const std::string& suffix = "") const {
    Node n;
    n.name = (node.name().empty() ? out(0) : node.name()) + suffix;
    n.type = type;
    n.params.Set(std::move(params));
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    graph.nodes.push_back(std::move(n));
    return graph.nodes.back();
  }
};

using OpConverter = Status (*)(OpContext& ctx);

struct OpSpec {
  const char* type;
  OpConverter convert;
  int min_inputs, max_inputs;
};

// ---- attributes ----
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name);
int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t fallback);
float attr_float(const onnx::NodeProto& n, const char* name, float fallback);
std::string attr_string(const onnx::NodeProto& n, const char* name, const std::string& fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name);

// ---- shared helpers ----
Status unsupported(const std::string& what);
Status invalid(const std::string& what);
std::string dims_text(const std::vector<int64_t>& v);
// A TensorProto as a constant (float, double, int32/64, bool, (u)int8 data).
Status read_tensor(const onnx::TensorProto& t, ConstTensor* out);
// An ONNX axis of a rank-`rank` tensor with batch -> Kestrel's axis (batch dropped);
// the batch axis is an error naming `what`.
Status kestrel_axis(int64_t axis, size_t rank, const char* what, int* out);
// Constant input i as int64 values; `what` names it in the error when not constant.
Status const_ints(const OpContext& ctx, size_t i, const char* what, std::vector<int64_t>* out);
int clamp_int(int64_t v);
Status add_activation(OpContext& ctx, fb::ActivationType type, float alpha = 0.f, float beta = 0.f);

// ---- converter tables (one per source file) ----
// Constant folding: run when every input is a constant (Shape: when the input's shape
// is known). Returns nullptr for ops that do not fold.
const OpSpec* find_folder(const std::string& type);
std::vector<std::string> folder_types();
const std::vector<OpSpec>& compute_ops();  // onnx_ops.cpp
const std::vector<OpSpec>& shape_ops();    // onnx_ops_shape.cpp

}  // namespace kestrel::convert::onnx_import
