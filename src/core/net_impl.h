// What a loaded Net is: the verified model, its prepared layers, the graph facts the
// Extractor needs (producers, consumers, execution order, in-place choices) and the
// static memory plan. Immutable after build_net(); shared by Extractors.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/layer.h"
#include "core/memory_plan.h"
#include "core/model_buffer.h"
#include "kestrel/option.h"

namespace kestrel {

constexpr uint32_t kFormatVersion = 1;
// The int8 scheme this Kestrel implements (fb::Quantization::scheme_version).
constexpr uint32_t kInt8SchemeVersion = 1;
// A feature map larger than this is taken as a corrupt shape, not a real network
// (half the address space on 32-bit targets).
constexpr size_t kMaxBlobBytes = static_cast<size_t>(std::min<uint64_t>(uint64_t{1} << 40, SIZE_MAX / 2));

struct NetLayer {
  std::string name;
  std::string type;
  std::unique_ptr<Layer> impl;
  std::vector<int> bottoms;
  std::vector<int> tops;
  bool inplace = false;  // tops[0] reuses bottoms[0]'s memory
  // bottoms[0]'s row count is decided at each inference (Layer::data_dependent_rows):
  // tops[0] gets the rows bottoms[0] has before the layer runs.
  bool rows_follow_input = false;
  // Option::precision as it applies to this layer (core/net_precision.cpp): kFp16 only
  // for layer types with an fp16 path; the Extractor rounds such a layer's outputs.
  Precision precision = Precision::kFp32;
  // Reads and writes halves (Layer::set_half, core/net_half.cpp): nothing to round.
  bool half_io = false;
  // An fp32 layer whose inputs and weights are halves (fp32_stem, core/net_precision.h).
  bool half_storage = false;
  // The Extractor rounds this layer's outputs to halves (core/net_precision.cpp).
  bool round_outputs = false;
};

struct NetImpl {
  ModelBuffer buffer;
  const fb::Model* model = nullptr;

  std::vector<std::string> blob_names;
  std::unordered_map<std::string, int> blob_index;
  std::vector<Shape> blob_shapes;
  std::vector<float> blob_int8_scale;       // kestrel-quantize's activation scales, 0: none
  std::vector<int> producer;                // layer index, -1 for network inputs
  std::vector<std::vector<int>> consumers;  // layer indices
  std::vector<bool> is_input;
  std::vector<bool> is_output;
  // Per blob: a network input that an fp16 layer reads, which the Extractor keeps as a
  // copy rounded to halves (core/net_precision.h).
  std::vector<char> input_as_half;

  // A blob's producer is a layer index, kNetInput, or kFusedAway: a blob between two
  // layers fused at load, never stored (fused_by names the fused layer).
  static constexpr int kNetInput = -1;
  static constexpr int kFusedAway = -3;
  std::vector<int> fused_by;  // per blob: the fused layer that absorbed it, else -1

  std::vector<NetLayer> layers;
  std::vector<int> order;  // execution order (topological), layer indices
  std::vector<int> step_of_layer;

  std::vector<int> inputs;   // blob indices
  std::vector<int> outputs;  // blob indices
  std::map<std::string, std::string> metadata;

  size_t max_workspace_bytes = 0;
  size_t max_workspace_per_thread_bytes = 0;
  // F16 weights of the model widened to fp32 for the layers that read them so (a deque:
  // WeightViews point into them).
  std::deque<std::vector<float>> widened_weights;
  size_t model_weight_bytes = 0;

  // Each weight of the model: its bytes in `buffer`, its fp32 copy (F16 weights) and
  // the layers that use it, as (layer index in the model, position in that layer's
  // weight list), for core/weight_release.cpp.
  struct ModelWeight {
    const uint8_t* bytes = nullptr;
    size_t size = 0;
    std::vector<float>* widened = nullptr;  // made for the layers that read fp32
    bool f16 = false;                        // stored as F16
    std::vector<std::pair<int, int>> users;
  };
  std::vector<ModelWeight> model_weights;
  // The layer objects by their index in the model, once prepared (fusion moves them
  // into fused layers, where they live on with their packed weights).
  std::vector<const Layer*> prepared_layers;
  // Weights of fp16 layers rounded to halves at load (a deque: WeightViews point into
  // them), with their (layer, position) for weight_release to free the packed ones.
  std::deque<std::vector<float>> rounded_weights;
  std::vector<std::pair<int, int>> rounded_users;
  // Weight bytes held after the load: packed copies plus weights read in place.
  size_t resident_weight_bytes = 0;

  // Zero-copy concatenation: for a blob that its producer writes straight into a
  // Concat's output, that output blob (else -1) and the byte offset of its channels.
  std::vector<int> alias_of;
  std::vector<size_t> alias_offset;

  // Static plan: arena offset of every non-input blob (in-place tops share their
  // bottom's offset).
  std::vector<size_t> plan_offset;
  size_t plan_arena_bytes = 0;
  size_t plan_lower_bound_bytes = 0;

  int find_blob(const std::string& name) const {
    auto it = blob_index.find(name);
    return it == blob_index.end() ? -1 : it->second;
  }
};

// Verifies `buffer` (flatbuffers Verifier, then semantic checks), creates, loads and
// prepares every layer and computes the plan. `input_shapes` replace the model's input
// shapes by name. `out` is only set on success.
Status build_net(std::unique_ptr<NetImpl> impl, const Option& opt,
                 const std::map<std::string, Shape>& input_shapes, std::shared_ptr<const NetImpl>* out);

}  // namespace kestrel
