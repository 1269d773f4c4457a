#include "graph/graph.h"

#include <algorithm>

#include "core/half.h"
#include "core/net_impl.h"

namespace kestrel::convert {

int Graph::producer(const std::string& blob) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& outs = nodes[i].outputs;
    if (std::find(outs.begin(), outs.end(), blob) != outs.end()) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Graph::consumers(const std::string& blob) const {
  std::vector<int> r;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& ins = nodes[i].inputs;
    if (std::find(ins.begin(), ins.end(), blob) != ins.end()) r.push_back(static_cast<int>(i));
  }
  return r;
}

bool Graph::is_output(const std::string& blob) const {
  return std::find(outputs.begin(), outputs.end(), blob) != outputs.end();
}

void Graph::replace_uses(const std::string& from, const std::string& to) {
  for (Node& n : nodes) std::replace(n.inputs.begin(), n.inputs.end(), from, to);
  std::replace(outputs.begin(), outputs.end(), from, to);
}

void Graph::erase_nodes(const std::vector<bool>& remove) {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!remove[i]) kept.push_back(std::move(nodes[i]));
  }
  nodes = std::move(kept);
}

size_t Graph::weight_bytes() const {
  size_t b = 0;
  for (const Node& n : nodes) {
    for (const Tensor& t : n.weights) b += t.data.size() * (t.half ? sizeof(uint16_t) : sizeof(float));
  }
  return b;
}

ModelBuilder to_builder(const Graph& g) {
  ModelBuilder b;
  for (const GraphInput& in : g.inputs) b.add_input(in.name, in.shape);
  for (const Node& n : g.nodes) {
    std::vector<uint32_t> w;
    for (size_t i = 0; i < n.weights.size(); ++i) {
      const Tensor& t = n.weights[i];
      const std::string name = n.name + "/w" + std::to_string(i);
      const bool half = t.half && std::all_of(t.data.begin(), t.data.end(), is_exact_half);
      if (!half) {
        w.push_back(b.add_weight(name, t.shape, t.data));
        continue;
      }
      std::vector<uint16_t> h(t.data.size());
      std::transform(t.data.begin(), t.data.end(), h.begin(), float_to_half);
      w.push_back(b.add_weight_f16(name, t.shape, h));
    }
    b.add_layer(n.type, n.name, n.inputs, n.outputs, n.params, w);
  }
  for (const std::string& o : g.outputs) b.add_output(o);
  for (const auto& [k, v] : g.metadata) b.set_metadata(k, v);
  return b;
}

Status infer_shapes(const Graph& g, std::map<std::string, Shape>* shapes) {
  const std::vector<uint8_t> bytes = to_builder(g).serialize();
  auto impl = std::make_unique<NetImpl>();
  Status s = impl->buffer.from_memory(bytes.data(), bytes.size());
  if (!s.ok()) return s;
  Option opt;
  opt.kernels = KernelSet::kReference;
  std::shared_ptr<const NetImpl> net;
  if (!(s = build_net(std::move(impl), opt, {}, &net)).ok()) return s;
  shapes->clear();
  for (size_t b = 0; b < net->blob_names.size(); ++b) (*shapes)[net->blob_names[b]] = net->blob_shapes[b];
  return Status::Ok();
}

}  // namespace kestrel::convert
