// Internal to the Caffe front end: how caffe_import.cpp hands one Caffe layer to the
// converter for its type, which appends the Kestrel nodes, and the helpers the
// converters share (caffe_layers.cpp, caffe_layers_shape.cpp).
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "caffe.pb.h"
#include "graph/graph.h"

namespace kestrel::convert::caffe_import {

struct LayerContext {
  const caffe::LayerParameter& layer;
  // Graph blob names of the layer's bottoms (after in-place renaming) and of the
  // blobs its tops become (unique: every blob has one producer).
  std::vector<std::string> bottoms;
  std::vector<std::string> tops;
  // The layer's parameter blobs: from the caffemodel, or from the prototxt when the
  // caffemodel has no layer of this name. Their data counts match their shapes.
  std::vector<const caffe::BlobProto*> blobs;
  Graph* graph;
  // Extents of a blob (without the batch, outermost first) from Kestrel's own shape
  // inference over the nodes added so far. Costs a serialization of the graph, so
  // converters ask only when the mapping depends on the input's shape.
  std::function<Status(const std::string& blob, std::vector<int>* extents)> shape_of;
  // A blob name derived from `base` that no other blob has (for intermediate blobs
  // of layers that become several nodes).
  std::function<std::string(const std::string& base)> unique_blob;
};

// Appends the nodes for ctx.layer to ctx.graph. Errors say only what is wrong; the
// caller prefixes the file, the layer name and its type.
using LayerConverter = Status (*)(LayerContext& ctx);

struct LayerSpec {
  const char* type;
  LayerConverter convert;
  int min_bottoms, max_bottoms;
  int min_tops, max_tops;  // max -1: any number
};

// The spec for a Caffe layer type ("Convolution", ...); nullptr when Kestrel has no
// mapping for it.
const LayerSpec* find_layer_spec(const std::string& type);

// ---- helpers shared by the converters (caffe_layers.cpp) ----

// kUnsupported "parameter NAME = VALUE is not supported" (+ why, when given).
Status unsupported(const std::string& param, const std::string& value, const std::string& why = "");
// kCorruptModel with the message: parameters Caffe itself would reject.
Status invalid(const std::string& message);
// Shortest decimal text of a number, for messages.
std::string num(double v);
// "[a,b,c]", for messages about shapes.
std::string dims_text(const std::vector<int>& v);
// An unsigned parameter as an int; kCorruptModel naming it when it does not fit.
Status to_int(const char* name, uint64_t v, int* out);

// Caffe axes count the batch; Kestrel's do not. Non-negative axes move down by one,
// negative ones (counted from the innermost) stay; the batch axis is an error.
Status kestrel_axis(int caffe_axis, const char* param, int* axis);

// A blob's values as floats (data or double_data) and its shape (shape, else the
// legacy num/channels/height/width, else [count]).
std::vector<float> blob_values(const caffe::BlobProto& b);
std::vector<int> blob_shape(const caffe::BlobProto& b);
size_t blob_count(const caffe::BlobProto& b);

// Fails unless the layer has `count` blobs; `names` lists them for the message.
Status expect_blobs(const LayerContext& ctx, size_t count, const char* names);
// Blob `index` as a tensor of `shape`, checking its value count against the shape.
Status take_blob(const LayerContext& ctx, size_t index, const char* what, const std::vector<int>& shape,
                 Tensor* out);

// Appends a node named after the layer (plus `suffix`) and returns it.
template <class Params>
Node& add_node(LayerContext& ctx, const char* type, Params params, std::vector<std::string> inputs,
               std::vector<std::string> outputs, const std::string& suffix = "") {
  Node n;
  n.name = ctx.layer.name() + suffix;
  n.type = type;
  n.params.Set(std::move(params));
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  ctx.graph->nodes.push_back(std::move(n));
  return ctx.graph->nodes.back();
}

// [v] as a one-value tensor.
Tensor scalar(float v);
// `v` without its leading 1s: legacy 4-D blobs pad their shape with them ([1,1,N,K]
// for an InnerProduct weight) and Caffe accepts them where the trailing extents match.
std::vector<int> without_leading_ones(const std::vector<int>& v);

// A standalone Activation node from bottom 0 to top 0.
Status add_activation(LayerContext& ctx, fb::ActivationType type, float alpha = 0.f, float beta = 0.f);
// A Scale node: y = x * scale (+ bias), per channel or one shared value.
void add_scale(LayerContext& ctx, const std::string& input, const std::string& output, Tensor scale,
               const Tensor* bias, const std::string& suffix = "");

// ---- converters defined in caffe_layers_norm.cpp ----
Status convert_batchnorm(LayerContext& ctx);
Status convert_scale(LayerContext& ctx);
Status convert_bias(LayerContext& ctx);
Status convert_normalize(LayerContext& ctx);
Status convert_lrn(LayerContext& ctx);

// ---- converters defined in caffe_layers_shape.cpp ----
Status convert_concat(LayerContext& ctx);
Status convert_slice(LayerContext& ctx);
Status convert_split(LayerContext& ctx);
Status convert_crop(LayerContext& ctx);
Status convert_flatten(LayerContext& ctx);
Status convert_reshape(LayerContext& ctx);
Status convert_permute(LayerContext& ctx);
Status convert_priorbox(LayerContext& ctx);
Status convert_detection_output(LayerContext& ctx);
Status convert_shuffle_channel(LayerContext& ctx);
Status convert_interp(LayerContext& ctx);
Status convert_upsample(LayerContext& ctx);

}  // namespace kestrel::convert::caffe_import
