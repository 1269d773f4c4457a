// Net load: verify the untrusted bytes, check the graph, prepare layers, plan memory.
#include <algorithm>
#include <climits>
#include <cmath>
#include <queue>
#include <string>

#include "core/checked_math.h"
#include "core/guard.h"
#include "core/half.h"
#include "core/net_fuse.h"
#include "core/net_half.h"
#include "core/net_int8.h"
#include "core/net_layout.h"
#include "core/net_precision.h"
#include "core/net_impl.h"
#include "core/weight_release.h"
#include "kernels/i8_reference.h"

namespace kestrel {

void widen_weight(const WeightView& v, float* out) {
  if (v.i8_data) {
    kernels::dequantize_rows_i8(v.i8_data, v.i8_scales, v.rows(), v.count / v.rows(), out);
  } else if (v.half_data) {
    for (size_t k = 0; k < v.count; ++k) out[k] = half_to_float(v.half_data[k]);
  } else {
    std::copy(v.data, v.data + v.count, out);
  }
}

namespace {

Status corrupt(const std::string& msg) { return Status(ErrorCode::kCorruptModel, msg); }

std::string quoted(const flatbuffers::String* s) { return s ? "'" + s->str() + "'" : "''"; }

Status verify_bytes(const uint8_t* data, size_t size) {
  if (size < 8) return corrupt("file too small to be a Kestrel model (" + std::to_string(size) + " bytes)");
  if (!flatbuffers::BufferHasIdentifier(data, fb::ModelIdentifier())) {
    return corrupt("not a Kestrel model: file identifier is not '" + std::string(fb::ModelIdentifier()) + "'");
  }
  // Limits well above any real network, so that a crafted file cannot make the
  // verifier itself run long.
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64, /*max_tables=*/10000000);
  if (!fb::VerifyModelBuffer(verifier)) {
    return corrupt("flatbuffers verification failed: the file is truncated or damaged");
  }
  return Status::Ok();
}

Status read_shape(const flatbuffers::Vector<int32_t>* dims, Shape* shape) {
  if (!dims || dims->size() < 1 || dims->size() > 4) return corrupt("input shape must have 1 to 4 dims");
  for (int32_t v : *dims) {
    if (v <= 0) return corrupt("input shape has a non-positive dimension " + std::to_string(v));
  }
  const int n = static_cast<int>(dims->size());
  auto at = [&](int i) { return dims->Get(static_cast<flatbuffers::uoffset_t>(i)); };
  // Stored outermost first: [C,H,W], [C,D,H,W].
  switch (n) {
    case 1: *shape = Shape::make1(at(0)); break;
    case 2: *shape = Shape::make2(at(1), at(0)); break;
    case 3: *shape = Shape::make3(at(2), at(1), at(0)); break;
    default: *shape = Shape::make4(at(3), at(2), at(1), at(0)); break;
  }
  return Status::Ok();
}

Status check_blob_shape(const Shape& s, const std::string& blob) {
  if (!s.valid() || s.bytes() > kMaxBlobBytes) {
    return corrupt("blob '" + blob + "' has an invalid or oversized shape");
  }
  // Layers and kernels count a feature map's elements (and any product of its
  // extents) in int: more floats than that is no real network either.
  if (s.bytes() / sizeof(float) > static_cast<size_t>(INT_MAX)) {
    return corrupt("blob '" + blob + "' has more than INT_MAX elements");
  }
  return Status::Ok();
}

Status read_blobs(NetImpl& net) {
  const fb::Model& m = *net.model;
  if (!m.blobs() || m.blobs()->size() == 0) return corrupt("model has no blobs");
  const size_t n = m.blobs()->size();
  net.blob_names.resize(n);
  net.blob_int8_scale.assign(n, 0.f);
  for (size_t i = 0; i < n; ++i) {
    const std::string name = m.blobs()->Get(i)->name()->str();
    if (!net.blob_index.emplace(name, static_cast<int>(i)).second) {
      return corrupt("blob name '" + name + "' is used twice");
    }
    const float scale = m.blobs()->Get(i)->int8_scale();
    if (!std::isfinite(scale) || scale < 0.f) {
      return corrupt("blob '" + name + "' has int8 scale " + std::to_string(scale) +
                     " (a calibrated scale is finite and above 0; 0 means none)");
    }
    net.blob_int8_scale[i] = scale;
    net.blob_names[i] = name;
  }
  net.blob_shapes.assign(n, Shape{});
  net.producer.assign(n, -2);  // -2: not produced yet
  net.consumers.assign(n, {});
  net.is_input.assign(n, false);
  net.is_output.assign(n, false);

  if (!m.inputs() || m.inputs()->size() == 0) return corrupt("model declares no inputs");
  for (const fb::Input* in : *m.inputs()) {
    if (in->blob() >= n) return corrupt("input blob index " + std::to_string(in->blob()) + " out of range");
    const int b = static_cast<int>(in->blob());
    if (net.is_input[b]) return corrupt("blob '" + net.blob_names[b] + "' is declared as input twice");
    Status s = read_shape(in->shape(), &net.blob_shapes[b]);
    if (!s.ok()) return s.with_context("input '" + net.blob_names[b] + "'");
    s = check_blob_shape(net.blob_shapes[b], net.blob_names[b]);
    if (!s.ok()) return s;
    net.is_input[b] = true;
    net.producer[b] = -1;
    net.inputs.push_back(b);
  }
  if (!m.outputs() || m.outputs()->size() == 0) return corrupt("model declares no outputs");
  for (uint32_t b : *m.outputs()) {
    if (b >= n) return corrupt("output blob index " + std::to_string(b) + " out of range");
    net.is_output[b] = true;
    net.outputs.push_back(static_cast<int>(b));
  }
  return Status::Ok();
}

Status override_input_shapes(NetImpl& net, const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, shape] : shapes) {
    const int b = net.find_blob(name);
    if (b < 0 || !net.is_input[b]) {
      return Status(ErrorCode::kInvalidArgument, "set_input_shape: the model has no input '" + name + "'");
    }
    Status s = check_blob_shape(shape, name);
    if (!s.ok()) return Status(ErrorCode::kInvalidArgument, "set_input_shape: " + s.message());
    net.blob_shapes[b] = shape;
  }
  return Status::Ok();
}

