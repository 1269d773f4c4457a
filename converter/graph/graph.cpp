#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>

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

namespace {

// Why `v` cannot be stored as an fp16 weight, or empty: NaN and infinities are refused,
// and finite values beyond +-65504, which would round to infinity.
std::string half_refusal(float v) {
  constexpr float kHalfMax = 65504.f;
  if (std::isfinite(v) && std::fabs(half_to_float(float_to_half(v))) <= kHalfMax) return std::string();
  std::ostringstream m;
  m << "holds " << v << (std::isfinite(v) ? ", beyond fp16's range of +-65504" : ", which fp16 weights refuse")
    << "; store this model's weights as fp32";
  return m.str();
}

}  // namespace

Status set_weight_storage(Graph& g, WeightStorage storage) {
  if (storage == WeightStorage::kFp16) {
    // Check everything first: a failure leaves the graph as it was.
    for (const Node& n : g.nodes) {
      for (size_t i = 0; i < n.weights.size(); ++i) {
        for (float v : n.weights[i].data) {
          const std::string why = half_refusal(v);
          if (why.empty()) continue;
          return Status(ErrorCode::kInvalidArgument, "--weights fp16: weight " + std::to_string(i) + " of layer '" +
                                                         n.name + "' (" + n.type + ") " + why);
        }
      }
    }
  }
  for (Node& n : g.nodes) {
    for (Tensor& t : n.weights) {
      if (storage == WeightStorage::kFp32) t.half = false;
      if (storage != WeightStorage::kFp16) continue;
      for (float& v : t.data) v = half_to_float(float_to_half(v));
      t.half = true;
    }
  }
  return Status::Ok();
}

Status set_weight_storage(const std::string& in, WeightStorage storage, std::string* out) {
  if (storage == WeightStorage::kSource) {
    *out = in;
    return Status::Ok();
  }
  std::unique_ptr<fb::ModelT> model(fb::GetModel(in.data())->UnPack());
  for (auto& w : model->weights) {
    const bool to_half = storage == WeightStorage::kFp16 && w->dtype == fb::DType::F32;
    const bool to_float = storage == WeightStorage::kFp32 && w->dtype == fb::DType::F16;
    if (!to_half && !to_float) continue;
    std::vector<uint8_t> bytes(to_half ? w->data.size() / 2 : w->data.size() * 2);
    for (size_t k = 0; k < (to_half ? w->data.size() / 4 : w->data.size() / 2); ++k) {
      if (to_half) {
        float v;
        std::memcpy(&v, w->data.data() + 4 * k, 4);
        const std::string why = half_refusal(v);
        if (!why.empty()) return Status(ErrorCode::kInvalidArgument, "--weights fp16: weight '" + w->name + "' " + why);
        const uint16_t h = float_to_half(v);
        std::memcpy(bytes.data() + 2 * k, &h, 2);
      } else {
        uint16_t h;
        std::memcpy(&h, w->data.data() + 2 * k, 2);
        const float v = half_to_float(h);
        std::memcpy(bytes.data() + 4 * k, &v, 4);
      }
    }
    w->data = std::move(bytes);
    w->dtype = to_half ? fb::DType::F16 : fb::DType::F32;
  }
  flatbuffers::FlatBufferBuilder fbb(in.size());
  fb::FinishModelBuffer(fbb, fb::Model::Pack(fbb, model.get()));
  out->assign(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  return Status::Ok();
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
