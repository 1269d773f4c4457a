// Shapes of the blobs a front end has made so far, from Kestrel's own shape inference
// (infer_shapes: the loader's checks and each layer's prepare), run incrementally: a
// front end asks for a blob's shape while it converts, and only the nodes added since
// the last question are inferred, each once.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kestrel::convert {

// A Kestrel shape's extents, outermost first.
std::vector<int> extents(const Shape& s);

class ShapeTracker {
 public:
  // A blob whose shape is known without inference (a graph input).
  void set(const std::string& blob, std::vector<int> extents) { shapes_[blob] = std::move(extents); }
  bool known(const std::string& blob) const { return shapes_.count(blob) > 0; }
  // The Kestrel extents of `blob`, inferring g's nodes added since the last call. The
  // error of a node Kestrel cannot load says "inferring the shapes of the nodes before it".
  Status get(const Graph& g, const std::string& blob, std::vector<int>* out);

 private:
  Status infer_new_nodes(const Graph& g);

  std::map<std::string, std::vector<int>> shapes_;
  size_t done_ = 0;  // g.nodes[0, done_) are inferred
};

}  // namespace kestrel::convert