// An I8 weight's scales: one a row (shape[0] rows, at least one value each), each
// finite and positive, since a layer that reads fp32 divides by it.
Status check_i8_scales(const fb::Weight& w, const WeightView& v, size_t count, const std::string& what) {
  const size_t rows = v.rows();
  if (v.shape.empty() || rows == 0 || count % rows != 0) return corrupt(what + ": an int8 weight needs rows (shape[0])");
  if (!w.scales() || w.scales()->size() != rows) {
    return corrupt(what + ": an int8 weight needs " + std::to_string(rows) + " scales (one a row), has " +
                   std::to_string(w.scales() ? w.scales()->size() : 0));
  }
  for (size_t r = 0; r < rows; ++r) {
    const float s = w.scales()->Get(static_cast<flatbuffers::uoffset_t>(r));
    if (!(std::isfinite(s) && s > 0.f)) {
      return corrupt(what + ": int8 scale of row " + std::to_string(r) + " is " + std::to_string(s) +
                     " (must be finite and positive)");
    }
  }
  return Status::Ok();
}

Status read_weights(NetImpl& net, std::vector<WeightView>* views) {
  const fb::Model& m = *net.model;
  if (!m.weights()) return Status::Ok();
  net.model_weights.resize(m.weights()->size());
  for (size_t i = 0; i < m.weights()->size(); ++i) {
    const fb::Weight* w = m.weights()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const std::string what = "weight #" + std::to_string(i) + " " + quoted(w->name());
    const bool half = w->dtype() == fb::DType::F16, i8 = w->dtype() == fb::DType::I8;
    if (w->dtype() != fb::DType::F32 && !half && !i8) {
      return Status(ErrorCode::kUnsupported,
                    what + ": dtype " + std::string(fb::EnumNameDType(w->dtype())) + " is not supported yet");
    }
    if (!w->shape() || !w->data()) return corrupt(what + ": missing shape or data");
    WeightView v;
    size_t count = 1;
    for (int32_t d : *w->shape()) {
      if (d < 0 || !checked_mul({count, static_cast<size_t>(d)}, &count)) {
        return corrupt(what + ": invalid shape");
      }
      v.shape.push_back(d);
    }
    size_t bytes = 0;
    const size_t element = half ? sizeof(uint16_t) : i8 ? sizeof(int8_t) : sizeof(float);
    if (!checked_mul({count, element}, &bytes) || bytes != w->data()->size()) {
      return corrupt(what + ": data has " + std::to_string(w->data()->size()) + " bytes, shape needs " +
                     std::to_string(count) + (half ? " halves" : i8 ? " int8 values" : " floats"));
    }
    if (i8) {
      Status s = check_i8_scales(*w, v, count, what);
      if (!s.ok()) return s;
    } else if (w->scales() && w->scales()->size() > 0) {
      return corrupt(what + ": scales on a " + std::string(fb::EnumNameDType(w->dtype())) + " weight");
    }
    if (reinterpret_cast<uintptr_t>(w->data()->data()) % kAlignment != 0) {
      return corrupt(what + ": data is not 64-byte aligned");
    }
    if (half) {
      // Widened when a layer that reads fp32 is loaded (widen_for_layer), unless the
      // layer widens it itself; the view's data stays nullptr until then.
      v.half_data = reinterpret_cast<const uint16_t*>(w->data()->data());
      v.halves = true;
      net.model_weights[i].f16 = true;
    } else if (i8) {
      // Likewise dequantized for the layers that read fp32 (widen_for_layer).
      v.i8_data = reinterpret_cast<const int8_t*>(w->data()->data());
      v.i8_scales = w->scales()->data();
    } else {
      v.data = reinterpret_cast<const float*>(w->data()->data());
    }
    v.count = count;
    net.model_weights[i].bytes = w->data()->data();
    net.model_weights[i].size = bytes;
    net.model_weight_bytes += bytes;
    views->push_back(std::move(v));
  }
  return Status::Ok();
}

