#include "quantize/calibrate_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>

#include "core/half.h"
#include "kestrel/net.h"
#include "kestrel_generated.h"

namespace kestrel::quantize {
namespace {

constexpr uint32_t kSchemeVersion = 1;  // src/kernels/i8_reference.h's scheme
constexpr const char* kInt8Types[] = {"Convolution", "InnerProduct", "Pooling", "Eltwise", "BinaryOp", "Concat"};

Status bad(const std::string& what) { return Status(ErrorCode::kInvalidArgument, what); }

// The blob's values, channel by channel (the padding between channels left out).
template <class Fn>
void for_values(const Mat& m, Fn&& fn) {
  const size_t n = static_cast<size_t>(m.w) * m.h * m.d * m.elempack;
  const int channels = m.dims >= 3 ? m.c : 1;
  for (int q = 0; q < channels; ++q) fn(m.channel(q), n);
}

}  // namespace

Status feed(const InputSource& source, size_t i, Extractor& ex) {
  std::map<std::string, Mat> inputs;
  Status s = source(i, &inputs);
  if (!s.ok()) return s;
  for (const auto& [name, m] : inputs) {
    if (!(s = ex.input(name, m)).ok()) return s.with_context("calibration input " + std::to_string(i));
  }
  return Status::Ok();
}

bool weight_floats(const fb::WeightT& w, size_t count, std::vector<float>* out) {
  out->resize(count);
  if (w.dtype == fb::DType::F32 && w.data.size() == count * sizeof(float)) {
    std::memcpy(out->data(), w.data.data(), w.data.size());
    return true;
  }
  if (w.dtype == fb::DType::F16 && w.data.size() == count * sizeof(uint16_t)) {
    for (size_t k = 0; k < count; ++k) {
      uint16_t h;
      std::memcpy(&h, w.data.data() + 2 * k, sizeof h);
      (*out)[k] = half_to_float(h);
    }
    return true;
  }
  return false;
}

Status pack_checked(const fb::ModelT& model, size_t size_hint, const std::string& what, std::string* bytes) {
  flatbuffers::FlatBufferBuilder fbb(size_hint + 4096);
  fb::FinishModelBuffer(fbb, fb::Model::Pack(fbb, &model));
  std::string packed(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  Net check;
  const Status s = check.load(packed.data(), packed.size());
  if (!s.ok()) return s.with_context(what);
  *bytes = std::move(packed);
  return Status::Ok();
}

bool int8_layer_type(const std::string& type) {
  for (const char* t : kInt8Types) {
    if (type == t) return true;
  }
  return false;
}

Status calibrate(const std::string& model_bytes, size_t count, const InputSource& source,
                 const CalibrationOptions& options, std::string* out_bytes, std::vector<BlobReport>* report) {
  Net net;
  net.option().fuse_layers = false;  // every blob extractable
  net.option().light_mode = false;   // computed once per input, read many times
  net.option().blocked_layout = false;
  net.option().num_threads = options.threads;
  Status s = net.load(model_bytes.data(), model_bytes.size());
  if (!s.ok()) return s;
  const fb::Model* model = fb::GetModel(model_bytes.data());
  if (const fb::Quantization* q = model->quantization()) {
    return bad("the model is already calibrated for int8 (scheme version " + std::to_string(q->scheme_version()) +
               ", method " + (q->method() ? q->method()->str() : std::string("?")) + "): start from its fp32 source");
  }
  if (count == 0) return bad("no calibration inputs");
  std::set<std::string> keep(options.keep_fp32.begin(), options.keep_fp32.end());
  std::set<std::string> found;
  // The blobs to calibrate, in the order layers produce them (an in-place layer then
  // overwrites a blob only after it was read).
  std::vector<std::string> blobs;
  std::set<uint32_t> seen;
  auto add = [&](uint32_t b) {
    if (seen.insert(b).second) blobs.push_back(model->blobs()->Get(b)->name()->str());
  };
  for (const fb::Layer* l : *model->layers()) {
    const std::string name = l->name()->str();
    if (keep.count(name)) {
      found.insert(name);
      continue;
    }
    if (!int8_layer_type(l->type()->str())) continue;
    if (l->bottoms()) {
      for (uint32_t b : *l->bottoms()) add(b);
    }
    if (l->tops()) {
      for (uint32_t b : *l->tops()) add(b);
    }
  }
  for (const std::string& k : keep) {
    if (!found.count(k)) return bad("--keep-fp32: the model has no layer '" + k + "'");
  }
  std::vector<AbsHistogram> hist(blobs.size());
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < count; ++i) {
      Extractor ex = net.create_extractor();
      if (!(s = feed(source, i, ex)).ok()) return s;
      for (size_t b = 0; b < blobs.size(); ++b) {
        Mat m;
        if (!(s = ex.extract(blobs[b], m)).ok()) return s.with_context("calibration input " + std::to_string(i));
        for_values(m, [&](const float* x, size_t n) {
          if (pass == 0) {
            hist[b].observe_max(x, n);
          } else {
            hist[b].add(x, n);
          }
        });
      }
    }
    if (pass == 0) {
      for (AbsHistogram& h : hist) h.freeze();
    }
  }
  std::unique_ptr<fb::ModelT> out(model->UnPack());
  std::set<std::string> net_inputs;
  if (model->inputs()) {
    for (const fb::Input* in : *model->inputs()) net_inputs.insert(model->blobs()->Get(in->blob())->name()->str());
  }
  std::vector<BlobReport> rows;
  for (size_t b = 0; b < blobs.size(); ++b) {
    const AbsHistogram& h = hist[b];
    if (h.nan_count() > 0 || h.inf_count() > 0 || !std::isfinite(h.max_abs())) {
      return bad("blob '" + blobs[b] + "' holds NaN or an infinity on the calibration inputs: no int8 scale");
    }
    // A network input keeps its whole range: the pre-processing bounds it, and an
    // image's background is a spike that KL clips the rest of the pixels at (Fashion-
    // MNIST's black, (0 - mean) * norm, was picked as the threshold).
    const Method method = net_inputs.count(blobs[b]) ? Method::kMinMax : options.method;
    const float t = threshold(h, method, options.percentile);
    if (!(t > 0.f)) {
      return bad("blob '" + blobs[b] + "' is 0 on every calibration input: no int8 scale (keep the layers that read " +
                 "it in fp32: --keep-fp32)");
    }
    BlobReport r{blobs[b], h.max_abs(), t, 127.f / t, method};
    for (auto& blob : out->blobs) {
      if (blob->name == blobs[b]) blob->int8_scale = r.scale;
    }
    rows.push_back(r);
  }
  out->quantization = std::make_unique<fb::QuantizationT>();
  out->quantization->scheme_version = kSchemeVersion;
  out->quantization->method = method_name(options.method);
  out->quantization->images = static_cast<uint32_t>(count);
  out->quantization->keep_fp32 = options.keep_fp32;
  if (!(s = pack_checked(*out, model_bytes.size(), "the calibrated model", out_bytes)).ok()) return s;
  if (report) *report = std::move(rows);
  return Status::Ok();
}

