// fp16 maps: consecutive layers that compute in fp16 hand each other halves, and the Net
// converts at the boundaries only (issue 26). A layer at Precision::kFp16 is re-targeted
// when it has kernels for halves in the layouts its maps get (Layer::set_half): blocked
// by 8 channels (one vector of halves: ncnn's pack8 fp16 maps) where a map's channels
// allow, planar halves otherwise (a 3-channel image for the stem). A map whose writer
// computes in fp16 is stored as halves; a layer that reads fp32 gets one widened copy
// (HalfConvert), and an fp16 layer reading a map written in fp32 (or a network input)
// one rounded copy. extract() widens halves itself, so outputs need no copy.
//
// Every re-targeted kernel equals the fp16 reference bit for bit, and the reference
// rounds the same maps (an fp16 layer's outputs, and the inputs it reads), so a net's
// results do not change with this pass: only its speed and its maps' bytes.
//
// Runs before the fp32 layout pass (core/net_layout.cpp), which leaves maps of halves
// alone and may block the fp32 side of a HalfConvert.
#include "core/net_half.h"

#include <algorithm>

#include "kernels/isa.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

constexpr int kHalfLanes = 8;

// The layout of halves a map of this shape gets.
int half_pack(const Shape& s) { return s.dims == 3 && s.c % kHalfLanes == 0 ? kHalfLanes : 1; }

// Appends a blob written by layer `producer`.
int add_blob(NetImpl& net, const std::string& name, const Shape& shape, int producer) {
  const int b = static_cast<int>(net.blob_names.size());
  net.blob_names.push_back(name);
  net.blob_index[name] = b;
  net.blob_shapes.push_back(shape);
  net.producer.push_back(producer);
  net.consumers.emplace_back();
  net.is_input.push_back(false);
  net.is_output.push_back(false);
  return b;
}

// Adds a HalfConvert reading blob `from` (layout as its shape says) into a new blob in
// `pack`: to halves where to_half, else to fp32, into *added. It runs right after
// `from`'s producer (first, for a network input).
Status add_convert(NetImpl& net, int from, bool to_half, int pack, int* added) {
  const int b = static_cast<int>(net.blob_names.size());
  const std::string name = net.blob_names[from] + (to_half ? "@fp16" : "@fp32");
  add_blob(net, name, Shape{}, static_cast<int>(net.layers.size()));
  NetLayer L;
  L.name = name;
  L.type = "HalfConvert";
  L.impl = create_half_convert_layer(to_half, pack);
  L.bottoms = {from};
  L.tops = {b};
  std::vector<Shape> out(1);
  Status s = L.impl->prepare({net.blob_shapes[from]}, out, PrepareContext{});
  if (!s.ok()) return s.with_context("converting '" + net.blob_names[from] + "'");
  net.blob_shapes[b] = out[0];
  net.max_workspace_per_thread_bytes = std::max(net.max_workspace_per_thread_bytes, L.impl->workspace_per_thread_bytes);
  const int li = static_cast<int>(net.layers.size());
  net.layers.push_back(std::move(L));
  net.consumers[from].push_back(li);
  // Right after the producer: the copy lives from there on.
  const int p = net.producer[from];
  auto at = p >= 0 ? std::find(net.order.begin(), net.order.end(), p) + 1 : net.order.begin();
  net.order.insert(at, li);
  *added = b;
  return Status::Ok();
}

// The fp32 planar form of a shape of halves.
Shape planar_fp32(Shape s) {
  s.c = s.dims >= 3 ? s.c * s.elempack : s.c;
  s.elempack = 1;
  s.f16 = false;
  return s;
}

// Adds a HalfConvert from blob `from` (halves) into the existing blob `into` (fp32,
// planar), right after from's producer.
Status add_convert_into(NetImpl& net, int from, int into) {
  NetLayer L;
  L.name = net.blob_names[into] + "@fp32";
  L.type = "HalfConvert";
  L.impl = create_half_convert_layer(false, 1);
  L.bottoms = {from};
  L.tops = {into};
  std::vector<Shape> out(1);
  Status s = L.impl->prepare({net.blob_shapes[from]}, out, PrepareContext{});
  if (!s.ok()) return s.with_context("converting '" + net.blob_names[from] + "'");
  const int li = static_cast<int>(net.layers.size());
  net.producer[into] = li;
  net.layers.push_back(std::move(L));
  net.consumers[from].push_back(li);
  auto at = std::find(net.order.begin(), net.order.end(), net.producer[from]) + 1;
  net.order.insert(at, li);
  return Status::Ok();
}

}  // namespace