// The views of layer li's weights as it takes them: an F16 weight widened to fp32 once
// (kept for the Net's lifetime, shared by its readers), except where the layer widens
// it itself (Layer::widens_weight). Throws std::bad_alloc.
void widen_for_layer(NetImpl& net, const fb::Layer& fl, const Layer& layer, std::vector<WeightView>* views) {
  for (size_t pos = 0; pos < views->size(); ++pos) {
    WeightView& v = (*views)[pos];
    if (v.data || (!v.half_data && !v.i8_data)) continue;
    if (layer.widens_weight(pos)) continue;
    NetImpl::ModelWeight& mw = net.model_weights[fl.weights()->Get(static_cast<flatbuffers::uoffset_t>(pos))];
    if (!mw.widened) {
      net.widened_weights.emplace_back(v.count);
      std::vector<float>& wide = net.widened_weights.back();
      widen_weight(v, wide.data());
      mw.widened = &wide;
    }
    v.data = mw.widened->data();
    v.half_data = nullptr;
    v.i8_data = nullptr;
    v.i8_scales = nullptr;
  }
}

Status read_layers(NetImpl& net) {
  const fb::Model& m = *net.model;
  if (!m.layers() || m.layers()->size() == 0) return corrupt("model has no layers");
  const size_t nblobs = net.blob_names.size();
  const size_t nweights = m.weights() ? m.weights()->size() : 0;
  net.layers.resize(m.layers()->size());
  net.prepared_layers.assign(m.layers()->size(), nullptr);
  for (size_t li = 0; li < m.layers()->size(); ++li) {
    const fb::Layer* fl = m.layers()->Get(static_cast<flatbuffers::uoffset_t>(li));
    NetLayer& L = net.layers[li];
    L.name = fl->name()->str();
    L.type = fl->type()->str();
    const std::string what = "layer '" + L.name + "' (" + L.type + ")";
    if (!fl->tops() || fl->tops()->size() == 0) return corrupt(what + ": has no outputs");
    if (fl->bottoms()) {
      for (uint32_t b : *fl->bottoms()) {
        if (b >= nblobs) return corrupt(what + ": input blob index " + std::to_string(b) + " out of range");
        L.bottoms.push_back(static_cast<int>(b));
        net.consumers[b].push_back(static_cast<int>(li));
      }
    }
    for (uint32_t t : *fl->tops()) {
      if (t >= nblobs) return corrupt(what + ": output blob index " + std::to_string(t) + " out of range");
      if (net.producer[t] != -2) {
        return corrupt(what + ": blob '" + net.blob_names[t] + "' is already produced by " +
                       (net.producer[t] == -1 ? std::string("the network input")
                                              : "layer '" + net.layers[net.producer[t]].name + "'"));
      }
      net.producer[t] = static_cast<int>(li);
      L.tops.push_back(static_cast<int>(t));
    }
    if (fl->weights()) {
      int pos = 0;
      for (uint32_t w : *fl->weights()) {
        if (w >= nweights) return corrupt(what + ": weight index " + std::to_string(w) + " out of range");
        net.model_weights[w].users.emplace_back(static_cast<int>(li), pos++);
      }
    }
  }
  for (size_t li = 0; li < net.layers.size(); ++li) {
    for (int b : net.layers[li].bottoms) {
      if (net.producer[b] == -2) {
        return corrupt("layer '" + net.layers[li].name + "' reads blob '" + net.blob_names[b] +
                       "', which nothing produces");
      }
    }
  }
  for (int b : net.outputs) {
    if (net.producer[b] == -2) return corrupt("output blob '" + net.blob_names[b] + "' is never produced");
  }
  return Status::Ok();
}

