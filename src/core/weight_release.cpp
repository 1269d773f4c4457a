#include "core/weight_release.h"

#include <algorithm>
#include <utility>

#include "core/net_impl.h"

namespace kestrel {
namespace {

// True while some layer using weight w may read it in place: one not prepared yet, or
// one that says it does.
bool read_in_place(const NetImpl& net, const NetImpl::ModelWeight& w) {
  for (const auto& [layer, pos] : w.users) {
    const Layer* l = net.prepared_layers[static_cast<size_t>(layer)];
    if (!l || l->reads_weight_in_place(static_cast<size_t>(pos))) return true;
  }
  return false;
}

}  // namespace

void release_packed_weights(NetImpl& net, int li) {
  // Layers the Net added (core/net_half.cpp) hold no model weights.
  if (static_cast<size_t>(li) >= net.model->layers()->size()) return;
  const fb::Layer* fl = net.model->layers()->Get(static_cast<flatbuffers::uoffset_t>(li));
  if (!fl->weights()) return;
  for (uint32_t w : *fl->weights()) {
    const NetImpl::ModelWeight& mw = net.model_weights[w];
    if (!mw.widened && !read_in_place(net, mw)) net.buffer.release(mw.bytes, mw.size);
  }
}

void finish_weight_release(NetImpl& net) {
  std::vector<std::pair<const uint8_t*, const uint8_t*>> kept;
  size_t in_place = 0;
  for (NetImpl::ModelWeight& w : net.model_weights) {
    const bool read = read_in_place(net, w);
    // A private copy or a caller's buffer is held whole; a mapped file's pages only
    // where a layer reads them.
    if (!net.buffer.refaults() || (read && !w.widened)) in_place += w.size;
    if (read && !w.widened) kept.emplace_back(w.bytes, w.bytes + w.size);
    if (!w.widened) continue;
    // The fp32 copy of an F16 weight serves the layers that read in place; the packed
    // ones were made from it.
    if (read) {
      in_place += w.widened->size() * sizeof(float);
    } else {
      std::vector<float>().swap(*w.widened);
    }
  }
  // Weights rounded to halves for fp16 layers: like fp32 copies of F16 weights.
  for (size_t i = 0; i < net.rounded_users.size(); ++i) {
    const auto [layer, pos] = net.rounded_users[i];
    const Layer* l = net.prepared_layers[static_cast<size_t>(layer)];
    std::vector<float>& r = net.rounded_weights[i];
    if (!l || l->reads_weight_in_place(static_cast<size_t>(pos))) {
      in_place += r.size() * sizeof(float);
    } else {
      std::vector<float>().swap(r);
    }
  }
  // A mapped model: every page that holds no weight read in place goes back, the
  // verified tables with them (they fault back in if read again).
  if (net.buffer.refaults()) {
    std::sort(kept.begin(), kept.end());
    const uint8_t* cursor = net.buffer.data();
    for (const auto& [begin, end] : kept) {
      if (begin > cursor) net.buffer.release(cursor, static_cast<size_t>(begin - cursor));
      cursor = std::max(cursor, end);
    }
    const uint8_t* last = net.buffer.data() + net.buffer.size();
    if (last > cursor) net.buffer.release(cursor, static_cast<size_t>(last - cursor));
  }
  size_t packed = 0;  // as the layers are now: the layout pass may have packed some again
  for (const NetLayer& l : net.layers) packed += l.impl->packed_weight_bytes();
  net.resident_weight_bytes = packed + in_place;
}

}  // namespace kestrel