Status choose_half_maps(NetImpl& net) {
  if (!kernels::active_has(kernels::Feature::kFp16Arith)) return Status::Ok();
  const size_t nlayers = net.layers.size(), nblobs = net.blob_names.size();
  // 1. The layers that take halves in the layouts their maps would have.
  std::vector<char> native(nlayers, 0);
  bool any = false;
  for (size_t li = 0; li < nlayers; ++li) {
    NetLayer& L = net.layers[li];
    if (L.precision != Precision::kFp16 || L.tops.size() != 1 || L.bottoms.empty()) continue;
    const int in_pack = half_pack(net.blob_shapes[L.bottoms[0]]);
    bool same = true;
    for (int b : L.bottoms) same = same && half_pack(net.blob_shapes[b]) == in_pack;
    const int out_pack = half_pack(net.blob_shapes[L.tops[0]]);
    if (!same) continue;
    if (!L.impl->set_half(in_pack, out_pack, true)) continue;
    L.impl->set_half(in_pack, out_pack, false);
    L.half_io = true;
    native[li] = 1;
    any = true;
  }
  if (!any) return Status::Ok();
  // 2. Maps their writers store as halves.
  std::vector<char> half(nblobs, 0);
  for (size_t li = 0; li < nlayers; ++li) {
    if (!native[li]) continue;
    for (int t : net.layers[li].tops) {
      half[t] = 1;
      Shape& s = net.blob_shapes[t];
      const int pack = half_pack(s);
      s.c = s.c * s.elempack / pack;
      s.elempack = pack;
      s.f16 = true;
    }
  }
  // Network outputs stay fp32 maps, handed out as they are: a native layer writing one
  // writes halves into a blob of its own, widened into the output right after it.
  for (size_t li = 0; li < nlayers; ++li) {
    NetLayer& L = net.layers[li];
    const int t = L.tops[0];
    if (!native[li] || !net.is_output[t]) continue;
    const int own = add_blob(net, net.blob_names[t] + "@fp16", net.blob_shapes[t], static_cast<int>(li));
    L.tops[0] = own;
    half.push_back(1);
    half[t] = 0;
    net.blob_shapes[t] = planar_fp32(net.blob_shapes[own]);
    // Readers that compute in fp16 take the halves.
    std::vector<int> readers = net.consumers[t];
    for (int ci : readers) {
      if (!native[ci]) continue;
      NetLayer& C = net.layers[ci];
      std::replace(C.bottoms.begin(), C.bottoms.end(), t, own);
      net.consumers[own].push_back(ci);
      auto& cs = net.consumers[t];
      cs.erase(std::remove(cs.begin(), cs.end(), ci), cs.end());
    }
    Status s = add_convert_into(net, own, t);
    if (!s.ok()) return s;
  }
  // 3. Copies where the two sides differ: one per map and direction, shared by its
  // readers on that side.
  for (size_t b = 0; b < nblobs; ++b) {
    std::vector<int> readers = net.consumers[b];
    int copy = -1;
    for (int li : readers) {
      if (li >= static_cast<int>(nlayers) || native[li] == half[b]) continue;
      if (copy < 0) {
        Status s = add_convert(net, static_cast<int>(b), !half[b], half[b] ? 1 : half_pack(net.blob_shapes[b]), &copy);
        if (!s.ok()) return s;
      }
      NetLayer& L = net.layers[li];
      std::replace(L.bottoms.begin(), L.bottoms.end(), static_cast<int>(b), copy);
      auto& cs = net.consumers[b];
      cs.erase(std::remove(cs.begin(), cs.end(), li), cs.end());
      net.consumers[copy].push_back(li);
    }
  }
  net.step_of_layer.assign(net.layers.size(), 0);
  for (size_t s = 0; s < net.order.size(); ++s) net.step_of_layer[net.order[s]] = static_cast<int>(s);
  // Re-targeted kernels ask for other scratch.
  for (const NetLayer& l : net.layers) {
    net.max_workspace_bytes = std::max(net.max_workspace_bytes, l.impl->workspace_bytes);
    net.max_workspace_per_thread_bytes = std::max(net.max_workspace_per_thread_bytes, l.impl->workspace_per_thread_bytes);
  }
  return Status::Ok();
}

}  // namespace kestrel