// Kahn's algorithm, preferring file order among ready layers so that the execution
// order is the converter's order whenever that is valid.
Status topological_order(NetImpl& net) {
  const size_t n = net.layers.size();
  std::vector<int> pending(n, 0);
  for (size_t li = 0; li < n; ++li) {
    for (int b : net.layers[li].bottoms) pending[li] += net.producer[b] >= 0 ? 1 : 0;
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t li = 0; li < n; ++li) {
    if (pending[li] == 0) ready.push(static_cast<int>(li));
  }
  while (!ready.empty()) {
    const int li = ready.top();
    ready.pop();
    net.order.push_back(li);
    for (int t : net.layers[li].tops) {
      for (int c : net.consumers[t]) {
        if (--pending[c] == 0) ready.push(c);
      }
    }
  }
  if (net.order.size() != n) {
    for (size_t li = 0; li < n; ++li) {
      if (pending[li] > 0) return corrupt("the graph has a cycle through layer '" + net.layers[li].name + "'");
    }
  }
  net.step_of_layer.assign(n, 0);
  for (size_t s = 0; s < n; ++s) net.step_of_layer[net.order[s]] = static_cast<int>(s);
  return Status::Ok();
}

Status prepare_layers(NetImpl& net, const std::vector<WeightView>& weights, const Option& opt) {
  std::vector<Shape> in_shapes, out_shapes;
  for (int li : net.order) {
    NetLayer& L = net.layers[li];
    const fb::Layer* fl = net.model->layers()->Get(static_cast<flatbuffers::uoffset_t>(li));
    const std::string what = "layer '" + L.name + "' (" + L.type + ")";
    // A container or a layer's own vectors may throw std::bad_alloc: the message then
    // names the layer and the step, as the layers' own kOutOfMemory errors do.
    const char* step = "creating";
    try {
      LayerCreator create = find_layer_creator(L.type);
      if (!create) return Status(ErrorCode::kUnsupported, what + ": unknown layer type '" + L.type + "'");
      L.impl = create();
      step = "loading parameters and weights";
      LoadContext lc;
      lc.layer = fl;
      lc.kernels = opt.kernels;
      if (fl->weights()) {
        for (uint32_t w : *fl->weights()) lc.weights.push_back(weights[w]);
      }
      step = "widening F16 weights";
      widen_for_layer(net, *fl, *L.impl, &lc.weights);
      step = "loading parameters and weights";
      L.precision = resolve_precision(net, li, opt);
      L.half_storage = fp32_stem(net, li, opt);
      Status s;
      if (L.precision == Precision::kFp16 || L.half_storage) {
        step = "rounding weights to halves";
        if (!(s = round_weights_to_half(net, li, &lc.weights)).ok()) return s.with_context(what);
        step = "loading parameters and weights";
      }
      s = L.impl->load(lc);
      if (!s.ok()) return s.with_context(what);
      step = "preparing (shapes, kernel choice, packed weights)";
      in_shapes.clear();
      for (int b : L.bottoms) in_shapes.push_back(net.blob_shapes[b]);
      out_shapes.assign(L.tops.size(), Shape{});
      PrepareContext pc;
      pc.kernels = opt.kernels;
      pc.precision = L.precision;
      if (L.precision == Precision::kInt8 && !L.bottoms.empty()) pc.int8_in_scale = net.blob_int8_scale[L.bottoms[0]];
      s = L.impl->prepare(in_shapes, out_shapes, pc);
      if (!s.ok()) return s.with_context(what);
      // kBf16 and kInt8 name the layers that compute in them once their shapes are known.
      if (L.precision == Precision::kBf16 && !L.impl->computes_bf16()) L.precision = Precision::kFp32;
      if (L.precision == Precision::kInt8 && !L.impl->computes_int8()) L.precision = Precision::kFp32;
      step = "checking output shapes";
      for (size_t i = 0; i < L.tops.size(); ++i) {
        s = check_blob_shape(out_shapes[i], net.blob_names[L.tops[i]]);
        if (!s.ok()) return s.with_context(what);
        net.blob_shapes[L.tops[i]] = out_shapes[i];
      }
    } catch (const std::bad_alloc&) {
      return Status(ErrorCode::kOutOfMemory, what + ": " + step + ": out of memory");
    }
    net.max_workspace_bytes = std::max(net.max_workspace_bytes, L.impl->workspace_bytes);
    net.max_workspace_per_thread_bytes =
        std::max(net.max_workspace_per_thread_bytes, L.impl->workspace_per_thread_bytes);
    net.prepared_layers[li] = L.impl.get();
    release_packed_weights(net, li);
  }
  return Status::Ok();
}

