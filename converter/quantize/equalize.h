// kestrel-quantize --equalize: evens out the channel ranges of the maps that depthwise
// convolutions read, before calibration. A per-tensor int8 scale serves a map whose
// channels span 0.09 to 6 badly: MoveNet's stem, ReLU6, gives some of its channels a few
// levels only, and the depthwise layer that reads it cost the whole network's output
// 9.6 dB alone (bench/precision/RESULTS_INT8.md). The producer's output channel i is
// multiplied by s_i (its weights and bias), the depthwise layer's channel i divided by
// s_i (its weights), so the network computes the same function; both layers quantize
// their weights per output channel, which the scaling leaves as exact as before. This
// is the data-driven form of cross-layer equalization (Nagel et al., "Data-Free
// Quantization Through Weight Equalization and Bias Correction", ICCV 2019) where the
// second layer is depthwise.
#pragma once
#include <string>
#include <vector>

#include "kestrel/status.h"
#include "quantize/calibrate_model.h"

namespace kestrel::quantize {

// Scaled maps grow to this fraction of a Clip's upper bound at most, and never past it:
// an input brighter than the calibration set's then still meets the bound where the
// original network met it, up to 1 / kClipHeadroom of the map's calibrated range.
constexpr float kClipHeadroom = 0.75f;
// The most a channel is scaled up by (a channel that is near 0 on every calibration
// input is mostly rounding noise).
constexpr float kMaxChannelScale = 256.f;

struct EqualizedPair {
  std::string producer;  // the layer whose output channels were scaled up
  std::string consumer;  // the depthwise layer that reads them, scaled down
  int channels = 0;      // channels scaled (s_i > 1)
  float max_scale = 1.f; // the largest s_i
  float spread_before = 0.f, spread_after = 0.f;  // max over min of the channels' max |x|
};

// The pairs it applies to: a Convolution (any group; activation None, ReLU, LeakyReLU, or
// Clip from 0) whose single output map is read by one depthwise Convolution only
// (group = channels, one filter each), not a network output; fp32 or fp16 weights (the
// two layers' weights are written back as fp32). s_i = the map's max |x| over channel
// i's, both over the `count` calibration inputs, at most kMaxChannelScale, and within a
// Clip's bound times kClipHeadroom; never below 1. Errors, and no output: the model does
// not load or is already calibrated, an input fails, a map holds NaN or an infinity.
// `out_bytes` is the model unchanged where no pair exists.
Status equalize_depthwise_inputs(const std::string& model_bytes, size_t count, const InputSource& source, int threads,
                                 std::string* out_bytes, std::vector<EqualizedPair>* pairs);

}  // namespace kestrel::quantize
