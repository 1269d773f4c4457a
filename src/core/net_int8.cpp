// int8 maps (issue 27, Option::int8_maps): an int8 layer's output read only by int8
// layers is stored as bytes, requantized by the writer for the readers' input scale (the
// blob's kestrel-quantize scale, one per blob, so every reader has the same) in one fma
// (kernels/i8_reference.h), in place of the fp32 map each reader quantized again as it
// packed it: a quarter of the bytes, and no dequantize-then-quantize pass.
//
// Network inputs and outputs stay fp32, as does any map a layer without int8 maps reads
// or writes (pooling, Eltwise and Concat have no int8 path yet; the exact fp32 routes of
// conv_int8.h have none either, and an int8 output needs an activation that commutes
// with the scale). A residual add (BinaryOp, two maps of one shape) reads and writes
// them, so a block's maps stay int8 from one convolution to the next. Maps are planar:
// the kernels that take int8 maps read and write planar operands.
#include "core/net_int8.h"

#include <algorithm>
#include <vector>

namespace kestrel {
namespace {

// True if layer li computes in int8 and reads blob b or writes it as its one output.
bool int8_end(const NetImpl& net, int li, int b) {
  const NetLayer& L = net.layers[li];
  if (L.precision != Precision::kInt8 || L.bottoms.empty() || L.tops.size() != 1) return false;
  return L.tops[0] == b || std::find(L.bottoms.begin(), L.bottoms.end(), b) != L.bottoms.end();
}

}  // namespace

Status choose_int8_maps(NetImpl& net) {
  const size_t nblobs = net.blob_names.size(), nlayers = net.layers.size();
  std::vector<char> i8(nblobs, 0);
  bool any = false;
  for (size_t b = 0; b < nblobs; ++b) {
    const int p = net.producer[b];
    if (net.is_input[b] || net.is_output[b] || p < 0 || net.blob_int8_scale[b] <= 0.f) continue;
    if (net.blob_shapes[b].dims != 3 || net.consumers[b].empty() || !int8_end(net, p, static_cast<int>(b))) continue;
    bool ok = true;
    for (int c : net.consumers[b]) ok = ok && int8_end(net, c, static_cast<int>(b));
    i8[b] = ok;
    any = any || ok;
  }
  if (!any) return Status::Ok();
  // Each layer at an int8 map must take its maps as they would be; a refusal leaves its
  // maps fp32, which may change its neighbours' maps: until none refuses.
  auto in_scales = [&](const NetLayer& L) {
    std::vector<float> s(L.bottoms.size(), 0.f);
    for (size_t i = 0; i < s.size(); ++i) s[i] = i8[L.bottoms[i]] ? net.blob_int8_scale[L.bottoms[i]] : 0.f;
    return s;
  };
  auto out_scale = [&](const NetLayer& L) { return i8[L.tops[0]] ? net.blob_int8_scale[L.tops[0]] : 0.f; };
  auto at_maps = [&](const NetLayer& L) {
    if (L.precision != Precision::kInt8 || L.bottoms.empty() || L.tops.size() != 1) return false;
    bool some = i8[L.tops[0]] != 0;
    for (int b : L.bottoms) some = some || i8[b];
    return some;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t li = 0; li < nlayers; ++li) {
      NetLayer& L = net.layers[li];
      if (!at_maps(L) || L.impl->set_int8_maps(in_scales(L), out_scale(L), true)) continue;
      for (int b : L.bottoms) i8[b] = 0;
      i8[L.tops[0]] = 0;
      changed = true;
    }
  }
  for (size_t li = 0; li < nlayers; ++li) {
    NetLayer& L = net.layers[li];
    if (at_maps(L)) L.impl->set_int8_maps(in_scales(L), out_scale(L), false);
  }
  for (size_t b = 0; b < nblobs; ++b) {
    if (i8[b]) net.blob_shapes[b].i8 = true;
  }
  return Status::Ok();
}

}  // namespace kestrel