// A layer whose output's row count is decided at each inference (DetectionOutput)
// hands its readers fewer rows than they were prepared for. A one-input elementwise
// layer (an activation) can follow it: its output takes the rows its input has
// (NetLayer::rows_follow_input), and so on down a chain. Any other reader would read
// the prepared number of rows, most of them never written: refused here.
Status check_data_dependent_rows(NetImpl& net) {
  std::vector<int> origin(net.blob_names.size(), -1);  // the layer that decides a blob's rows
  for (int li : net.order) {
    NetLayer& L = net.layers[li];
    if (L.impl->data_dependent_rows()) {
      for (int t : L.tops) origin[t] = li;
      continue;
    }
    for (int b : L.bottoms) {
      if (origin[b] < 0) continue;
      const bool follows = L.bottoms.size() == 1 && L.tops.size() == 1 && L.impl->supports_inplace() &&
                           net.blob_shapes[b].dims == 2 && net.blob_shapes[b] == net.blob_shapes[L.tops[0]];
      if (!follows) {
        const NetLayer& O = net.layers[origin[b]];
        return Status(ErrorCode::kUnsupported,
                      "layer '" + L.name + "' (" + L.type + ") reads '" + net.blob_names[b] + "', whose row count layer '" +
                          O.name + "' (" + O.type + ") decides at each inference: only a one-input elementwise "
                          "layer, such as an activation, may read it");
      }
      L.rows_follow_input = true;
      origin[L.tops[0]] = origin[b];
    }
  }
  return Status::Ok();
}

// Planar values with no padding between channels: their logical order is their order
// in memory.
bool dense(const Shape& s) {
  return s.elempack == 1 && (s.dims <= 2 || s.c == 1 || s.cstep() == size_t(s.w) * s.h * s.d);
}

// A layer runs in place when it allows it and its input is an intermediate blob that
// nothing else reads and nobody can ask for later (not a network input or output):
// an elementwise layer over one shape, or a reshape between dense layouts of the same
// bytes (its output is its input's memory under another shape: SSD's Flatten and
// Reshape layers copied 0.1 M instructions' worth of values an inference).
void choose_inplace(NetImpl& net) {
  for (NetLayer& L : net.layers) {
    if (L.bottoms.size() != 1 || L.tops.size() != 1) continue;
    const int b = L.bottoms[0];
    const Shape &in = net.blob_shapes[b], &out = net.blob_shapes[L.tops[0]];
    const bool elementwise = L.impl->supports_inplace() && in == out;
    const bool reshape = L.impl->reshapes_only() && !L.rows_follow_input && dense(in) && dense(out) &&
                         in.bytes() == out.bytes();
    L.inplace = (elementwise || reshape) && !net.is_input[b] && !net.is_output[b] && net.consumers[b].size() == 1;
  }
}

