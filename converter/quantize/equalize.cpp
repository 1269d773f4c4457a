#include "quantize/equalize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "core/half.h"
#include "kestrel/net.h"
#include "kestrel_generated.h"

namespace kestrel::quantize {
namespace {

Status bad(const std::string& what) { return Status(ErrorCode::kInvalidArgument, what); }

struct Candidate {
  size_t producer = 0, consumer = 0;  // layer indices
  std::string blob;
  int channels = 0;
  float clip_hi = 0.f;  // the producer's Clip bound; 0: none
};

bool float_weight(const fb::Weight* w) { return w && (w->dtype() == fb::DType::F32 || w->dtype() == fb::DType::F16); }

size_t weight_count(const fb::Weight* w) {
  return w->data() ? w->data()->size() / (w->dtype() == fb::DType::F16 ? 2 : 4) : 0;
}

// Activations for which act(s x) = s act(x) for s > 0 (Clip: while s x stays under its
// bound, which the scales keep on the calibration inputs).
bool scalable(const fb::Activation* a, float* clip_hi) {
  *clip_hi = 0.f;
  if (!a) return true;
  switch (a->type()) {
    case fb::ActivationType::None:
    case fb::ActivationType::ReLU:
    case fb::ActivationType::LeakyReLU:
      return true;
    case fb::ActivationType::Clip:
      *clip_hi = a->beta();
      return a->alpha() == 0.f && a->beta() > 0.f;
    default:
      return false;
  }
}

std::vector<Candidate> candidates(const fb::Model* model) {
  const auto& layers = *model->layers();
  std::map<uint32_t, std::vector<size_t>> readers;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->bottoms()) {
      for (uint32_t b : *layers[i]->bottoms()) readers[b].push_back(i);
    }
  }
  // Weights that two layers share stay as they are.
  std::map<uint32_t, int> uses;
  for (const fb::Layer* l : layers) {
    if (l->weights()) {
      for (uint32_t w : *l->weights()) uses[w]++;
    }
  }
  auto own = [&](const fb::Layer* l) {
    if (!l->weights()) return true;
    for (uint32_t w : *l->weights()) {
      if (uses[w] > 1) return false;
    }
    return true;
  };
  std::set<uint32_t> outputs;
  if (model->outputs()) outputs.insert(model->outputs()->begin(), model->outputs()->end());
  auto weight = [&](const fb::Layer* l, size_t k) -> const fb::Weight* {
    if (!l->weights() || l->weights()->size() <= k || !model->weights()) return nullptr;
    const uint32_t w = l->weights()->Get(static_cast<uint32_t>(k));
    return w < model->weights()->size() ? model->weights()->Get(w) : nullptr;
  };
  std::vector<Candidate> out;
  for (size_t i = 0; i < layers.size(); ++i) {
    const fb::Layer* a = layers[i];
    const fb::ConvolutionParam* pa = a->params_as_ConvolutionParam();
    if (a->type()->str() != "Convolution" || !pa || !a->tops() || a->tops()->size() != 1) continue;
    const uint32_t top = a->tops()->Get(0);
    Candidate c;
    c.producer = i;
    c.channels = pa->num_output();
    if (outputs.count(top) || readers[top].size() != 1 || c.channels <= 0 || !scalable(pa->activation(), &c.clip_hi)) {
      continue;
    }
    const fb::Weight* wa = weight(a, 0);
    if (!own(a) || !float_weight(wa) || weight_count(wa) % c.channels != 0) continue;
    if (pa->bias_term() && (!float_weight(weight(a, 1)) || weight_count(weight(a, 1)) != size_t(c.channels))) continue;
    c.consumer = readers[top][0];
    const fb::Layer* b = layers[c.consumer];
    const fb::ConvolutionParam* pb = b->params_as_ConvolutionParam();
    if (b->type()->str() != "Convolution" || !pb || pb->group() != c.channels || pb->num_output() != c.channels ||
        !b->bottoms() || b->bottoms()->size() != 1 || !own(b)) {
      continue;
    }
    const fb::Weight* wb = weight(b, 0);
    if (!float_weight(wb) || weight_count(wb) != size_t(c.channels) * pb->kernel_h() * pb->kernel_w()) continue;
    c.blob = model->blobs()->Get(top)->name()->str();
    out.push_back(c);
  }
  return out;
}

std::vector<float> floats_of(const fb::WeightT& w) {
  std::vector<float> v;
  if (w.dtype == fb::DType::F16) {
    v.resize(w.data.size() / 2);
    for (size_t k = 0; k < v.size(); ++k) {
      uint16_t h;
      std::memcpy(&h, w.data.data() + 2 * k, 2);
      v[k] = half_to_float(h);
    }
  } else {
    v.resize(w.data.size() / 4);
    std::memcpy(v.data(), w.data.data(), v.size() * 4);
  }
  return v;
}

