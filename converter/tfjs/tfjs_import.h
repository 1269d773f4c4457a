// TensorFlow.js graph-model front end: model.json (a GraphDef plus a weights
// manifest) and its .bin shards -> Graph. Unoptimized: optimize() runs after.
//
// TF.js tensors are NHWC; Kestrel's feature maps are [C,H,W]. An image tensor
// ([1,H,W,C] or [H,W,C]) becomes a [C,H,W] blob, every other tensor keeps its order
// (see tfjs_ops.h), and the importer inserts the permutes that reshapes, flattens and
// squeezes of a feature map need to read its elements in NHWC order.
//
// Only the convolutional part is imported: graph-level post-processing (TopKV2,
// GatherNd, ArgMax, NonMaxSuppression, int32 arithmetic, ...) is cut off. By default
// the outputs are the tensors the imported part hands to such ops, and the graph's
// own outputs where they are computed by it (see choose_outputs in tfjs_import.cpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace kestrel::convert {

struct TfjsImportOptions {
  // Tensors to cut at ("node" or "node:k"); empty: chosen as above.
  std::vector<std::string> outputs;
  // Shapes for inputs with unknown dims: placeholder name -> the full TF shape
  // (1,H,W,C for an image).
  std::vector<std::pair<std::string, std::vector<int>>> input_shapes;
};

// Errors name the file, or the node and its op: "node 'NAME' (Op): ...".
Status import_tfjs(const std::string& model_json_path, const TfjsImportOptions& options, Graph* graph);

// The same from memory: the model.json text and the shard files' bytes, by the
// paths the manifest names (tests, fuzzing).
struct TfjsFiles {
  std::string model_json;
  std::vector<std::pair<std::string, std::string>> shards;  // path -> bytes
};
Status import_tfjs_files(const TfjsFiles& files, const TfjsImportOptions& options, Graph* graph);

// The op types import_tfjs() converts into layers.
std::vector<std::string> supported_tfjs_ops();

}  // namespace kestrel::convert