// A Concat along channels whose inputs are intermediate blobs read by it alone gets
// them written into its output: each producer's output is a view of the output's
// channel range (same h, w and so the same channel stride), and the copy disappears.
// Not for network inputs or outputs (users hand in and hold those), in-place tops (their
// memory is their bottom's), a blob listed twice, a Concat whose own output is aliased
// (one level keeps the lifetimes simple), or an input whose values are not the output's
// type (an fp32 map into an int8 one, or back).
void choose_concat_aliases(NetImpl& net) {
  const size_t nblobs = net.blob_names.size();
  net.alias_of.assign(nblobs, -1);
  net.alias_offset.assign(nblobs, 0);
  for (const NetLayer& L : net.layers) {
    if (L.tops.size() != 1 || !L.impl->concatenates_channels()) continue;
    const int c = L.tops[0];
    const Shape& out = net.blob_shapes[c];
    if (out.dims != 3 || out.elempack != 1) continue;
    size_t offset = 0;
    for (size_t i = 0; i < L.bottoms.size(); ++i) {
      const int b = L.bottoms[i];
      const Shape& in = net.blob_shapes[b];
      const int p = net.producer[b];
      bool ok = p >= 0 && !net.is_input[b] && !net.is_output[b] && net.consumers[b].size() == 1 &&
                std::count(L.bottoms.begin(), L.bottoms.end(), b) == 1 && in.dims == 3 && in.elempack == 1 &&
                in.w == out.w && in.h == out.h && in.i8 == out.i8 && net.alias_of[c] < 0;
      if (ok) {
        const NetLayer& P = net.layers[p];
        ok = !(P.inplace && P.tops[0] == b) && !P.impl->concatenates_channels();
      }
      if (ok) {
        net.alias_of[b] = c;
        net.alias_offset[b] = offset;
      }
      offset += static_cast<size_t>(in.c) * out.cstep() * sizeof(float);
    }
  }
}

void plan_arena(NetImpl& net) {
  const int nsteps = static_cast<int>(net.order.size());
  const size_t nblobs = net.blob_names.size();
  // Each non-input blob maps to a buffer; an in-place top shares its bottom's buffer.
  std::vector<int> buffer_of(nblobs, -1);
  std::vector<PlanBuffer> buffers;
  for (int li : net.order) {
    const NetLayer& L = net.layers[li];
    for (size_t i = 0; i < L.tops.size(); ++i) {
      const int t = L.tops[i];
      if (i == 0 && L.inplace) {
        buffer_of[t] = buffer_of[L.bottoms[0]];
        continue;
      }
      if (net.alias_of[t] >= 0) continue;  // lives in its Concat's buffer (below)
      buffer_of[t] = static_cast<int>(buffers.size());
      PlanBuffer pb;
      pb.bytes = net.blob_shapes[t].bytes();
      pb.first_step = pb.last_step = net.step_of_layer[li];
      buffers.push_back(pb);
    }
  }
  // A Concat's buffer exists from the step that writes its first aliased input.
  for (int li : net.order) {
    for (int t : net.layers[li].tops) {
      if (net.alias_of[t] < 0) continue;
      buffer_of[t] = buffer_of[net.alias_of[t]];
      PlanBuffer& pb = buffers[buffer_of[t]];
      pb.first_step = std::min(pb.first_step, net.step_of_layer[li]);
    }
  }
  for (size_t b = 0; b < nblobs; ++b) {
    if (buffer_of[b] < 0) continue;
    PlanBuffer& pb = buffers[buffer_of[b]];
    for (int c : net.consumers[b]) pb.last_step = std::max(pb.last_step, net.step_of_layer[c]);
    if (net.is_output[b]) pb.last_step = nsteps;
  }
  const MemoryPlan plan = plan_memory(buffers);
  net.plan_offset.assign(nblobs, 0);
  for (size_t b = 0; b < nblobs; ++b) {
    if (buffer_of[b] >= 0) net.plan_offset[b] = plan.offsets[buffer_of[b]];
    if (net.alias_of[b] >= 0) net.plan_offset[b] += net.alias_offset[b];
  }
  net.plan_arena_bytes = plan.arena_bytes;
  net.plan_lower_bound_bytes = plan.lower_bound_bytes;
}

