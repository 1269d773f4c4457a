// Internal to the ONNX front end: what onnx_import.cpp hands an op converter (the
// node, its opset, the constants and shapes known so far), the helpers they share,
// and the converters by topic (onnx_fold.cpp, onnx_ops.cpp, onnx_ops_math.cpp,
// onnx_ops_shape.cpp, onnx_ops_resize.cpp).
//
// Layouts. Kestrel blobs have 1 to 4 dims and no batch; ONNX tensors have any rank.
// Every run-time blob has one of two layouts, fixed when it is made:
//   - batched: its ONNX dim 0 is 1 and Kestrel drops it ([1,C,H,W] -> [C,H,W]); ONNX
//     axis a is Kestrel axis a - 1. Convolution, pooling, BatchNorm, Interp and the
//     other image layers need it (they take one [C,H,W] image);
//   - batchless: the ONNX shape (rank 1 to 4) is the Kestrel shape verbatim.
// Graph inputs of rank >= 3 whose dim 0 is 1 are batched, every other is batchless
// (so a [1,K] input stays [1,K]). A converter reads its inputs in either layout (or
// asks for one: as_batched / as_batchless insert a Reshape), and says which layout each
// output has; by default an output has the layout of the node's first run-time input.
#pragma once
#include <cstdint>
#include <deque>
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
  std::vector<int64_t> dims;  // the full ONNX shape
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
  // The full ONNX shape of a run-time blob, from Kestrel's own shape inference over the
  // nodes converted so far and the blob's layout.
  Status shape(const std::string& blob, std::vector<int64_t>* dims) const;
  bool batched(const std::string& blob) const;
  // Sets the layout of a blob this node makes (an output or an intermediate).
  void set_batched(const std::string& blob, bool batched) const;
  // A new intermediate run-time blob of the given layout, named after output 0.
  std::string new_blob(const std::string& suffix, bool batched) const;
  // A Reshape of run-time blob x to ONNX shape `dims` in the given layout, into `*y`
  // (a new intermediate when *y is empty).
  Status reshape(const std::string& x, const std::vector<int64_t>& dims, bool batched, std::string* y) const;
  // x itself when it has the layout, else a Reshape of it that has; kUnsupported when
  // the shape cannot have it (a batch other than 1; rank 5 without a batch).
  Status as_batched(const std::string& x, std::string* y) const;
  Status as_batchless(const std::string& x, std::string* y) const;
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
// An ONNX axis of a rank-`rank` blob -> Kestrel's axis: one less on a batched blob,
// whose axis 0 is then an error naming `what`.
Status kestrel_axis(int64_t axis, size_t rank, bool batched, const char* what, int* out);
// Kestrel's axes for ONNX `axes` of run-time blob *x; when one is *x's dropped batch
// axis, *x is first replaced by a batchless Reshape of it.
Status kestrel_axes_of(const OpContext& ctx, std::string* x, const std::vector<int64_t>& axes, const char* what,
                       std::vector<int>* out);
// `axis` in [-rank, rank) made non-negative.
Status normalize_axis(int64_t axis, size_t rank, const char* what, size_t* out);
// The layout of a new blob of ONNX shape `dims`: batched when preferred and possible
// (dim 0 is 1, rank >= 2) or when the rank (5) needs it; kUnsupported for shapes
// Kestrel cannot hold (scalars, empty tensors, rank > 5, rank 5 with dim 0 != 1).
Status pick_layout(const std::vector<int64_t>& dims, bool prefer_batched, bool* batched);
// The Kestrel shape of ONNX `dims` in a layout.
std::vector<int> kestrel_dims(const std::vector<int64_t>& dims, bool batched);
// Constant input i as int64 values; `what` names it in the error when not constant.
Status const_ints(const OpContext& ctx, size_t i, const char* what, std::vector<int64_t>* out);
int clamp_int(int64_t v);
int64_t product(const std::vector<int64_t>& dims, size_t begin = 0, size_t end = SIZE_MAX);
// Numpy broadcasting of two shapes; false when they do not broadcast.
bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);
// ONNX Reshape semantics on full shapes: 0 copies (unless allowzero), -1 infers.
Status reshape_dims(const std::vector<int64_t>& in, const std::vector<int64_t>& target, bool allowzero,
                    std::vector<int64_t>* out);
Status add_activation(OpContext& ctx, fb::ActivationType type, float alpha = 0.f, float beta = 0.f);

// ---- converter tables (one per source file) ----
// Constant folding: run when every input is a constant (Shape: when the input's shape
// is known). Returns nullptr for ops that do not fold.
const OpSpec* find_folder(const std::string& type);
std::vector<std::string> folder_types();
const std::vector<OpSpec>& compute_ops();  // onnx_ops.cpp
const std::vector<OpSpec>& math_ops();     // onnx_ops_math.cpp
const std::vector<OpSpec>& shape_ops();    // onnx_ops_shape.cpp
const std::vector<OpSpec>& resize_ops();   // onnx_ops_resize.cpp

// The graph's nodes in order, with each decomposed GELU that exporters write without a
// Gelu op, x * 0.5 * (1 + Erf(x / sqrt(2))), replaced by a Gelu node kept in `made`
// (onnx_patterns.cpp).
std::vector<const onnx::NodeProto*> fuse_patterns(const onnx::GraphProto& graph, std::deque<onnx::NodeProto>* made);

}  // namespace kestrel::convert::onnx_import
