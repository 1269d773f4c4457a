// Internal to the TF.js front end: what tfjs_import.cpp hands an op converter (the
// node, the constants, the layouts of the run-time blobs), the helpers they share, and
// the converter tables by topic (tfjs_ops_conv.cpp, tfjs_ops_math.cpp,
// tfjs_ops_shape.cpp) and the constant folders (tfjs_fold.cpp).
//
// Layouts. A run-time blob holds a TF tensor in one of two ways (Layout):
//   - channels last: the TF tensor is an image, [1,H,W,C] or [H,W,C], and the Kestrel
//     blob is [C,H,W] (what convolution, pooling and resize take);
//   - plain: the Kestrel blob holds the TF tensor's elements in TF order, its shape
//     the TF shape without `ones` leading 1s ([1,K] -> [K], [1,N,4] -> [N,4]).
// Rank-4 results are channels last, other ranks plain. Ops that need an image convert
// their input with as_channels_last; reshapes read channels-last blobs through a
// Permute to TF order (as_tf_order) so that the elements come in NHWC order.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_tracker.h"
#include "tfjs.pb.h"

namespace kestrel::convert::tfjs_import {

// A tensor known at conversion time: a Const's weight or a folded result. Values are
// doubles so that int32 shape arithmetic and float weights share one representation.
struct ConstTensor {
  std::vector<int64_t> dims;  // TF shape (empty: a scalar)
  std::vector<double> values;
  tfjs::DataType dtype = tfjs::DT_FLOAT;
  bool half = false;  // float values the source stored as fp16

  size_t count() const;
  bool is_float() const { return dtype == tfjs::DT_FLOAT || dtype == tfjs::DT_HALF || dtype == tfjs::DT_DOUBLE; }
};

struct Layout {
  bool channels_last = false;
  int ones = 0;  // leading 1s of the TF shape not in the Kestrel shape
};

class Importer;

struct OpContext {
  const tfjs::NodeDef& node;
  Importer& importer;
  Graph& graph;

  // Data inputs (control inputs "^x" excluded), as "node:k" tensor names.
  size_t num_inputs() const;
  std::string in(size_t i) const;
  // The constant behind input i, nullptr for a run-time tensor.
  const ConstTensor* constant(size_t i) const;
  // Input i's Kestrel blob; kUnsupported when it is a constant.
  Status blob(size_t i, std::string* name) const;
  Layout layout(const std::string& blob) const;
  Status extents(const std::string& blob, std::vector<int>* e) const;
  Status tf_shape(const std::string& blob, std::vector<int64_t>* dims) const;

  // The Kestrel blob name for output k ("NAME", or "NAME:k" for k > 0).
  std::string out(size_t k = 0) const;
  // Output k of the node is `blob` (made by this node or an alias of an input).
  void set_output(size_t k, const std::string& blob, Layout l) const;
  void set_constant(size_t k, ConstTensor t) const;
  // A fresh intermediate blob name, with its layout.
  std::string new_blob(const std::string& suffix, Layout l) const;

  template <class Params>
  Node& add(const char* type, Params params, std::vector<std::string> inputs, std::vector<std::string> outputs,
            const std::string& suffix = "") const {
    Node n;
    n.name = node.name() + suffix;
    n.type = type;
    n.params.Set(std::move(params));
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    graph.nodes.push_back(std::move(n));
    return graph.nodes.back();
  }

  // ---- attributes ----
  const tfjs::AttrValue* attr(const char* name) const;
  int64_t attr_int(const char* name, int64_t fallback) const;
  float attr_float(const char* name, float fallback) const;
  bool attr_bool(const char* name, bool fallback) const;
  std::string attr_string(const char* name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const char* name) const;
  std::vector<std::string> attr_strings(const char* name) const;
  tfjs::DataType attr_type(const char* name, tfjs::DataType fallback) const;
};

using OpConverter = Status (*)(OpContext& ctx);

struct OpSpec {
  const char* op;
  OpConverter convert;
  int min_inputs, max_inputs;
};

// ---- shared helpers (tfjs_common.cpp) ----
Status unsupported(const std::string& what);
Status invalid(const std::string& what);
std::string dims_text(const std::vector<int64_t>& v);
// The product of dims, INT64_MAX where it would overflow.
int64_t product(const std::vector<int64_t>& dims);
// Constant input i as integers; `what` names it when it is not a constant.
Status const_ints(const OpContext& ctx, size_t i, const char* what, std::vector<int64_t>* out);
// An axis in [-rank, rank) made non-negative.
Status normalize_axis(int64_t axis, size_t rank, const char* what, size_t* out);
// TF's numpy broadcasting of two shapes; false when they do not broadcast.
bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);
// The layout a new tensor of TF shape `dims` gets (rank 4 with a batch of 1: channels
// last; else plain without leading 1s beyond Kestrel's 4 dims, keeping 1 dim).
Status pick_layout(const std::vector<int64_t>& dims, Layout* l);
std::vector<int> kestrel_dims(const std::vector<int64_t>& tf_dims, const Layout& l);

// A blob holding x's elements in TF (NHWC) order: x itself when plain or when the
// permute would not move anything (C == 1 or H*W == 1), else a Permute [C,H,W] ->
// [H,W,C]. *dims gets x's TF shape.
Status as_tf_order(const OpContext& ctx, const std::string& x, std::string* y, std::vector<int64_t>* dims);
// x as TF shape `dims` (same element count) in layout pick_layout(dims), into *y (a new
// intermediate when empty): an alias when only leading 1s change, else Reshape (and
// Permutes around it for channels-last blobs).
Status reshape_to(const OpContext& ctx, const std::string& x, const std::vector<int64_t>& dims, std::string* y,
                  Layout* l);
// x as a channels-last blob ([C,H,W]); its TF shape must be rank 3 or 4 (batch 1), or
// lower (leading 1s added, as TF broadcasting does).
Status as_channels_last(const OpContext& ctx, const std::string& x, std::string* y);
// A constant operand for a blob of layout `l`: its values laid out as Kestrel reads
// them ([C,H,W] for channels last, TF order without leading 1s for plain).
Status const_as_weight(const ConstTensor& c, const Layout& l, Tensor* w);

// The per-channel affine run (Add/Sub/Mul/Div by constants) that starts at `input`
// ([C,H,W]) removed from g, as y = (x - mean) * norm; mean/norm stay empty when there
// is none (tfjs_preprocess.cpp).
Status fold_input_affine(Graph& g, const std::string& input, int channels, std::vector<float>* mean,
                         std::vector<float>* norm);

// ---- converter tables ----
const std::vector<OpSpec>& conv_ops();   // tfjs_ops_conv.cpp
const std::vector<OpSpec>& math_ops();   // tfjs_ops_math.cpp
const std::vector<OpSpec>& shape_ops();  // tfjs_ops_shape.cpp
// Folders: run when every input is a constant (Shape: when the input's shape is known).
const OpSpec* find_folder(const std::string& op);
std::vector<std::string> folder_ops();
// Ops that end the imported part without being an error (post-processing).
bool is_postprocessing_op(const std::string& op);
bool is_control_flow_op(const std::string& op);

}  // namespace kestrel::convert::tfjs_import