void read_metadata(NetImpl& net) {
  if (!net.model->metadata()) return;
  for (const fb::KeyValue* kv : *net.model->metadata()) {
    net.metadata[kv->key()->str()] = kv->value() ? kv->value()->str() : std::string();
  }
}

}  // namespace

Status build_net(std::unique_ptr<NetImpl> impl, const Option& opt, const std::map<std::string, Shape>& input_shapes,
                 std::shared_ptr<const NetImpl>* out) {
  NetImpl& net = *impl;
  Status s = verify_bytes(net.buffer.data(), net.buffer.size());
  if (!s.ok()) return s;
  net.model = fb::GetModel(net.buffer.data());
  if (net.model->format_version() == 0 || net.model->format_version() > kFormatVersion) {
    return Status(ErrorCode::kUnsupported, "model format version " + std::to_string(net.model->format_version()) +
                                               " is not supported (this Kestrel reads version " +
                                               std::to_string(kFormatVersion) + ")");
  }
  if (const fb::Quantization* q = net.model->quantization()) {
    if (q->scheme_version() == 0 || q->scheme_version() > kInt8SchemeVersion) {
      return Status(ErrorCode::kUnsupported, "int8 scheme version " + std::to_string(q->scheme_version()) +
                                                 " is not supported (this Kestrel implements version " +
                                                 std::to_string(kInt8SchemeVersion) + ")");
    }
  }
  std::vector<WeightView> weights;
  // Each step names itself if a container runs out of memory (prepare_layers names
  // the layer too).
  if (!(s = oom_names("reading blobs", [&] { return read_blobs(net); })).ok()) return s;
  if (!(s = oom_names("setting input shapes", [&] { return override_input_shapes(net, input_shapes); })).ok()) {
    return s;
  }
  if (!(s = oom_names("reading weights", [&] { return read_weights(net, &weights); })).ok()) return s;
  if (!(s = oom_names("reading layers", [&] { return read_layers(net); })).ok()) return s;
  if (!(s = oom_names("ordering layers", [&] { return topological_order(net); })).ok()) return s;
  if (!(s = check_precision_overrides(net, opt)).ok()) return s;
  if (!(s = oom_names("preparing layers", [&] { return prepare_layers(net, weights, opt); })).ok()) return s;
  if (!(s = oom_names("checking row counts", [&] { return check_data_dependent_rows(net); })).ok()) return s;
  s = oom_names("choosing int8 maps", [&] { return choose_int8_maps(net, opt.int8_maps); });
  if (!s.ok()) return s;
  s = oom_names("choosing layouts", [&] {
    if (opt.kernels == KernelSet::kFast) {
      Status hs = choose_half_maps(net);
      if (!hs.ok()) return hs;
    }
    if (opt.blocked_layout && opt.kernels == KernelSet::kFast) choose_blocked_layouts(net);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  s = oom_names("fusing layers", [&] {
    net.fused_by.assign(net.blob_names.size(), -1);
    if (opt.fuse_layers && opt.kernels == KernelSet::kFast) fuse_layers(net);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  s = oom_names("releasing packed-away weights", [&] {
    mark_half_inputs(net);
    finish_weight_release(net);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  s = oom_names("planning memory", [&] {
    choose_inplace(net);
    choose_concat_aliases(net);
    plan_arena(net);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!(s = oom_names("reading metadata", [&] { read_metadata(net); return Status::Ok(); })).ok()) return s;
  // The shared_ptr's control block is the last allocation; if it fails, impl still owns.
  return oom_names("sharing the loaded Net", [&] {
    *out = std::shared_ptr<const NetImpl>(std::move(impl));
    return Status::Ok();
  });
}

}  // namespace kestrel
