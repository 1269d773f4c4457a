// ONNX front end: a ModelProto -> Graph, with shape inference and constant folding
// so that the Shape/Gather/Unsqueeze/Concat/Reshape chains exporters write for
// flatten and view become plain Flatten/Reshape. Unoptimized: optimize() runs after.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace kestrel::convert {

struct OnnxImportOptions {
  // Shapes for inputs with symbolic or missing dims: name -> the full ONNX shape
  // (1,C,H,W for an image). As for declared shapes, a rank >= 3 shape with dim 0 of 1
  // is a batch of one that Kestrel drops; any other is Kestrel's shape as it is.
  std::vector<std::pair<std::string, std::vector<int>>> input_shapes;
};

// Errors name the node, its op type and the opset; an op Kestrel does not implement is
// kUnsupported "node 'NAME' (OpType, opset N): ...".
Status import_onnx(const std::string& model_path, const OnnxImportOptions& options, Graph* graph);
// The same from bytes in memory (tests, fuzzing).
Status import_onnx_bytes(const void* data, size_t size, const OnnxImportOptions& options, Graph* graph);

// The ONNX op types import_onnx() claims to support (the conformance runner reads it).
std::vector<std::string> supported_onnx_ops();

}  // namespace kestrel::convert
