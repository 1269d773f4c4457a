// Layer fusion at Net load (Option::fuse_layers), after every layer is prepared and
// before in-place choices and the memory plan: a fused pair becomes one layer that
// reads the first layer's inputs and writes the second's outputs, the blob between
// them leaves the graph (producer kFusedAway), and the layer indices, consumers and
// execution order are rebuilt without the absorbed layer.
#include <algorithm>

#include "core/net_fuse.h"
#include "layers/conv_fusion.h"

namespace kestrel {
namespace {

// The fused layer for `a` followed by `b`, which alone reads a's single output, or
// nullptr. One family so far: pointwise -> depthwise convolution.
std::unique_ptr<Layer> fuse_pair(NetLayer& a, NetLayer& b) {
  if (a.type != "Convolution" || b.type != "Convolution") return nullptr;
  return fuse_pointwise_depthwise(a.impl, b.impl);
}

void rebuild_graph(NetImpl& net, const std::vector<char>& absorbed) {
  const size_t n = net.layers.size();
  std::vector<int> index(n, -1);
  std::vector<NetLayer> kept;
  kept.reserve(n);
  for (size_t li = 0; li < n; ++li) {
    if (absorbed[li]) continue;
    index[li] = static_cast<int>(kept.size());
    kept.push_back(std::move(net.layers[li]));
  }
  net.layers = std::move(kept);
  std::vector<int> order;
  order.reserve(net.layers.size());
  for (int li : net.order) {
    if (index[li] >= 0) order.push_back(index[li]);
  }
  net.order = std::move(order);
  net.step_of_layer.assign(net.layers.size(), 0);
  for (size_t s = 0; s < net.order.size(); ++s) net.step_of_layer[net.order[s]] = static_cast<int>(s);
  for (size_t b = 0; b < net.producer.size(); ++b) {
    if (net.producer[b] >= 0) net.producer[b] = net.fused_by[b] >= 0 ? NetImpl::kFusedAway : index[net.producer[b]];
    if (net.fused_by[b] >= 0) net.fused_by[b] = index[net.fused_by[b]];
    net.consumers[b].clear();
  }
  for (size_t li = 0; li < net.layers.size(); ++li) {
    for (int b : net.layers[li].bottoms) net.consumers[b].push_back(static_cast<int>(li));
    for (int t : net.layers[li].tops) net.producer[t] = static_cast<int>(li);
  }
}

}  // namespace

void fuse_layers(NetImpl& net) {
  std::vector<char> absorbed(net.layers.size(), 0);
  bool any = false;
  for (int li : net.order) {
    NetLayer& a = net.layers[li];
    if (absorbed[li] || a.tops.size() != 1 || a.bottoms.size() != 1) continue;
    const int x = a.tops[0];
    if (net.is_input[x] || net.is_output[x] || net.consumers[x].size() != 1) continue;
    const int bi = net.consumers[x][0];
    NetLayer& b = net.layers[bi];
    if (b.bottoms.size() != 1 || b.tops.size() != 1) continue;
    // The blob between a fused pair is never stored, so never rounded to halves.
    if (a.precision != Precision::kFp32 || b.precision != Precision::kFp32) continue;
    std::unique_ptr<Layer> fused = fuse_pair(a, b);
    if (!fused) continue;
    net.max_workspace_bytes = std::max(net.max_workspace_bytes, fused->workspace_bytes);
    net.max_workspace_per_thread_bytes =
        std::max(net.max_workspace_per_thread_bytes, fused->workspace_per_thread_bytes);
    a.impl = std::move(fused);
    a.name += "+" + b.name;
    a.tops = b.tops;
    net.fused_by[x] = li;
    absorbed[bi] = 1;
    any = true;
  }
  if (any) rebuild_graph(net, absorbed);
}

}  // namespace kestrel
