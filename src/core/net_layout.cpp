// Blocked feature-map layouts (Option::blocked_layout): a map between fast kernels that
// take channel-blocked operands (conv_kernels.h: W channels' pixel vectors contiguous,
// ONNX Runtime's NCHWc) is kept blocked, so that the channel-vector depthwise kernel
// reads and writes its rows without transposing them and the channel-tile 1x1 kernel
// broadcasts from its input in place (no copy into pixel groups) and stores its
// accumulators as they are. The kernels compute the same fma chains either way, so
// results are bit-identical to planar maps. A blob qualifies when a Convolution writes
// it and only Convolutions read it, all with kernels of the same lanes that take the
// layouts; network inputs and outputs stay planar. A blocked blob is a Mat of elempack
// W (its bytes no more than planar), and extract() of one returns a planar copy.
#include "core/net_layout.h"

#include <algorithm>

#include "layers/conv_fusion.h"

namespace kestrel {

void choose_blocked_layouts(NetImpl& net) {
  for (int li : net.order) {
    NetLayer& producer = net.layers[li];
    if (producer.type != "Convolution" || producer.tops.size() != 1) continue;
    const int b = producer.tops[0];
    if (net.is_input[b] || net.is_output[b] || net.consumers[b].empty()) continue;
    if (net.blob_shapes[b].dims != 3 || net.blob_shapes[b].elempack != 1) continue;
    // The producer must write it blocked and every reader take it blocked, each with
    // its other operand as decided so far. With 16 lanes (AVX-512) a layer whose kernel
    // does not take the layout may take another kernel that does (convolution.cpp):
    // MobileNet v1 then keeps its maps blocked from 56x56 down, 3.8% faster at 1 thread
    // and 4.4% at 2 (AMD EPYC, bench/ab). With 8 (AVX2) the kernels stay as chosen:
    // there MobileNet v2's 112x112 and 56x56 depthwise layers, re-chosen to write
    // blocked maps, lost their fusion with the 1x1 before them and the 1x1 channel
    // tiles after them ran slower than the pixel tiles, 12.7% slower in all.
    const int own = convolution_blocked_lanes(*producer.impl);
    int lanes = 0;
    for (int w : {16, 8}) {
      if (own != 0 && w != own) continue;
      const bool rechoose = w == 16;
      bool all = set_convolution_pack(*producer.impl, /*output=*/true, w, rechoose, /*dry_run=*/true);
      for (int ci : net.consumers[b]) all = all && set_convolution_pack(*net.layers[ci].impl, false, w, rechoose, true);
      if (all) {
        lanes = w;
        break;
      }
    }
    if (lanes == 0) continue;
    set_convolution_pack(*producer.impl, true, lanes, lanes == 16, false);
    for (int ci : net.consumers[b]) set_convolution_pack(*net.layers[ci].impl, false, lanes, lanes == 16, false);
    Shape& shape = net.blob_shapes[b];
    shape.c /= lanes;
    shape.elempack = lanes;
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
