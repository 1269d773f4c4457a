#include "kestrel/builder.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace kestrel {

namespace {
constexpr uint32_t kWrittenFormatVersion = 1;
}

ModelBuilder::ModelBuilder() {
  model_.format_version = kWrittenFormatVersion;
  model_.producer = "kestrel-builder";
}

uint32_t ModelBuilder::blob(const std::string& name) {
  auto it = blob_ids_.find(name);
  if (it != blob_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(model_.blobs.size());
  auto b = std::make_unique<fb::BlobT>();
  b->name = name;
  model_.blobs.push_back(std::move(b));
  blob_ids_.emplace(name, id);
  return id;
}

void ModelBuilder::add_input(const std::string& name, const std::vector<int>& shape) {
  auto in = std::make_unique<fb::InputT>();
  in->blob = blob(name);
  in->shape = shape;
  model_.inputs.push_back(std::move(in));
}

void ModelBuilder::add_output(const std::string& name) { model_.outputs.push_back(blob(name)); }

uint32_t ModelBuilder::add_weight(const std::string& name, const std::vector<int>& shape,
                                  const std::vector<float>& data) {
  auto w = std::make_unique<fb::WeightT>();
  w->name = name;
  w->dtype = fb::DType::F32;
  w->shape = shape;
  w->data.resize(data.size() * sizeof(float));
  // An empty tensor has no storage to copy (memcpy from a null pointer is undefined).
  if (!data.empty()) std::memcpy(w->data.data(), data.data(), w->data.size());
  model_.weights.push_back(std::move(w));
  return static_cast<uint32_t>(model_.weights.size() - 1);
}

uint32_t ModelBuilder::add_weight_f16(const std::string& name, const std::vector<int>& shape,
                                      const std::vector<uint16_t>& data) {
  auto w = std::make_unique<fb::WeightT>();
  w->name = name;
  w->dtype = fb::DType::F16;
  w->shape = shape;
  w->data.resize(data.size() * sizeof(uint16_t));
  if (!data.empty()) std::memcpy(w->data.data(), data.data(), w->data.size());
  model_.weights.push_back(std::move(w));
  return static_cast<uint32_t>(model_.weights.size() - 1);
}

void ModelBuilder::add_layer(const std::string& type, const std::string& name,
                             const std::vector<std::string>& bottoms, const std::vector<std::string>& tops,
                             fb::LayerParamsUnion params, const std::vector<uint32_t>& weights) {
  auto l = std::make_unique<fb::LayerT>();
  l->name = name;
  l->type = type;
  l->params = std::move(params);
  for (const std::string& b : bottoms) l->bottoms.push_back(blob(b));
  for (const std::string& t : tops) l->tops.push_back(blob(t));
  l->weights = weights;
  model_.layers.push_back(std::move(l));
}

void ModelBuilder::set_metadata(const std::string& key, const std::string& value) {
  for (auto& kv : model_.metadata) {
    if (kv->key == key) {
      kv->value = value;
      return;
    }
  }
  auto kv = std::make_unique<fb::KeyValueT>();
  kv->key = key;
  kv->value = value;
  model_.metadata.push_back(std::move(kv));
}

std::vector<uint8_t> ModelBuilder::serialize() const {
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  auto offset = fb::Model::Pack(fbb, &model_);
  fb::FinishModelBuffer(fbb, offset);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

Status ModelBuilder::save(const std::string& path) const {
  const std::vector<uint8_t> bytes = serialize();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status(ErrorCode::kIoError, "cannot write '" + path + "': " + std::strerror(errno));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) return Status(ErrorCode::kIoError, "error writing '" + path + "'");
  return Status::Ok();
}

}  // namespace kestrel
