// int8 maps (issue 27, Option::int8_maps): an int8 layer's output read only by int8
// layers is stored as bytes, requantized by the writer for the readers' input scale (the
// blob's kestrel-quantize scale, one per blob, so every reader has the same) in one fma
// (kernels/i8_reference.h), in place of the fp32 map each reader quantized again as it
// packed it: a quarter of the bytes, and no dequantize-then-quantize pass.
//
// Network inputs and outputs stay fp32, as does any map a layer without int8 maps reads
// or writes (windowed pooling, and the exact fp32 routes of conv_int8.h; an int8 output
// also needs an activation that commutes with the scale). Residual adds (BinaryOp Add,
// Eltwise Sum: two maps of one shape), global pooling and channel Concat read and write
// them, so a network's maps stay int8 from one convolution to the next, through its
// blocks, joins and classifier pooling; such a layer with no int8 map around it computes
// fp32 (choose_int8_maps). Maps are planar: the kernels that take int8 maps read and
// write planar operands.
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

namespace {

Status choose_maps(NetImpl& net, std::vector<char>& i8) {
  const size_t nblobs = net.blob_names.size(), nlayers = net.layers.size();
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

}  // namespace

Status choose_int8_maps(NetImpl& net, bool maps) {
  std::vector<char> i8(net.blob_names.size(), 0);
  if (maps) {
    Status s = choose_maps(net, i8);
    if (!s.ok()) return s;
  }
  // A layer that is int8 only on int8 maps, with none, computes fp32.
  for (NetLayer& L : net.layers) {
    if (L.precision != Precision::kInt8 || !L.impl->int8_needs_maps()) continue;
    bool some = false;
    for (int b : L.bottoms) some = some || i8[b];
    for (int t : L.tops) some = some || i8[t];
    if (!some) L.precision = Precision::kFp32;
  }
  return Status::Ok();
}

}  // namespace kestrel
