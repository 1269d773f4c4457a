// kestrel-quantize's calibration step: runs a model in fp32 over calibration inputs and
// writes each int8-layer blob's activation scale into a copy of the model
// (Blob.int8_scale, Model.quantization; src/format/kestrel.fbs).
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kestrel/mat.h"
#include "kestrel/status.h"
#include "quantize/calibration.h"

namespace kestrel::quantize {

struct CalibrationOptions {
  Method method = Method::kKl;
  double percentile = 99.99;            // kPercentile
  std::vector<std::string> keep_fp32;   // layer names left in fp32 (recorded in the model)
  int threads = 1;
};

struct BlobReport {
  std::string blob;
  float max_abs = 0.f;    // over every calibration input
  float threshold = 0.f;  // the method's clipping threshold
  float scale = 0.f;      // 127 / threshold
};

// Calibration input i (0 <= i < count) as input name -> fp32 tensor in the net's
// input shape. An error names the input (a calibration image that does not load).
using InputSource = std::function<Status(size_t i, std::map<std::string, Mat>* inputs)>;

// The layer types that run in int8 (issue 27): their inputs and outputs get scales.
bool int8_layer_type(const std::string& type);

// Two passes over the `count` inputs (ranges, then histograms), one scale per blob that
// an int8 layer not in keep_fp32 reads or writes, and the model rewritten with them.
// Errors, and no output: the model does not load, is already quantized, or names in
// keep_fp32 a layer it lacks; an input fails; a blob holds NaN or an infinity, or is 0
// on every input (no scale exists: keep the layers that read it in fp32).
Status calibrate(const std::string& model_bytes, size_t count, const InputSource& source,
                 const CalibrationOptions& options, std::string* out_bytes, std::vector<BlobReport>* report);

}  // namespace kestrel::quantize
