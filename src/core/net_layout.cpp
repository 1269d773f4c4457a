// Blocked feature-map layouts (Option::blocked_layout): a map between fast kernels that
// take channel-blocked operands (conv_kernels.h: W channels' pixel vectors contiguous,
// ONNX Runtime's NCHWc) is kept blocked, so that the channel-vector depthwise kernel
// reads and writes its rows in place and the channel-tile 1x1 kernel broadcasts from
// its input in place (no copy into pixel groups) and stores its accumulators as they
// are. The kernels compute the same fma chains either way, so results are bit-identical
// to planar maps. Blobs joined by an elementwise layer over maps of one shape (a
// residual Add, Layer::elementwise_any_layout) take one layout together: such a group
// qualifies when re-targetable layers (Layer::set_packs: Convolutions, Pooling) and
// those layers write it and only they read it, the re-targetable ones with kernels
// that take the layout, or layers that read only its shape (PriorBox,
// Layer::reads_shape_only); network inputs and outputs stay planar. A blocked blob is
// a Mat of elempack W (its bytes no more than planar), and extract() of one returns a
// planar copy. One decision code for every ISA: a layout no kernel of the active ISA
// takes fails its dry run.
#include "core/net_layout.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include "core/weight_release.h"

namespace kestrel {
namespace {

int find(std::vector<int>& parent, int b) {
  while (parent[b] != b) b = parent[b] = parent[parent[b]];
  return b;
}

// A layer of one input and one output that the pass may re-target: one on a fast
// kernel, which says so when asked for the layouts it has (Layer::set_packs).
bool retargetable(const NetImpl& net, const NetLayer& l) {
  return l.bottoms.size() == 1 && l.tops.size() == 1 &&
         l.impl->set_packs(net.blob_shapes[l.bottoms[0]].elempack, net.blob_shapes[l.tops[0]].elempack, false, true);
}

// True if layer l reads blob b's shape only, wherever it takes b.
bool reads_shape_only(const NetLayer& l, int b) {
  bool any = false;
  for (size_t i = 0; i < l.bottoms.size(); ++i) {
    if (l.bottoms[i] != b) continue;
    if (!l.impl->reads_shape_only(i)) return false;
    any = true;
  }
  return any;
}

// The re-targetable layers writing or reading the blobs (each once), or false where
// another layer writes or reads the data of one, or one is an input, an output or not a
// planar 3-D map.
bool set_layers(const NetImpl& net, const std::vector<int>& blobs, std::vector<int>* layers) {
  auto add = [&](int li) {
    if (std::find(layers->begin(), layers->end(), li) == layers->end()) layers->push_back(li);
  };
  for (int b : blobs) {
    if (net.is_input[b] || net.is_output[b] || net.consumers[b].empty()) return false;
    if (net.blob_shapes[b].dims != 3 || net.blob_shapes[b].elempack != 1 || net.blob_shapes[b].f16 ||
        net.blob_shapes[b].i8) {
      return false;
    }
    const NetLayer& p = net.layers[net.producer[b]];
    if (retargetable(net, p)) {
      add(net.producer[b]);
    } else if (!p.impl->elementwise_any_layout()) {
      return false;
    }
    for (int ci : net.consumers[b]) {
      const NetLayer& c = net.layers[ci];
      if (retargetable(net, c)) {
        add(ci);
      } else if (!reads_shape_only(c, b) && !c.impl->elementwise_any_layout()) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

void choose_blocked_layouts(NetImpl& net) {
  const int nblobs = static_cast<int>(net.blob_names.size());
  std::vector<int> parent(nblobs);
  std::iota(parent.begin(), parent.end(), 0);
  for (const NetLayer& l : net.layers) {
    if (!l.impl->elementwise_any_layout() || l.tops.size() != 1) continue;
    for (int b : l.bottoms) parent[find(parent, b)] = find(parent, l.tops[0]);
  }
  std::vector<std::vector<int>> groups(nblobs);
  for (int b = 0; b < nblobs; ++b) groups[find(parent, b)].push_back(b);
  // A blob's layout as decided so far is its shape's elempack (1 until blocked).
  auto pack = [&](int b) { return net.blob_shapes[b].elempack; };
  // Blocks `blobs` with w lanes where every re-targetable layer writing or reading them
  // takes the layouts that leaves it (its other operand as decided so far). The lane
  // counts are those of every ISA (no kernel of another ISA's lanes is ever selected, so
  // a count that no active kernel takes fails its dry run). With 16 lanes (AVX-512) a
  // layer whose kernel does not take them may take another kernel that does
  // (convolution.cpp): MobileNet v1 then keeps its maps blocked from 56x56 down, 3.8%
  // faster at 1 thread and 4.4% at 2 (AMD EPYC, bench/ab). With 8 (AVX2) the kernels stay
  // as chosen: there MobileNet v2's 112x112 and 56x56 depthwise layers, re-chosen to
  // write blocked maps, lost their fusion with the 1x1 before them and the 1x1 channel
  // tiles after them ran slower than the pixel tiles, 12.7% slower. With 4 (NEON, ncnn's
  // pack4) the blocked kernels are kernels of their own (the planar ones keep their
  // layouts), so they are always re-chosen; a Pooling layer's blocked kernels are always
  // kernels of their own, re-chosen whatever the lanes.
  struct Lanes {
    int w;
    bool rechoose;
  };
  constexpr Lanes kLanes[] = {{16, true}, {8, false}, {4, true}};
  auto try_block = [&](const std::vector<int>& blobs) {
    std::vector<int> layers;
    if (!set_layers(net, blobs, &layers)) return false;
    auto retarget = [&](const Lanes& lanes, bool dry_run) {
      auto packed = [&](int b) { return std::count(blobs.begin(), blobs.end(), b) ? lanes.w : pack(b); };
      bool all = true;
      for (int li : layers) {
        const NetLayer& l = net.layers[li];
        all = all && l.impl->set_packs(packed(l.bottoms[0]), packed(l.tops[0]), lanes.rechoose, dry_run);
      }
      return all;
    };
    for (const Lanes& lanes : kLanes) {
      const int w = lanes.w;
      bool all = true;
      for (int b : blobs) all = all && net.blob_shapes[b].c % w == 0;
      if (!all || !retarget(lanes, true)) continue;
      retarget(lanes, false);
      for (int li : layers) release_packed_weights(net, li);
      for (int b : blobs) {
        Shape& shape = net.blob_shapes[b];
        shape.c /= w;
        shape.elempack = w;
      }
      return true;
    }
    return false;
  };
  // Groups in the order their first re-targetable writer runs, so that a layer's input
  // is mostly decided before its output; then again while that blocks more of them (a
  // residual group waits for the projections writing into it to read blocked maps, and
  // the expansions reading it wait for it). A group that its readers take blocked only
  // if they also write blocked maps is tried together with the groups those readers
  // write, and so on up to kMaxChain groups: MobileNet v1's 112x112 layers (stem,
  // depthwise, 1x1, depthwise stride 2) take blocks all four or none, their kernels
  // beating the planar ones only where they read and write blocks; ResNet's stem output
  // goes blocked only with the max pooling's output, the first residual group (NEON's
  // windowed pooling takes blocks in and out).
  constexpr size_t kMaxChain = 4;
  // Adds the groups that the re-targetable layers reading group r write, unless blocked,
  // added already or never to be blocked (a network output, a map a Flatten reads, one
  // whose channels no lane count divides: an SSD feature map's 1x1 heads write such
  // maps, and would fill the chain), to roots, and their blobs to blobs.
  auto ever_blockable = [&](int r) {
    std::vector<int> layers;
    for (int b : groups[r]) {
      if (net.blob_shapes[b].c % kLanes[std::size(kLanes) - 1].w != 0) return false;
    }
    return set_layers(net, groups[r], &layers);
  };
  auto add_written = [&](int r, std::vector<int>* roots, std::vector<int>* blobs) {
    for (int b : groups[r]) {
      for (int ci : net.consumers[b]) {
        const NetLayer& c = net.layers[ci];
        if (!retargetable(net, c)) continue;
        const int next = find(parent, c.tops[0]);
        if (pack(next) != 1 || std::count(roots->begin(), roots->end(), next) || !ever_blockable(next)) continue;
        roots->push_back(next);
        blobs->insert(blobs->end(), groups[next].begin(), groups[next].end());
      }
    }
  };
  for (bool more = true; more;) {
    more = false;
    for (int li : net.order) {
      const NetLayer& first = net.layers[li];
      if (!retargetable(net, first)) continue;
      const int root = find(parent, first.tops[0]);
      if (pack(root) != 1) continue;
      std::vector<int> roots = {root}, blobs = groups[root];
      bool done = try_block(blobs);
      for (size_t last = 0; !done && roots.size() < kMaxChain;) {
        const size_t end = roots.size();
        for (; last < end; ++last) add_written(roots[last], &roots, &blobs);
        if (roots.size() == end) break;
        done = try_block(blobs);
      }
      more = more || done;
    }
  }
  // Re-targeted kernels may ask for other scratch (a blocked input needs no pixel-group
  // copy): the Net's maxima again over every layer.
  net.max_workspace_bytes = 0;
  net.max_workspace_per_thread_bytes = 0;
  for (const NetLayer& l : net.layers) {
    net.max_workspace_bytes = std::max(net.max_workspace_bytes, l.impl->workspace_bytes);
    net.max_workspace_per_thread_bytes = std::max(net.max_workspace_per_thread_bytes, l.impl->workspace_per_thread_bytes);
  }
}

}  // namespace kestrel
