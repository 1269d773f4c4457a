// Rewrites of ONNX node patterns before conversion. Exporters without a Gelu op (before
// opset 20) write GELU as x * 0.5 * (1 + Erf(x / sqrt(2))); Kestrel has GELU as an
// activation but no Erf, so the whole pattern becomes one Gelu node. Matching goes by
// graph structure and constant values, never by names; every intermediate must have
// that one reader and must not be a graph output.
#include <cmath>
#include <map>
#include <set>

#include "onnx/onnx_ops.h"

namespace kestrel::convert::onnx_import {
namespace {

bool is_default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

class GeluMatcher {
 public:
  explicit GeluMatcher(const onnx::GraphProto& g) : g_(g) {
    for (const onnx::TensorProto& t : g.initializer()) {
      ConstTensor c;
      if (read_tensor(t, &c).ok() && c.count() == 1) scalars_[t.name()] = c.values[0];
    }
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& n = g.node(i);
      for (const std::string& o : n.output()) producer_[o] = i;
      for (const std::string& in : n.input()) ++readers_[in];
      const onnx::AttributeProto* v = find_attr(n, "value");
      ConstTensor c;
      if (n.op_type() == "Constant" && n.output_size() == 1 && v && v->has_t() && read_tensor(v->t(), &c).ok() &&
          c.count() == 1) {
        scalars_[n.output(0)] = c.values[0];
      }
    }
    for (const onnx::ValueInfoProto& o : g.output()) readers_[o.name()] += 2;  // never an intermediate
  }

  // Matches the pattern whose Erf is node `erf`: sets the nodes it replaces and the
  // Gelu's input and output.
  bool match(int erf, std::set<int>* nodes, std::string* x, std::string* y) const {
    const onnx::NodeProto& e = g_.node(erf);
    if (e.input_size() != 1) return false;  // a malformed Erf is the importer's to report
    const int scaled = single_producer(e.input(0));
    if (scaled < 0) return false;
    const onnx::NodeProto& d = g_.node(scaled);
    if (d.input_size() != 2) return false;
    // x / sqrt(2) or x * (1 / sqrt(2)).
    if (d.op_type() == "Div" && is_scalar(d.input(1), std::sqrt(2.0), 1e-4)) {
      *x = d.input(0);
    } else if (d.op_type() == "Mul" && (*x = other_than_scalar(d, std::sqrt(0.5), 1e-4)).empty()) {
      return false;
    } else if (d.op_type() != "Div" && d.op_type() != "Mul") {
      return false;
    }
    const int plus_one = single_reader("Add", e.output(0));
    if (plus_one < 0 || other_than_scalar(g_.node(plus_one), 1.0, 1e-6) != e.output(0)) return false;
    const int mul = single_reader("Mul", g_.node(plus_one).output(0));
    if (mul < 0) return false;
    const onnx::NodeProto& m = g_.node(mul);
    const std::string other = m.input(0) == g_.node(plus_one).output(0) ? m.input(1) : m.input(0);
    int last = mul, extra = -1;
    if (other == *x) {  // (x * (1 + erf)) * 0.5
      last = single_reader("Mul", m.output(0));
      if (last < 0 || other_than_scalar(g_.node(last), 0.5, 1e-6) != m.output(0)) return false;
    } else if (is_scalar(other, 0.5, 1e-6)) {  // x * ((1 + erf) * 0.5)
      last = single_reader("Mul", m.output(0));
      if (last < 0) return false;
      const onnx::NodeProto& l = g_.node(last);
      if ((l.input(0) == m.output(0) ? l.input(1) : l.input(0)) != *x) return false;
    } else {  // (x * 0.5) * (1 + erf)
      extra = single_producer(other);
      if (extra < 0 || g_.node(extra).op_type() != "Mul" || other_than_scalar(g_.node(extra), 0.5, 1e-6) != *x) {
        return false;
      }
    }
    *nodes = {scaled, erf, plus_one, mul, last};
    if (extra >= 0) nodes->insert(extra);
    *y = g_.node(last).output(0);
    return true;
  }

 private:
  bool is_scalar(const std::string& name, double value, double tol) const {
    const auto it = scalars_.find(name);
    return it != scalars_.end() && std::fabs(it->second - value) <= tol;
  }

  // The input of binary node n that is not the scalar `value`, "" when neither is.
  std::string other_than_scalar(const onnx::NodeProto& n, double value, double tol) const {
    if (n.input_size() != 2) return "";
    if (is_scalar(n.input(1), value, tol)) return n.input(0);
    if (is_scalar(n.input(0), value, tol)) return n.input(1);
    return "";
  }

  // The node making `blob` when that node's only output has only one reader, else -1.
  int single_producer(const std::string& blob) const {
    const auto it = producer_.find(blob);
    if (it == producer_.end() || reader_count(blob) != 1) return -1;
    const onnx::NodeProto& n = g_.node(it->second);
    return is_default_domain(n) && n.output_size() == 1 ? it->second : -1;
  }

  // The one reader of `blob`, when it is an op of `type`, else -1.
  int single_reader(const char* type, const std::string& blob) const {
    if (reader_count(blob) != 1) return -1;
    for (int i = 0; i < g_.node_size(); ++i) {
      const onnx::NodeProto& n = g_.node(i);
      for (const std::string& in : n.input()) {
        if (in == blob) return n.op_type() == type && is_default_domain(n) && n.output_size() == 1 ? i : -1;
      }
    }
    return -1;
  }

  int reader_count(const std::string& blob) const {
    const auto it = readers_.find(blob);
    return it == readers_.end() ? 0 : it->second;
  }

  const onnx::GraphProto& g_;
  std::map<std::string, double> scalars_;
  std::map<std::string, int> producer_, readers_;
};

}  // namespace

std::vector<const onnx::NodeProto*> fuse_patterns(const onnx::GraphProto& graph, std::deque<onnx::NodeProto>* made) {
  std::vector<bool> removed(static_cast<size_t>(graph.node_size()), false);
  std::map<int, const onnx::NodeProto*> replaced;  // node index -> the Gelu taking its place
  const GeluMatcher matcher(graph);
  for (int i = 0; i < graph.node_size(); ++i) {
    std::set<int> nodes;
    std::string x, y;
    const onnx::NodeProto& n = graph.node(i);
    if (n.op_type() != "Erf" || !is_default_domain(n) || !matcher.match(i, &nodes, &x, &y)) continue;
    bool free = true;
    for (int n : nodes) free = free && !removed[static_cast<size_t>(n)];
    if (!free) continue;
    for (int n : nodes) removed[static_cast<size_t>(n)] = true;
    // The Gelu goes where the pattern's last node was, after everything x needs.
    const int last = *nodes.rbegin();
    onnx::NodeProto& gelu = made->emplace_back();
    gelu.set_op_type("Gelu");
    gelu.set_name(graph.node(last).name());
    gelu.add_input(x);
    gelu.add_output(y);
    replaced[last] = &gelu;
  }
  std::vector<const onnx::NodeProto*> out;
  out.reserve(static_cast<size_t>(graph.node_size()));
  for (int i = 0; i < graph.node_size(); ++i) {
    if (replaced.count(i)) out.push_back(replaced[i]);
    else if (!removed[static_cast<size_t>(i)]) out.push_back(&graph.node(i));
  }
  return out;
}

}  // namespace kestrel::convert::onnx_import