// Channel i's slice of `w` (channels slices) multiplied by f[i]; written back as fp32.
void scale_channels(fb::WeightT& w, int channels, const std::vector<float>& f) {
  std::vector<float> v = floats_of(w);
  const size_t per = v.size() / static_cast<size_t>(channels);
  for (int i = 0; i < channels; ++i) {
    for (size_t k = 0; k < per; ++k) v[i * per + k] *= f[i];
  }
  w.dtype = fb::DType::F32;
  w.data.resize(v.size() * 4);
  std::memcpy(w.data.data(), v.data(), w.data.size());
}

float spread(const std::vector<float>& m) {
  float lo = 0.f, hi = 0.f;
  for (float x : m) {
    if (x > 0.f) lo = lo > 0.f ? std::min(lo, x) : x;
    hi = std::max(hi, x);
  }
  return lo > 0.f ? hi / lo : 0.f;
}

}  // namespace

Status equalize_depthwise_inputs(const std::string& model_bytes, size_t count, const InputSource& source, int threads,
                                 std::string* out_bytes, std::vector<EqualizedPair>* pairs) {
  Net net;
  net.option().fuse_layers = false;  // every blob extractable
  net.option().blocked_layout = false;
  net.option().num_threads = threads;
  Status s = net.load(model_bytes.data(), model_bytes.size());
  if (!s.ok()) return s;
  const fb::Model* model = fb::GetModel(model_bytes.data());
  if (model->quantization()) return bad("the model is already calibrated for int8: equalize its fp32 source");
  if (count == 0) return bad("no calibration inputs");
  const std::vector<Candidate> found = candidates(model);
  std::vector<std::vector<float>> range(found.size());
  for (size_t i = 0; i < count; ++i) {
    Extractor ex = net.create_extractor();
    std::map<std::string, Mat> inputs;
    if (!(s = source(i, &inputs)).ok()) return s;
    for (const auto& [name, m] : inputs) {
      if (!(s = ex.input(name, m)).ok()) return s.with_context("calibration input " + std::to_string(i));
    }
    for (size_t c = 0; c < found.size(); ++c) {
      Mat m;
      if (!(s = ex.extract(found[c].blob, m)).ok()) return s.with_context("calibration input " + std::to_string(i));
      if (m.dims < 3 || m.c != found[c].channels || m.elempack != 1) {
        return bad("equalize: blob '" + found[c].blob + "' is not a planar map of " +
                   std::to_string(found[c].channels) + " channels");
      }
      range[c].resize(m.c, 0.f);
      const size_t n = static_cast<size_t>(m.w) * m.h * m.d;
      for (int q = 0; q < m.c; ++q) {
        const float* x = m.channel(q);
        for (size_t k = 0; k < n; ++k) {
          if (!std::isfinite(x[k])) return bad("equalize: blob '" + found[c].blob + "' holds NaN or an infinity");
          range[c][q] = std::max(range[c][q], std::fabs(x[k]));
        }
      }
    }
  }
  std::unique_ptr<fb::ModelT> out(model->UnPack());
  std::vector<EqualizedPair> done;
  for (size_t c = 0; c < found.size(); ++c) {
    const Candidate& cand = found[c];
    const std::vector<float>& m = range[c];
    const float top = *std::max_element(m.begin(), m.end());
    std::vector<float> up(m.size(), 1.f), down(m.size(), 1.f), after(m);
    EqualizedPair pair{model->layers()->Get(cand.producer)->name()->str(),
                       model->layers()->Get(cand.consumer)->name()->str(), 0, 1.f, spread(m), 0.f};
    for (size_t i = 0; i < m.size(); ++i) {
      if (!(m[i] > 0.f)) continue;
      float f = std::min(top / m[i], kMaxChannelScale);
      if (cand.clip_hi > 0.f) f = std::min(f, cand.clip_hi * kClipHeadroom / m[i]);
      if (!(f > 1.f)) continue;
      up[i] = f;
      down[i] = 1.f / f;
      after[i] = m[i] * f;
      pair.channels++;
      pair.max_scale = std::max(pair.max_scale, f);
    }
    pair.spread_after = spread(after);
    if (pair.channels == 0) continue;
    fb::LayerT& a = *out->layers[cand.producer];
    fb::LayerT& b = *out->layers[cand.consumer];
    scale_channels(*out->weights[a.weights[0]], cand.channels, up);
    if (a.params.AsConvolutionParam()->bias_term) scale_channels(*out->weights[a.weights[1]], cand.channels, up);
    scale_channels(*out->weights[b.weights[0]], cand.channels, down);
    done.push_back(pair);
  }
  if (!(s = pack_checked(*out, model_bytes.size(), "the equalized model", out_bytes)).ok()) return s;
  if (pairs) *pairs = std::move(done);
  return Status::Ok();
}

}  // namespace kestrel::quantize
