// A kestrel-zoo MobileNet v1 and seeded random inputs as a calibration set, shared by
// the kestrel-quantize step tests (equalization, bias correction).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "quantize/calibrate_model.h"
#include "test_util.h"

namespace kt {

struct ZooCalibration {
  std::string bytes;                  // the model
  std::vector<kestrel::Mat> inputs;   // one per seed 1..count
  kestrel::quantize::InputSource source;  // inputs[i] as "data"
};

inline ZooCalibration zoo_calibration(const kestrel::ZooOptions& zoo, int count) {
  ZooCalibration c;
  const std::vector<uint8_t> raw = kestrel::mobilenet_v1(zoo).serialize();
  c.bytes.assign(raw.begin(), raw.end());
  kestrel::Net fp32;
  REQUIRE(fp32.load(c.bytes.data(), c.bytes.size()).ok());
  for (int seed = 1; seed <= count; ++seed) c.inputs.push_back(random_input(fp32, "data", static_cast<uint32_t>(seed)));
  const std::vector<kestrel::Mat> inputs = c.inputs;
  c.source = [inputs](size_t i, std::map<std::string, kestrel::Mat>* in) {
    (*in)["data"] = inputs[i];
    return kestrel::Status::Ok();
  };
  return c;
}

// Blob `name` of `model` (every blob extractable) for input "data" = in, at precision p.
inline kestrel::Mat blob_of(const std::string& model, const kestrel::Mat& in, const std::string& name,
                            kestrel::Precision p = kestrel::Precision::kFp32) {
  kestrel::Net net;
  net.option().fuse_layers = false;
  net.option().precision = p;
  REQUIRE(net.load(model.data(), model.size()).ok());
  kestrel::Extractor ex = net.create_extractor();
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat out;
  REQUIRE(ex.extract(name, out).ok());
  return out.clone();
}

}  // namespace kt