Status outputs_of(const std::string& bytes, const Option& opt, size_t count, const InputSource& source,
                  std::vector<std::vector<Mat>>* outs) {
  Net net;
  net.option() = opt;
  Status s = net.load(bytes.data(), bytes.size());
  if (!s.ok()) return s;
  outs->assign(count, {});
  const std::vector<std::string> names = net.output_names();
  for (size_t i = 0; i < count; ++i) {
    Extractor ex = net.create_extractor();
    if (!(s = feed(source, i, ex)).ok()) return s;
    for (const std::string& name : names) {
      Mat m;
      if (!(s = ex.extract(name, m)).ok()) return s.with_context("calibration input " + std::to_string(i));
      (*outs)[i].push_back(m.clone());
    }
  }
  return Status::Ok();
}

double sqnr_db(const std::vector<std::vector<Mat>>& ref, const std::vector<std::vector<Mat>>& got) {
  // Per output over every input, then the worst output: outputs in other units (BlazeFace's
  // box offsets in pixels beside its score logits) would otherwise weigh by their size.
  const size_t outputs = ref.empty() ? 0 : ref[0].size();
  double worst = kExactSqnrDb;
  for (size_t o = 0; o < outputs; ++o) {
    double signal = 0.0, noise = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const Mat& r = ref[i][o];
      const Mat& g = got[i][o];
      const size_t n = static_cast<size_t>(r.w) * r.h * r.d * r.elempack;
      const int channels = r.dims >= 3 ? r.c : 1;
      for (int q = 0; q < channels; ++q) {
        for (size_t k = 0; k < n; ++k) {
          const double a = r.channel(q)[k], d = a - g.channel(q)[k];
          signal += a * a;
          noise += d * d;
        }
      }
    }
    if (noise > 0.0) worst = std::min(worst, 10.0 * std::log10(signal / noise));
  }
  return worst;
}

std::vector<std::string> int8_layers(const fb::Model* model) {
  std::set<std::string> kept;
  if (const fb::Quantization* q = model->quantization()) {
    if (q->keep_fp32()) {
      for (const flatbuffers::String* k : *q->keep_fp32()) kept.insert(k->str());
    }
  }
  std::vector<std::string> out;
  for (const fb::Layer* l : *model->layers()) {
    const std::string name = l->name()->str();
    const std::string type = l->type()->str();
    if ((type != "Convolution" && type != "InnerProduct") || kept.count(name) || !l->bottoms() ||
        l->bottoms()->size() == 0) {
      continue;
    }
    if (model->blobs()->Get(l->bottoms()->Get(0))->int8_scale() > 0.f) out.push_back(name);
  }
  return out;
}


Status sensitivity(const std::string& quantized, size_t count, const InputSource& source, int threads,
                   std::vector<LayerSensitivity>* layers, double* whole_db) {
  Option base;
  base.num_threads = threads;
  std::vector<std::vector<Mat>> ref, got;
  Status s = outputs_of(quantized, base, count, source, &ref);
  if (!s.ok()) return s;
  if (layers) {
    layers->clear();
    for (const std::string& name : int8_layers(fb::GetModel(quantized.data()))) {
      Option one = base;
      one.layer_precision[name] = Precision::kInt8;
      if (!(s = outputs_of(quantized, one, count, source, &got)).ok()) return s;
      layers->push_back({name, sqnr_db(ref, got)});
    }
  }
  Option all = base;
  all.precision = Precision::kInt8;
  if (!(s = outputs_of(quantized, all, count, source, &got)).ok()) return s;
  *whole_db = sqnr_db(ref, got);
  return Status::Ok();
}

Status int8_sqnr(const std::string& fp32_model, const std::string& quantized, size_t count, const InputSource& source,
                 int threads, double* db) {
  Option base;
  base.num_threads = threads;
  Option all = base;
  all.precision = Precision::kInt8;
  std::vector<std::vector<Mat>> ref, got;
  Status s = outputs_of(fp32_model, base, count, source, &ref);
  if (!s.ok() || !(s = outputs_of(quantized, all, count, source, &got)).ok()) return s;
  *db = sqnr_db(ref, got);
  return Status::Ok();
}

}  // namespace kestrel::quantize
