#include "graph/shape_tracker.h"

#include <algorithm>
#include <set>

namespace kestrel::convert {

std::vector<int> extents(const Shape& s) {
  switch (s.dims) {
    case 1: return {s.w};
    case 2: return {s.h, s.w};
    case 3: return {s.c, s.h, s.w};
    default: return {s.c, s.d, s.h, s.w};
  }
}

Status ShapeTracker::get(const Graph& g, const std::string& blob, std::vector<int>* out) {
  if (!shapes_.count(blob) && done_ < g.nodes.size()) {
    Status s = infer_new_nodes(g);
    if (!s.ok()) return s;
  }
  const auto it = shapes_.find(blob);
  if (it == shapes_.end()) return Status(ErrorCode::kInternal, "no shape for blob '" + blob + "'");
  *out = it->second;
  return Status::Ok();
}

// The new nodes as a graph of their own, their other inputs declared with the shapes
// known so far.
Status ShapeTracker::infer_new_nodes(const Graph& g) {
  Graph sub;
  std::set<std::string> made;
  for (size_t i = done_; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const std::string& in : n.inputs) {
      auto named = [&](const GraphInput& d) { return d.name == in; };
      if (made.count(in) || std::any_of(sub.inputs.begin(), sub.inputs.end(), named)) continue;
      const auto known = shapes_.find(in);
      if (known == shapes_.end()) return Status(ErrorCode::kInternal, "no shape for blob '" + in + "'");
      sub.inputs.push_back(GraphInput{in, known->second});
    }
    sub.nodes.push_back(n);
    made.insert(n.outputs.begin(), n.outputs.end());
    // Kestrel's loader wants declared outputs: every blob serves for this purpose.
    sub.outputs.insert(sub.outputs.end(), n.outputs.begin(), n.outputs.end());
  }
  std::map<std::string, Shape> inferred;
  Status s = infer_shapes(sub, &inferred);
  if (!s.ok()) return s.with_context("inferring the shapes of the nodes before it");
  for (const auto& [name, shape] : inferred) shapes_[name] = extents(shape);
  done_ = g.nodes.size();
  return Status::Ok();
}

}  // namespace kestrel::convert
