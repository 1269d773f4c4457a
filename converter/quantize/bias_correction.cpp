#include "quantize/bias_correction.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "kestrel/net.h"
#include "kestrel_generated.h"

namespace kestrel::quantize {
namespace {

Status bad(const std::string& what) { return Status(ErrorCode::kInvalidArgument, what); }

// Where a bias change passes through `a` one for one: lo < y < hi.
bool linear_part(const fb::Activation* a, float* lo, float* hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (!a) return true;
  switch (a->type()) {
    case fb::ActivationType::None:
      return true;
    case fb::ActivationType::ReLU:
    case fb::ActivationType::LeakyReLU:
      *lo = 0.f;
      return true;
    case fb::ActivationType::Clip:
      *lo = a->alpha();
      *hi = a->beta();
      return true;
    default:
      return false;
  }
}

struct Target {
  size_t layer = 0;  // index in the model
  std::string name, top;
  int channels = 0;
  float lo = 0.f, hi = 0.f;  // the activation's linear part, narrowed to the output's int8 range
  float step = 0.f;          // the output's int8 step (0: not calibrated)
  bool linear = true;
};

// Per channel: sum of (int8 - fp32) and how many values, where fp32 is in t's linear part.
struct ChannelError {
  std::vector<double> sum, sq_ref;
  std::vector<size_t> n;
  size_t total = 0;
};

Status accumulate(const Target& t, const Mat& ref, const Mat& got, ChannelError* e) {
  if (ref.dims != got.dims || ref.w != got.w || ref.h != got.h || ref.c != got.c || ref.elempack != 1 ||
      got.elempack != 1) {
    return bad("bias correction: layer '" + t.name + "' gives int8 and fp32 outputs of different shapes");
  }
  // An InnerProduct's vector holds a channel a value.
  const bool vector = ref.dims == 1;
  const int channels = vector ? ref.w : ref.c;
  const size_t plane = vector ? 1 : static_cast<size_t>(ref.w) * ref.h * ref.d;
  if (channels != t.channels) {
    return bad("bias correction: layer '" + t.name + "' has " + std::to_string(channels) + " output channels, not " +
               std::to_string(t.channels));
  }
  for (int q = 0; q < channels; ++q) {
    const float* r = vector ? ref.row(0) + q : ref.channel(q);
    const float* g = vector ? got.row(0) + q : got.channel(q);
    for (size_t k = 0; k < plane; ++k) {
      e->sq_ref[q] += double(r[k]) * r[k];
      if (!(r[k] > t.lo && r[k] < t.hi)) continue;
      e->sum[q] += double(g[k]) - r[k];
      e->n[q]++;
    }
  }
  e->total += plane * channels;
  return Status::Ok();
}

// The blobs from which a network output is reached without another Convolution or
// InnerProduct on the way (through reshapes, concats, activations): a head's output. Its
// mean error does not pass through further weights, and the task reads a few of its
// values (BlazeFace's faces among 896 anchors' logits) where the mean weighs them all.
std::set<uint32_t> head_blobs(const fb::Model* model) {
  std::set<uint32_t> heads;
  if (model->outputs()) heads.insert(model->outputs()->begin(), model->outputs()->end());
  const auto& layers = *model->layers();
  for (size_t k = layers.size(); k-- > 0;) {
    const fb::Layer* l = layers[k];
    const std::string type = l->type()->str();
    if (type == "Convolution" || type == "InnerProduct" || !l->tops() || !l->bottoms()) continue;
    bool feeds_head = false;
    for (uint32_t t : *l->tops()) feeds_head = feeds_head || heads.count(t);
    if (feeds_head) heads.insert(l->bottoms()->begin(), l->bottoms()->end());
  }
  return heads;
}

Option measuring(int threads, Precision p) {
  Option o;
  o.num_threads = threads;
  o.fuse_layers = false;  // every layer's output extractable
  o.blocked_layout = false;
  o.precision = p;
  return o;
}

}  // namespace

Status correct_biases(const std::string& quantized, size_t count, const InputSource& source, int threads,
                      std::string* out_bytes, std::vector<BiasCorrection>* report, bool guarded) {
  const fb::Model* model = fb::GetModel(quantized.data());
  if (!model->quantization()) return bad("bias correction: the model is not calibrated for int8 (kestrel-quantize)");
  if (count == 0) return bad("no calibration inputs");
  Net ref;
  ref.option() = measuring(threads, Precision::kFp32);
  Status s = ref.load(quantized.data(), quantized.size());
  if (!s.ok()) return s;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < model->layers()->size(); ++i) index[model->layers()->Get(i)->name()->str()] = i;
  const std::set<uint32_t> heads = head_blobs(model);
  std::vector<Target> targets;
  for (const std::string& name : int8_layers(model)) {
    Target t;
    t.layer = index[name];
    t.name = name;
    const fb::Layer* l = model->layers()->Get(t.layer);
    if (!l->tops() || l->tops()->size() != 1 || heads.count(l->tops()->Get(0))) continue;
    const fb::Blob* top = model->blobs()->Get(l->tops()->Get(0));
    t.top = top->name()->str();
    const fb::Activation* act = nullptr;
    if (const fb::ConvolutionParam* p = l->params_as_ConvolutionParam()) {
      t.channels = p->num_output();
      act = p->activation();
    } else if (const fb::InnerProductParam* p = l->params_as_InnerProductParam()) {
      t.channels = p->num_output();
      act = p->activation();
    } else {
      continue;
    }
    t.linear = linear_part(act, &t.lo, &t.hi);
    // Past the int8 range a map saturates: a bias change does not pass there either.
    if (top->int8_scale() > 0.f) {
      const float range = 127.f / top->int8_scale();
      t.step = 1.f / top->int8_scale();
      t.lo = std::max(t.lo, -range);
      t.hi = std::min(t.hi, range);
    }
    targets.push_back(t);
  }
  std::unique_ptr<fb::ModelT> m(model->UnPack());
  std::string current = quantized;
  // Each layer's correction stays only where the whole network's outputs come nearer
  // fp32's: where clipping, not rounding, makes a layer's error, its mean follows the
  // calibration images' content (BlazeFace's late maps, clipped at a tenth of their
  // range, lost every face to corrections learnt on photos without faces).
  Option base;
  base.num_threads = threads;
  Option whole = base;
  whole.precision = Precision::kInt8;
  std::vector<std::vector<Mat>> ref_out, got;
  if (!(s = outputs_of(quantized, base, count, source, &ref_out)).ok() ||
      !(s = outputs_of(quantized, whole, count, source, &got)).ok()) {
    return s;
  }
  double current_db = sqnr_db(ref_out, got);
  std::vector<BiasCorrection> rows;
  for (const Target& t : targets) {
    BiasCorrection row{t.name};
    row.step = t.step;
    if (!t.linear || t.channels <= 0) {
      row.skipped = true;
      rows.push_back(row);
      continue;
    }
    Net q;
    q.option() = measuring(threads, Precision::kInt8);
    if (!(s = q.load(current.data(), current.size())).ok()) return s.with_context("bias correction");
    ChannelError e;
    e.sum.assign(t.channels, 0.0);
    e.sq_ref.assign(t.channels, 0.0);
    e.n.assign(t.channels, 0);
    for (size_t i = 0; i < count; ++i) {
      Extractor er = ref.create_extractor(), eq = q.create_extractor();
      if (!(s = feed(source, i, er)).ok() || !(s = feed(source, i, eq)).ok()) return s;
      Mat a, b;
      if (!(s = er.extract(t.top, a)).ok() || !(s = eq.extract(t.top, b)).ok()) {
        return s.with_context("bias correction, calibration input " + std::to_string(i));
      }
      if (!(s = accumulate(t, a, b, &e)).ok()) return s;
    }
    fb::LayerT& layer = *m->layers[t.layer];
    bool* bias_term = layer.params.type == fb::LayerParams::ConvolutionParam
                          ? &layer.params.AsConvolutionParam()->bias_term
                          : &layer.params.AsInnerProductParam()->bias_term;
    if (!*bias_term) {
      // The bias follows the weights in both layer types' documented order.
      if (layer.weights.size() != 1) {
        row.skipped = true;
        rows.push_back(row);
        continue;
      }
      auto w = std::make_unique<fb::WeightT>();
      w->name = t.name + "/bias_correction";
      w->shape = {t.channels};
      w->data.assign(sizeof(float) * t.channels, 0);
      layer.weights.push_back(static_cast<uint32_t>(m->weights.size()));
      m->weights.push_back(std::move(w));
      *bias_term = true;
    }
    fb::WeightT& bw = *m->weights[layer.weights[1]];
    std::vector<float> bias;
    if (!weight_floats(bw, static_cast<size_t>(t.channels), &bias)) {
      row.skipped = true;
      rows.push_back(row);
      continue;
    }
    const fb::WeightT before = bw;
    double shift_sq = 0.0, out_sq = 0.0;
    for (int c = 0; c < t.channels; ++c) {
      out_sq += e.sq_ref[c];
      if (e.n[c] < kMinCorrectionSamples) continue;
      const float d = static_cast<float>(e.sum[c] / double(e.n[c]));
      bias[c] -= d;
      row.channels++;
      row.max_shift = std::max(row.max_shift, std::fabs(d));
      shift_sq += double(d) * d;
    }
    if (row.channels > 0) row.rms_shift = static_cast<float>(std::sqrt(shift_sq / row.channels));
    if (e.total > 0) row.rms_output = static_cast<float>(std::sqrt(out_sq / double(e.total)));
    bw.dtype = fb::DType::F32;
    bw.data.resize(sizeof(float) * bias.size());
    std::memcpy(bw.data.data(), bias.data(), bw.data.size());
    std::string candidate;
    if (!(s = pack_checked(*m, current.size(), "the bias-corrected model", &candidate)).ok()) return s;
    if (!(s = outputs_of(candidate, whole, count, source, &got)).ok()) return s.with_context("bias correction");
    row.sqnr_db = sqnr_db(ref_out, got);
    row.kept = !guarded || row.sqnr_db >= current_db;
    if (row.kept) {
      current = std::move(candidate);
      current_db = row.sqnr_db;
    } else {
      bw = before;
    }
    rows.push_back(row);
  }
  m->quantization->bias_corrected = true;
  if (!(s = pack_checked(*m, current.size(), "the bias-corrected model", out_bytes)).ok()) return s;
  if (report) *report = std::move(rows);
  return Status::Ok();
}

}  // namespace kestrel::quantize
