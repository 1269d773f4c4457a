// Kestrel model builder: assemble a network and serialize it to .kst. Used by the
// converters, the tests and the tools; not needed at run time.
//
// Parameters are the schema's typed tables (flatbuffers object API, kestrel::fb::*T,
// generated from src/format/kestrel.fbs). The builder checks nothing beyond what it
// needs to write the file: Net::load is the one place models are validated.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kestrel/status.h"
#include "kestrel_generated.h"

namespace kestrel {

class ModelBuilder {
 public:
  ModelBuilder();

  // Declares a network input; `shape` is outermost first without batch ([C,H,W]).
  void add_input(const std::string& blob, const std::vector<int>& shape);
  // Declares a network output (a blob some layer produces).
  void add_output(const std::string& blob);
  // Adds an fp32 weight tensor and returns its index for add_layer().
  uint32_t add_weight(const std::string& name, const std::vector<int>& shape, const std::vector<float>& data);
  // Adds a weight tensor stored as IEEE halves (DType F16; the loader widens it to fp32).
  uint32_t add_weight_f16(const std::string& name, const std::vector<int>& shape, const std::vector<uint16_t>& data);
  // Adds a layer. Blobs are referred to by name and created on first mention.
  void add_layer(const std::string& type, const std::string& name, const std::vector<std::string>& bottoms,
                 const std::vector<std::string>& tops, fb::LayerParamsUnion params = {},
                 const std::vector<uint32_t>& weights = {});
  void set_metadata(const std::string& key, const std::string& value);

  // The model being built, for callers that need to edit it directly (tests that
  // craft invalid models, converters' graph passes).
  fb::ModelT& model() { return model_; }
  const fb::ModelT& model() const { return model_; }

  // The .kst bytes. The buffer's size is a multiple of 64, so weights are 64-byte
  // aligned whenever the buffer starts on a 64-byte boundary.
  std::vector<uint8_t> serialize() const;
  // Writes serialize() to `path`; kIoError naming the path on failure.
  Status save(const std::string& path) const;

 private:
  uint32_t blob(const std::string& name);

  fb::ModelT model_;
  std::unordered_map<std::string, uint32_t> blob_ids_;
};

}  // namespace kestrel
