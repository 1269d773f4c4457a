#include "quantize/int8_weights.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "kernels/i8_reference.h"
#include "kestrel_generated.h"
#include "quantize/calibrate_model.h"

namespace kestrel::quantize {

Status store_int8_weights(const std::string& quantized, std::string* out, std::vector<std::string>* layers) {
  const fb::Model* model = fb::GetModel(quantized.data());
  std::unique_ptr<fb::ModelT> m(model->UnPack());
  std::map<uint32_t, int> uses;
  for (const auto& l : m->layers) {
    for (uint32_t w : l->weights) uses[w]++;
  }
  const std::vector<std::string> names = int8_layers(model);
  const std::set<std::string> int8(names.begin(), names.end());
  layers->clear();
  for (const auto& l : m->layers) {
    if (!int8.count(l->name) || l->weights.empty()) continue;
    const uint32_t wi = l->weights[0];
    if (wi >= m->weights.size() || uses[wi] != 1) continue;
    fb::WeightT& w = *m->weights[wi];
    if (w.shape.empty() || w.shape[0] <= 0) continue;
    size_t count = 1;
    for (int d : w.shape) count *= static_cast<size_t>(d);
    const size_t rows = static_cast<size_t>(w.shape[0]), n = count / rows;
    if (n == 0 || n * rows != count || n > kernels::kMaxProducts) continue;
    std::vector<float> f;
    if (!weight_floats(w, count, &f)) continue;
    std::vector<int8_t> q(count);
    std::vector<float> scales(rows);
    kernels::quantize_rows_i8(f.data(), rows, n, q.data(), scales.data());
    bool finite = true;
    for (float s : scales) finite = finite && std::isfinite(s) && s > 0.f;
    if (!finite) continue;
    w.dtype = fb::DType::I8;
    w.data.assign(reinterpret_cast<const uint8_t*>(q.data()), reinterpret_cast<const uint8_t*>(q.data()) + count);
    w.scales = std::move(scales);
    layers->push_back(l->name);
  }
  return pack_checked(*m, quantized.size(), "the model with int8 weights", out);
}

}  // namespace kestrel::quantize
