#include "core/net_precision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/half.h"
#include "kernels/half_kernels.h"

namespace kestrel {
namespace {

// Layer types whose values stay halves through them: fp16 arithmetic or fp16 storage
// means the same for them as for any layer (weights and outputs as halves). The others
// keep fp32 outputs: normalizations and exponentials whose fp32 results feed decoding
// (Softmax, DetectionOutput), and geometry (PriorBox).
constexpr const char* kFp16Types[] = {
    "Convolution", "Deconvolution", "InnerProduct", "Pooling", "Eltwise",  "BinaryOp", "Activation", "PReLU",
    "Scale",       "BatchNorm",     "Concat",       "Split",   "Slice",    "Crop",     "Padding",    "Interp",
    "Reshape",     "Flatten",       "Permute",      "ShuffleChannel", "Squeeze", "Unsqueeze", "Dropout"};

// Layer types that only move values (or drop them): their outputs are halves wherever
// their inputs are, so rounding them again changes nothing.
constexpr const char* kMovesValues[] = {"Reshape", "Flatten", "Permute", "Concat",  "Split",          "Slice",
                                        "Crop",    "Squeeze", "Unsqueeze", "Dropout", "ShuffleChannel"};

bool moves_values(const std::string& type) {
  for (const char* t : kMovesValues) {
    if (type == t) return true;
  }
  return false;
}

bool has_fp16_path(const std::string& type) {
  for (const char* t : kFp16Types) {
    if (type == t) return true;
  }
  return false;
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kInt8: return "int8";
    case Precision::kFp32: break;
  }
  return "fp32";
}

Status check_precision_overrides(const NetImpl& net, const Option& opt) {
  for (const auto& [name, p] : opt.layer_precision) {
    bool found = false;
    for (const NetLayer& L : net.layers) found = found || L.name == name;
    if (!found) {
      return Status(ErrorCode::kInvalidArgument, "Option::layer_precision: the model has no layer '" + name +
                                                     "' (asked for " + precision_name(p) + ")");
    }
  }
  return Status::Ok();
}

namespace {

// Layers that add up products of weights: where a network input stops being raw.
bool weighs(const std::string& type) {
  return type == "Convolution" || type == "Deconvolution" || type == "InnerProduct";
}

// True if blob b holds a network input's values, directly or through layers that do not
// weigh (a normalisation, a padding, a reshape).
bool raw_input(const NetImpl& net, int b, int depth = 0) {
  if (net.is_input[b]) return true;
  const int p = net.producer[b];
  if (p < 0 || depth > 64 || weighs(net.layers[p].type)) return false;
  for (int x : net.layers[p].bottoms) {
    if (raw_input(net, x, depth + 1)) return true;
  }
  return false;
}

// p where a layer of this type has a path at p, else fp32. bf16: the convolutions (the
// layer picks which of them, by geometry: kernels::bf16_pointwise); int8: the
// convolutions and inner products (those whose input has a scale:
// PrepareContext::int8_in_scale), and the layers that are int8 where their maps are
// (set_int8_maps): residual adds (BinaryOp, Eltwise), global pooling, channel Concat.
Precision available(Precision p, const std::string& type) {
  if (p == Precision::kFp16 && has_fp16_path(type)) return p;
  if ((p == Precision::kBf16 || p == Precision::kInt8) && type == "Convolution") return p;
  if (p == Precision::kInt8 && (type == "InnerProduct" || type == "BinaryOp" || type == "Eltwise" ||
                                type == "Pooling" || type == "Concat")) {
    return p;
  }
  return Precision::kFp32;
}

bool kept_fp32(const NetImpl& net, const std::string& name) {
  const fb::Quantization* q = net.model ? net.model->quantization() : nullptr;
  if (!q || !q->keep_fp32()) return false;
  for (const flatbuffers::String* s : *q->keep_fp32()) {
    if (s && s->str() == name) return true;
  }
  return false;
}

}  // namespace

bool fp32_stem(const NetImpl& net, int li, const Option& opt) {
  const NetLayer& L = net.layers[li];
  if (opt.precision != Precision::kFp16 || !weighs(L.type) || opt.layer_precision.count(L.name)) return false;
  for (int b : L.bottoms) {
    if (raw_input(net, b)) return true;
  }
  return false;
}

Precision resolve_precision(const NetImpl& net, int li, const Option& opt) {
  const NetLayer& L = net.layers[li];
  auto it = opt.layer_precision.find(L.name);
  if (it != opt.layer_precision.end()) return available(it->second, L.type);
  // A layer that weighs the image itself (the stem) accumulates in fp32 unless named:
  // its inputs are a camera's values, often 0-255, where one fp16 ulp is 0.125 and an
  // fp16 accumulator rounds every tap; and it is a small part of the work (MobileNet v1:
  // 1.9% of the multiply-adds). In fp16 it alone added a CenterNet box above the
  // threshold (bench/precision/RESULTS.md). It still reads and weighs halves (fp32_stem).
  if (fp32_stem(net, li, opt)) return Precision::kFp32;
  // The layers the model's calibration kept in fp32 (kestrel-quantize --keep-fp32).
  if (opt.precision == Precision::kInt8 && kept_fp32(net, L.name)) return Precision::kFp32;
  return available(opt.precision, L.type);
}

Status round_weights_to_half(NetImpl& net, int li, std::vector<WeightView>* weights) {
  const fb::Layer* fl = net.model->layers()->Get(static_cast<flatbuffers::uoffset_t>(li));
  for (size_t pos = 0; pos < weights->size(); ++pos) {
    const uint32_t w = fl->weights()->Get(static_cast<flatbuffers::uoffset_t>(pos));
    WeightView& v = (*weights)[pos];
    if (!v.data && v.i8_data) {
      // An I8 weight of a layer that widens its own: its floats, then rounded below.
      net.widened_weights.emplace_back(v.count);
      widen_weight(v, net.widened_weights.back().data());
      v.data = net.widened_weights.back().data();
      v.i8_data = nullptr;
      v.i8_scales = nullptr;
    }
    for (size_t k = 0; k < v.count; ++k) {
      const float x = v.data ? v.data[k] : half_to_float(v.half_data[k]);
      if (std::isfinite(x) && std::fabs(half_to_float(float_to_half(x))) <= 65504.f) continue;
      return Status(ErrorCode::kInvalidArgument,
                    "precision fp16: weight " + std::to_string(pos) + " holds " + std::to_string(x) + " at index " +
                        std::to_string(k) +
                        (std::isfinite(x) ? ", beyond fp16's range of +-65504" : ", which fp16 weights refuse") +
                        "; run this layer in fp32 (Option::layer_precision)");
    }
    if (net.model_weights[w].f16) continue;  // stored as F16: halves already
    net.rounded_weights.emplace_back(v.count);
    std::vector<float>& r = net.rounded_weights.back();
    for (size_t k = 0; k < v.count; ++k) r[k] = half_to_float(float_to_half(v.data[k]));
    net.rounded_users.emplace_back(li, static_cast<int>(pos));
    v.data = r.data();
    v.halves = true;
  }
  return Status::Ok();
}

void mark_half_inputs(NetImpl& net) {
  net.input_as_half.assign(net.blob_names.size(), 0);
  for (int b : net.inputs) {
    for (int c : net.consumers[b]) {
      const NetLayer& L = net.layers[c];
      net.input_as_half[b] |= L.precision == Precision::kFp16 || L.half_storage ? 1 : 0;
    }
  }
  // In execution order, which blobs hold halves only: an input kept as a rounded copy,
  // the outputs of fp16 layers and of conversions from halves. An fp16 layer that only
  // moves such values needs no rounding after it.
  std::vector<char> halves(net.blob_names.size(), 0);
  for (int b : net.inputs) halves[b] = net.input_as_half[b];
  for (int li : net.order) {
    NetLayer& L = net.layers[li];
    bool all = moves_values(L.type);
    for (int b : L.bottoms) all = all && halves[b];
    // An fp32 layer whose every reader reads halves (the stem, for the fp16 layers after
    // it) rounds its outputs for them, as the HalfConvert in front of fp16 kernels does
    // (core/net_half.cpp), so that the reference set reads what those kernels read.
    bool feeds_fp16 = L.precision == Precision::kFp32 && L.type != "HalfConvert";
    for (int t : L.tops) {
      feeds_fp16 = feeds_fp16 && !net.is_output[t] && !net.consumers[t].empty();
      for (int c : net.consumers[t]) {
        feeds_fp16 = feeds_fp16 && (net.layers[c].precision == Precision::kFp16 || net.layers[c].half_storage);
      }
    }
    L.round_outputs = (L.precision == Precision::kFp16 && !L.half_io && !all) || feeds_fp16;
    const bool out_halves = L.precision == Precision::kFp16 || L.type == "HalfConvert" || feeds_fp16;
    for (int t : L.tops) halves[t] = out_halves;
  }
}

void round_to_half(const Mat& src, Mat& dst, int num_threads) {
  // Channel by channel: the padding between channels is left alone. On one thread below
  // kParallelFloats: a fork costs more than rounding a small map. One thread for all of
  // them cost MobileNet v1 4-7% at 2 threads in fp16 storage (bench/precision/RESULTS.md).
  constexpr size_t kParallelFloats = size_t(1) << 14;
  const size_t n = static_cast<size_t>(src.w) * src.h * src.d * src.elempack;
  const int channels = src.dims >= 3 ? src.c : 1;
  const int threads = n * channels >= kParallelFloats ? std::max(1, num_threads) : 1;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int q = 0; q < channels; ++q) {
    const float* s = src.channel(q);
    float* d = dst.channel(q);
    kernels::active_half_kernel().round(s, d, n);
  }
}

}  // namespace kestrel
