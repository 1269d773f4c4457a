// kestrel-quantize --bias-correction: moves each int8 layer's bias by the mean error
// int8 leaves in its output channels, measured on the calibration inputs. Rounding
// noise averages out downstream, but a mean shift does not: KL clips the large values of
// a map (always downwards), a nearly dead channel's few int8 levels round one way, and
// the next layer adds such shifts up over its taps. Nagel et al. ("Data-Free
// Quantization Through Weight Equalization and Bias Correction", ICCV 2019) correct the
// bias for it; this is their empirical form, layer after layer in network order, so
// each layer's correction sees the inputs the corrected layers before it give.
#pragma once
#include <string>
#include <vector>

#include "kestrel/status.h"
#include "quantize/calibrate_model.h"

namespace kestrel::quantize {

// A channel's correction is measured where its fp32 output is in the activation's linear
// part (ReLU: above 0; Clip: inside the bounds) and inside the output's int8 range, where
// a bias change moves the output one for one; a channel with fewer such values than this
// over all inputs keeps its bias.
constexpr size_t kMinCorrectionSamples = 16;

struct BiasCorrection {
  std::string layer;
  int channels = 0;         // channels corrected
  float max_shift = 0.f;    // the largest |correction|
  float rms_shift = 0.f;    // over the corrected channels
  float rms_output = 0.f;   // the fp32 output's RMS, for scale
  float step = 0.f;         // the output's int8 step (1 / its scale)
  double sqnr_db = 0.0;     // the whole network's output SQNR with this correction
  bool kept = false;        // the correction stayed (the SQNR did not fall)
  bool skipped = false;     // an activation with no linear part to measure through
};

// `quantized` is calibrate()'s output with fp32 weights. For each layer that runs int8
// (int8_layers(), in model order; Convolution or InnerProduct), its outputs at
// Precision::kInt8 with the corrections so far are compared with fp32's on every input,
// and the mean difference per output channel is taken off its bias (a layer without a
// bias gets one). Layers whose activation has no linear part (Sigmoid, HardSwish, ...)
// are left as they are and reported skipped, and so are heads (layers whose output
// reaches a network output through no other Convolution or InnerProduct). A correction
// is kept only where the whole network's output SQNR over the inputs does not fall. The fp32 network changes only in those
// biases, so the model records the step (Quantization.bias_corrected). Errors, and no
// output: the model does not load or is not calibrated, an input fails.
// `guarded` false keeps every correction (tests; the guard's cost in accuracy).
Status correct_biases(const std::string& quantized, size_t count, const InputSource& source, int threads,
                      std::string* out_bytes, std::vector<BiasCorrection>* report, bool guarded = true);

}  // namespace kestrel::quantize
