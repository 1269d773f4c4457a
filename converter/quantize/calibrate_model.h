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
#include "kestrel/net.h"
#include "kestrel/option.h"
#include "kestrel/status.h"
#include "quantize/calibration.h"

namespace kestrel::fb {
struct Model;
struct ModelT;
struct WeightT;
}

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
  Method method = Method::kKl;  // the one used: a network input's is kMinMax
};

// Calibration input i (0 <= i < count) as input name -> fp32 tensor in the net's
// input shape. An error names the input (a calibration image that does not load).
using InputSource = std::function<Status(size_t i, std::map<std::string, Mat>* inputs)>;

// Calibration input i into `ex` (an error names the input).
Status feed(const InputSource& source, size_t i, Extractor& ex);

// A weight of `count` F32 or F16 values as floats, or false (another type or size).
bool weight_floats(const fb::WeightT& w, size_t count, std::vector<float>* out);

// `model` serialized into *bytes, which Kestrel's own loader then checks (an error names
// `what`, and *bytes is left as it was). size_hint: the builder's first allocation.
Status pack_checked(const fb::ModelT& model, size_t size_hint, const std::string& what, std::string* bytes);

// The layer types that run in int8 (issue 27): their inputs and outputs get scales.
bool int8_layer_type(const std::string& type);

// Two passes over the `count` inputs (ranges, then histograms), one scale per blob that
// an int8 layer not in keep_fp32 reads or writes, and the model rewritten with them.
// Errors, and no output: the model does not load, is already quantized, or names in
// keep_fp32 a layer it lacks; an input fails; a blob holds NaN or an infinity, or is 0
// on every input (no scale exists: keep the layers that read it in fp32). A network
// input's scale is always its min-max.
Status calibrate(const std::string& model_bytes, size_t count, const InputSource& source,
                 const CalibrationOptions& options, std::string* out_bytes, std::vector<BlobReport>* report);

// The layers that run int8 in `model`: Convolutions and InnerProducts whose input has a
// scale, not kept in fp32, in model order.
std::vector<std::string> int8_layers(const fb::Model* model);

// How much int8 costs each layer: the signal-to-quantization-noise ratio of the network's
// outputs (sqnr_db: the worst output's, in dB, higher is better; 200 where they are
// equal) with that layer alone at
// Precision::kInt8 and the rest fp32. `quantized` is calibrate()'s output.
struct LayerSensitivity {
  std::string layer;
  double sqnr_db = 0.0;
};
constexpr double kExactSqnrDb = 200.0;

// Every layer that runs int8 in `quantized` (a Convolution whose input has a scale and
// that the calibration did not keep in fp32), in model order (none where `layers` is
// nullptr), and the whole network at int8 in *whole_db.
Status sensitivity(const std::string& quantized, size_t count, const InputSource& source, int threads,
                   std::vector<LayerSensitivity>* layers, double* whole_db);

// The network's outputs for every input, at `opt`: (*outs)[input][output].
Status outputs_of(const std::string& model_bytes, const Option& opt, size_t count, const InputSource& source,
                  std::vector<std::vector<Mat>>* outs);

// The worst output's 10 log10(sum ref^2 / sum (ref - got)^2) over every input, of
// outputs_of() results, in dB (kExactSqnrDb where they are equal). Per output, so that
// outputs in other units count alike: BlazeFace's box offsets, in pixels, outweighed its
// score logits in one sum (bench/precision/RESULTS_INT8.md).
double sqnr_db(const std::vector<std::vector<Mat>>& ref, const std::vector<std::vector<Mat>>& got);

// The SQNR of `quantized`'s outputs at Precision::kInt8 against `fp32_model`'s at fp32
// (the same network, before a step such as bias correction changed the quantized one).
Status int8_sqnr(const std::string& fp32_model, const std::string& quantized, size_t count, const InputSource& source,
                 int threads, double* db);

}  // namespace kestrel::quantize
