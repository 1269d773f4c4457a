// The weights of a TF.js graph model: every Const node's value, read from the shard
// files in manifest order and decoded from the stored dtype (float32, int32, bool,
// fp16, or uint8/uint16 affine-quantized) into ConstTensors.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "tfjs/tfjs_ops.h"

namespace kestrel::convert::tfjs_import {

// Reads a shard file named by the manifest (relative to model.json) into *bytes.
using ShardReader = std::function<Status(const std::string& path, std::string* bytes)>;

// Const node name -> value. Errors name the weight or shard: a missing or short
// shard, byte counts that do not add up, an unknown dtype, a quantization scale of 0.
Status read_weights(const tfjs::GraphModel& model, const ShardReader& read_shard,
                    std::map<std::string, ConstTensor>* out);

// A Const node whose value sits in its own "value" attribute (float_val, int_val, ...).
Status inline_tensor(const tfjs::NodeDef& node, ConstTensor* out);

}  // namespace kestrel::convert::tfjs_import
