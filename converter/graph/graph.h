// The converters' intermediate graph: what a front end (Caffe, ONNX) produces, what
// the optimizer passes rewrite, and what write_model() serializes to .kst.
//
// Conventions are the model format's (src/format/kestrel.fbs): Kestrel layer types
// and typed parameter tables, shapes and axes outermost first without the batch, and
// weight layouts as each layer type documents.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kestrel/builder.h"
#include "kestrel/mat.h"
#include "kestrel/status.h"

namespace kestrel::convert {

struct Tensor {
  std::vector<int> shape;
  std::vector<float> data;
  // The source stored these values as fp16: written as F16 while every value is still
  // exactly a half (a pass that changes them, e.g. BatchNorm folding, makes it fp32).
  bool half = false;
};

struct Node {
  std::string name;  // the source model's layer name (kept for messages and profiles)
  std::string type;  // Kestrel layer type: "Convolution", "Pooling", ...
  fb::LayerParamsUnion params;
  std::vector<std::string> inputs;   // blob names
  std::vector<std::string> outputs;  // blob names; every blob has exactly one producer
  std::vector<Tensor> weights;       // in the order the layer type documents
};

struct GraphInput {
  std::string name;
  std::vector<int> shape;  // outermost first, without the batch: [C,H,W]
};

struct Graph {
  std::vector<GraphInput> inputs;
  std::vector<std::string> outputs;
  std::vector<Node> nodes;  // in execution order
  std::vector<std::pair<std::string, std::string>> metadata;

  // Index of the node producing `blob`, or -1 (graph input or unknown).
  int producer(const std::string& blob) const;
  // Indices of the nodes reading `blob`.
  std::vector<int> consumers(const std::string& blob) const;
  bool is_output(const std::string& blob) const;
  // Makes every reader of `from` (nodes and graph outputs) read `to` instead.
  void replace_uses(const std::string& from, const std::string& to);
  // Removes the nodes whose flag is set, keeping the order of the others.
  void erase_nodes(const std::vector<bool>& remove);
  // Sum of all weight bytes.
  size_t weight_bytes() const;
};

// How kestrel-convert stores weights (--weights): as the source did (F16 where every
// value of a tensor the source stored as fp16 still is one), all fp32, or all fp16.
enum class WeightStorage { kSource, kFp32, kFp16 };

// Sets every tensor's storage. kFp16 rounds each value to the nearest half, and fails
// naming the node and weight where a value is NaN, infinite or beyond fp16's range
// (65504), the graph then unchanged.
Status set_weight_storage(Graph& g, WeightStorage storage);

// The bytes of a .kst model with its weights stored as `storage` asks (kSource: as
// they are), into `out`; the same errors as set_weight_storage. `in` must have passed
// Net::load.
Status set_weight_storage(const std::string& in, WeightStorage storage, std::string* out);

// Serializes the graph (every node becomes a layer; weights fp32, or F16 where
// Tensor::half holds).
ModelBuilder to_builder(const Graph& g);

// Loads the serialized graph with Kestrel's own loader (the same verification and
// shape inference a user's Net::load runs) and returns each blob's shape. Fails with
// the loader's message when the graph is not a valid Kestrel model.
Status infer_shapes(const Graph& g, std::map<std::string, Shape>* shapes);

}  // namespace kestrel::convert
