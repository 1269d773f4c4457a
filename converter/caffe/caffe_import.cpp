// Caffe front end: reads the deploy prototxt and the caffemodel, upgrades legacy V1
// layers, declares the inputs, walks the layers in order (renaming in-place tops so
// every blob has one producer) and hands each layer to its converter
// (caffe_layers.cpp, caffe_layers_shape.cpp).
#include "caffe/caffe_import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>

#include "caffe/caffe_layers.h"

namespace kestrel::convert {

namespace {

using caffe_import::LayerContext;
using caffe_import::LayerSpec;

// ---- reading the files ----

// Keeps the first error with its (1-based) position; warnings (skipped unknown
// fields) are dropped.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!message_.empty()) return;
    message_ = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

Status parse_prototxt(const std::string& text, const std::string& path, caffe::NetParameter* net) {
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  // Forks add fields this schema does not know; they must not stop a conversion.
  parser.AllowUnknownField(true);
  parser.AllowUnknownExtension(true);
  if (!parser.ParseFromString(text, net)) {
    return Status(ErrorCode::kCorruptModel,
                  path + ":" + (errors.message().empty() ? std::string(" not a valid prototxt") : errors.message()));
  }
  return Status::Ok();
}

Status read_prototxt(const std::string& path, caffe::NetParameter* net) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(ErrorCode::kNotFound, path + ": cannot open the prototxt");
  std::stringstream text;
  text << f.rdbuf();
  if (f.bad()) return Status(ErrorCode::kIoError, path + ": read failed");
  return parse_prototxt(text.str(), path, net);
}

bool parse_caffemodel(google::protobuf::io::ZeroCopyInputStream* in, caffe::NetParameter* net) {
  google::protobuf::io::CodedInputStream coded(in);
  // The default 64 MiB limit is below many caffemodels (VGG-16 is 528 MiB).
  coded.SetTotalBytesLimit(INT_MAX);
  return net->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

Status read_caffemodel(const std::string& path, caffe::NetParameter* net) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Status(ErrorCode::kNotFound, path + ": cannot open the caffemodel");
  bool ok = false;
  {
    google::protobuf::io::FileInputStream file(fd);
    ok = parse_caffemodel(&file, net);
  }
  ::close(fd);
  if (!ok) return Status(ErrorCode::kCorruptModel, path + ": not a valid caffemodel (binary NetParameter)");
  return Status::Ok();
}

// ---- legacy layers ----

// Caffe's names for the V1 types Kestrel can convert (and Silence, which it skips);
// the others keep their enum name and are reported as unsupported.
const std::map<caffe::V1LayerParameter::LayerType, const char*>& v1_type_names() {
  using V1 = caffe::V1LayerParameter;
  static const std::map<V1::LayerType, const char*> names = {
      {V1::CONCAT, "Concat"},   {V1::CONVOLUTION, "Convolution"}, {V1::DECONVOLUTION, "Deconvolution"},
      {V1::DROPOUT, "Dropout"}, {V1::ELTWISE, "Eltwise"},         {V1::FLATTEN, "Flatten"},
      {V1::INNER_PRODUCT, "InnerProduct"}, {V1::LRN, "LRN"},      {V1::POOLING, "Pooling"},
      {V1::POWER, "Power"},     {V1::RELU, "ReLU"},               {V1::SIGMOID, "Sigmoid"},
      {V1::SILENCE, "Silence"}, {V1::SOFTMAX, "Softmax"},         {V1::SPLIT, "Split"},
      {V1::SLICE, "Slice"},     {V1::TANH, "TanH"},
  };
  return names;
}

// V1 parameter messages are the current ones under other field numbers and the same
// field names, so reflection copies every set *_param across.
void upgrade_v1(const caffe::V1LayerParameter& v1, caffe::LayerParameter* out) {
  out->set_name(v1.name());
  const auto& names = v1_type_names();
  const auto it = names.find(v1.type());
  out->set_type(it != names.end() ? it->second : caffe::V1LayerParameter::LayerType_Name(v1.type()));
  out->mutable_bottom()->CopyFrom(v1.bottom());
  out->mutable_top()->CopyFrom(v1.top());
  out->mutable_blobs()->CopyFrom(v1.blobs());
  out->mutable_include()->CopyFrom(v1.include());
  out->mutable_exclude()->CopyFrom(v1.exclude());
  const google::protobuf::Reflection* from = v1.GetReflection();
  const google::protobuf::Reflection* to = out->GetReflection();
  const google::protobuf::Descriptor* target = out->GetDescriptor();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  from->ListFields(v1, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    const google::protobuf::FieldDescriptor* g = target->FindFieldByName(f->name());
    if (f->is_repeated() || f->message_type() == nullptr || !g || g->message_type() != f->message_type()) continue;
    to->MutableMessage(out, g)->CopyFrom(from->GetMessage(v1, f));
  }
}

// ---- which layers a deploy (TEST phase, level 0, no stages) net runs ----

bool rule_met(const caffe::NetStateRule& r) {
  if (r.has_phase() && r.phase() != caffe::TEST) return false;
  if (r.has_min_level() && r.min_level() > 0) return false;
  if (r.has_max_level() && r.max_level() < 0) return false;
  return r.stage_size() == 0;  // the deploy state has no stages, so not_stage always holds
}

bool runs_in_test_phase(const caffe::LayerParameter& l) {
  if (l.include_size() > 0) {
    for (const auto& r : l.include()) {
      if (rule_met(r)) return true;
    }
    return false;
  }
  for (const auto& r : l.exclude()) {
    if (rule_met(r)) return false;
  }
  return true;
}

// ---- the import ----

struct BlobVersions {
  bool is_input = false;
  std::vector<std::string> names;      // graph blob of each version, oldest first
  std::vector<std::string> producers;  // the Caffe layer that wrote each version
};

class Importer {
 public:
  Importer(const std::string& prototxt, const CaffeImportOptions& options, Graph* graph)
      : prototxt_(prototxt), options_(options), g_(*graph) {}

  Status run(const caffe::NetParameter& net, const caffe::NetParameter& weights);

 private:
  Status declare_net_inputs(const caffe::NetParameter& net);
  Status declare_input(const std::string& name, std::vector<int64_t> dims);
  Status convert_layer(const caffe::LayerParameter& layer);
  Status shape_of(const std::string& blob, std::vector<int>* extents);
  std::string unique_blob(const std::string& base);
  void index_weights(const caffe::NetParameter& weights);
  Status finish();

  const std::string& prototxt_;
  const CaffeImportOptions& options_;
  Graph& g_;
  std::map<std::string, BlobVersions> blobs_;  // by Caffe blob name
  std::set<std::string> taken_;                // graph blob names in use
  std::set<std::string> silenced_;             // graph blobs a Silence layer consumes
  std::set<std::string> overrides_used_;
  std::map<std::string, const google::protobuf::RepeatedPtrField<caffe::BlobProto>*> weights_;
  std::map<std::string, Shape> shapes_;
  size_t shapes_for_nodes_ = SIZE_MAX;  // node count shapes_ was computed for
};

std::string Importer::unique_blob(const std::string& base) {
  std::string name = base;
  for (int k = 2; taken_.count(name); ++k) name = base + "#" + std::to_string(k);
  taken_.insert(name);
  return name;
}

Status Importer::declare_input(const std::string& name, std::vector<int64_t> dims) {
  for (const auto& [override_name, shape] : options_.input_shapes) {
    if (override_name == name) {
      dims.assign(shape.begin(), shape.end());
      overrides_used_.insert(name);
    }
  }
  const std::string what = "input '" + name + "'";
  if (blobs_.count(name)) return Status(ErrorCode::kCorruptModel, what + " is declared twice");
  if (dims.size() < 2 || dims.size() > 5) {
    return Status(ErrorCode::kUnsupported, what + ": " + std::to_string(dims.size()) +
                                               " dims; Kestrel takes N plus 1 to 4 dims");
  }
  if (dims[0] != 1) {
    return Status(ErrorCode::kUnsupported, what + ": batch " + std::to_string(dims[0]) +
                                               " is not supported, only 1 (override with --input-shape " + name +
                                               "=1,...)");
  }
  GraphInput in{name, {}};
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i] <= 0 || dims[i] > INT_MAX) {
      return Status(ErrorCode::kInvalidArgument, what + ": dimension " + std::to_string(dims[i]) + " is invalid");
    }
    in.shape.push_back(static_cast<int>(dims[i]));
  }
  g_.inputs.push_back(in);
  taken_.insert(name);
  BlobVersions& v = blobs_[name];
  v.is_input = true;
  v.names.push_back(name);
  v.producers.push_back("");
  return Status::Ok();
}

// The NetParameter-level declarations: input + input_shape, or input + input_dim.
Status Importer::declare_net_inputs(const caffe::NetParameter& net) {
  const int n = net.input_size();
  if (net.input_shape_size() > 0 && net.input_shape_size() != n) {
    return Status(ErrorCode::kCorruptModel, prototxt_ + ": " + std::to_string(n) + " inputs but " +
                                                std::to_string(net.input_shape_size()) + " input_shape entries");
  }
  if (net.input_shape_size() == 0 && net.input_dim_size() != 4 * n) {
    return Status(ErrorCode::kCorruptModel, prototxt_ + ": " + std::to_string(n) + " inputs need " +
                                                std::to_string(4 * n) + " input_dim values, got " +
                                                std::to_string(net.input_dim_size()));
  }
  for (int i = 0; i < n; ++i) {
    std::vector<int64_t> dims;
    if (net.input_shape_size() > 0) {
      dims.assign(net.input_shape(i).dim().begin(), net.input_shape(i).dim().end());
    } else {
      dims.assign(net.input_dim().begin() + 4 * i, net.input_dim().begin() + 4 * i + 4);
    }
    Status s = declare_input(net.input(i), dims);
    if (!s.ok()) return s.with_context(prototxt_);
  }
  return Status::Ok();
}

void Importer::index_weights(const caffe::NetParameter& weights) {
  for (const caffe::LayerParameter& l : weights.layer()) weights_[l.name()] = &l.blobs();
  for (const caffe::V1LayerParameter& l : weights.layers()) weights_[l.name()] = &l.blobs();
}

Status Importer::shape_of(const std::string& blob, std::vector<int>* extents) {
  for (const GraphInput& in : g_.inputs) {
    if (in.name == blob) {
      *extents = in.shape;
      return Status::Ok();
    }
  }
  if (shapes_for_nodes_ != g_.nodes.size()) {
    // Kestrel's loader wants declared outputs: every blob serves for this purpose.
    for (const Node& n : g_.nodes) g_.outputs.insert(g_.outputs.end(), n.outputs.begin(), n.outputs.end());
    Status s = infer_shapes(g_, &shapes_);
    g_.outputs.clear();
    if (!s.ok()) return s.with_context("inferring the shapes of the layers before it");
    shapes_for_nodes_ = g_.nodes.size();
  }
  const auto it = shapes_.find(blob);
  if (it == shapes_.end()) return Status(ErrorCode::kInternal, "no shape for blob '" + blob + "'");
  const Shape& s = it->second;
  switch (s.dims) {
    case 1: *extents = {s.w}; break;
    case 2: *extents = {s.h, s.w}; break;
    case 3: *extents = {s.c, s.h, s.w}; break;
    default: *extents = {s.c, s.d, s.h, s.w}; break;
  }
  return Status::Ok();
}

// Every blob's data must fill its shape before any converter looks at it.
Status check_blob(const caffe::BlobProto& b, size_t index) {
  std::vector<int64_t> dims;
  if (b.has_shape()) {
    dims.assign(b.shape().dim().begin(), b.shape().dim().end());
  } else if (b.has_num() || b.has_channels() || b.has_height() || b.has_width()) {
    dims = {b.num(), b.channels(), b.height(), b.width()};
  } else {
    return Status::Ok();
  }
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > INT_MAX || (d > 0 && count > INT64_MAX / d)) {
      return Status(ErrorCode::kCorruptModel, "blob " + std::to_string(index) + " has an invalid shape");
    }
    count *= d;
  }
  if (static_cast<size_t>(count) != caffe_import::blob_count(b)) {
    return Status(ErrorCode::kCorruptModel, "blob " + std::to_string(index) + " has " +
                                                std::to_string(caffe_import::blob_count(b)) +
                                                " values but its shape holds " + std::to_string(count));
  }
  return Status::Ok();
}

Status Importer::convert_layer(const caffe::LayerParameter& layer) {
  const std::string& type = layer.type();
  if (type == "Input") {
    const caffe::InputParameter& p = layer.input_param();
    if (p.shape_size() != 1 && p.shape_size() != layer.top_size()) {
      return Status(ErrorCode::kCorruptModel, "has " + std::to_string(layer.top_size()) + " tops but " +
                                                  std::to_string(p.shape_size()) + " shapes");
    }
    for (int t = 0; t < layer.top_size(); ++t) {
      const caffe::BlobShape& shape = p.shape(p.shape_size() == 1 ? 0 : t);
      Status s = declare_input(layer.top(t), std::vector<int64_t>(shape.dim().begin(), shape.dim().end()));
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  LayerContext ctx{layer, {}, {}, {}, &g_, nullptr, nullptr};
  for (const std::string& b : layer.bottom()) {
    const auto it = blobs_.find(b);
    if (it == blobs_.end()) {
      return Status(ErrorCode::kCorruptModel, "bottom '" + b + "' is not an input or a top of an earlier layer");
    }
    ctx.bottoms.push_back(it->second.names.back());
  }
  // Silence computes nothing: its bottoms become the net's outputs (finish()).
  if (type == "Silence") {
    silenced_.insert(ctx.bottoms.begin(), ctx.bottoms.end());
    return Status::Ok();
  }
  const LayerSpec* spec = caffe_import::find_layer_spec(type);
  if (!spec) return Status(ErrorCode::kUnsupported, "layer type '" + type + "' is not supported");
  const int nb = layer.bottom_size(), nt = layer.top_size();
  if (nb < spec->min_bottoms || (spec->max_bottoms >= 0 && nb > spec->max_bottoms) || nt < spec->min_tops ||
      (spec->max_tops >= 0 && nt > spec->max_tops)) {
    auto range = [](int lo, int hi) {
      return hi == lo ? std::to_string(lo) : hi < 0 ? std::to_string(lo) + " or more"
                                                    : std::to_string(lo) + " to " + std::to_string(hi);
    };
    return Status(ErrorCode::kUnsupported, "has " + std::to_string(nb) + " bottom(s) and " + std::to_string(nt) +
                                               " top(s); the conversion takes " +
                                               range(spec->min_bottoms, spec->max_bottoms) + " bottom(s) and " +
                                               range(spec->min_tops, spec->max_tops) + " top(s)");
  }

  // A top may reuse a name only in place (top i == bottom i), as Caffe requires; the
  // new version gets a name of its own so that every blob has one producer.
  for (int t = 0; t < nt; ++t) {
    const std::string& top = layer.top(t);
    if (blobs_.count(top) || std::find(layer.top().begin(), layer.top().begin() + t, top) != layer.top().begin() + t) {
      if (t >= nb || layer.bottom(t) != top) {
        return Status(ErrorCode::kCorruptModel, "top '" + top + "' is already produced elsewhere (only an in-place "
                                                "layer, top i == bottom i, may reuse a blob name)");
      }
      ctx.tops.push_back(unique_blob(top + "#" + layer.name()));
    } else {
      ctx.tops.push_back(unique_blob(top));
    }
  }

  const auto w = weights_.find(layer.name());
  const auto& blobs = w != weights_.end() && !w->second->empty() ? *w->second : layer.blobs();
  for (int i = 0; i < blobs.size(); ++i) {
    Status s = check_blob(blobs.Get(i), static_cast<size_t>(i));
    if (!s.ok()) return s;
    ctx.blobs.push_back(&blobs.Get(i));
  }
  ctx.shape_of = [this](const std::string& blob, std::vector<int>* e) { return shape_of(blob, e); };
  ctx.unique_blob = [this](const std::string& base) { return unique_blob(base); };
  Status s = spec->convert(ctx);
  if (!s.ok()) return s;
  for (int t = 0; t < nt; ++t) {
    BlobVersions& v = blobs_[layer.top(t)];
    v.names.push_back(ctx.tops[t]);
    v.producers.push_back(layer.name());
  }
  return Status::Ok();
}

// Outputs are the blobs nothing reads (Caffe's convention). A blob rewritten in
// place ends under its Caffe name, as Caffe's net.blobs[name] holds the last
// version; earlier versions are "NAME#LAYER" after the layer that wrote them.
Status Importer::finish() {
  std::map<std::string, std::string> rename;
  for (const auto& [caffe_name, v] : blobs_) {
    if (v.is_input || v.names.size() < 2 || v.names.front() != caffe_name) continue;
    rename[v.names.front()] = unique_blob(caffe_name + "#" + v.producers.front());
    rename[v.names.back()] = caffe_name;
  }
  auto apply = [&](std::string& name) {
    const auto it = rename.find(name);
    if (it != rename.end()) name = it->second;
  };
  // A Silence layer quiets a blob that training leaves unread; in a deploy net that
  // blob is what the net computes (OpenCV treats Silence as the identity), so it is
  // an output even where another layer also reads it.
  std::set<std::string> read;
  for (const Node& n : g_.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (const Node& n : g_.nodes) {
    for (const std::string& b : n.outputs) {
      if (!read.count(b) || silenced_.count(b)) g_.outputs.push_back(b);
    }
  }
  for (Node& n : g_.nodes) {
    for (std::string& b : n.inputs) apply(b);
    for (std::string& b : n.outputs) apply(b);
  }
  for (std::string& b : g_.outputs) apply(b);
  if (g_.outputs.empty()) return Status(ErrorCode::kCorruptModel, prototxt_ + ": the net has no outputs");
  return Status::Ok();
}

Status Importer::run(const caffe::NetParameter& net, const caffe::NetParameter& weights) {
  if (net.layer_size() > 0 && net.layers_size() > 0) {
    return Status(ErrorCode::kCorruptModel, prototxt_ + ": mixes 'layer' and legacy 'layers'");
  }
  index_weights(weights);
  Status s = declare_net_inputs(net);
  if (!s.ok()) return s;
  std::vector<caffe::LayerParameter> upgraded(static_cast<size_t>(net.layers_size()));
  for (int i = 0; i < net.layers_size(); ++i) upgrade_v1(net.layers(i), &upgraded[static_cast<size_t>(i)]);
  std::vector<const caffe::LayerParameter*> layers;
  for (const caffe::LayerParameter& l : net.layer()) layers.push_back(&l);
  for (const caffe::LayerParameter& l : upgraded) layers.push_back(&l);
  for (const caffe::LayerParameter* l : layers) {
    if (!runs_in_test_phase(*l)) continue;
    s = convert_layer(*l);
    if (!s.ok()) return s.with_context(prototxt_ + ": layer '" + l->name() + "' (" + l->type() + ")");
  }
  for (const auto& [name, shape] : options_.input_shapes) {
    if (!overrides_used_.count(name)) {
      return Status(ErrorCode::kInvalidArgument, "input shape given for '" + name + "', which is not an input of " +
                                                     prototxt_);
    }
  }
  if (g_.inputs.empty()) return Status(ErrorCode::kCorruptModel, prototxt_ + ": the net declares no inputs");
  return finish();
}

}  // namespace

Status import_caffe(const std::string& prototxt_path, const std::string& caffemodel_path,
                    const CaffeImportOptions& options, Graph* graph) {
  caffe::NetParameter net, weights;
  Status s = read_prototxt(prototxt_path, &net);
  if (s.ok() && !caffemodel_path.empty()) s = read_caffemodel(caffemodel_path, &weights);
  if (!s.ok()) return s;
  Graph g;
  s = Importer(prototxt_path, options, &g).run(net, weights);
  if (!s.ok()) return s;
  *graph = std::move(g);
  return Status::Ok();
}

Status import_caffe_bytes(const std::string& prototxt_text, const void* caffemodel, size_t caffemodel_size,
                          const CaffeImportOptions& options, Graph* graph) {
  const std::string name = "<prototxt>";
  caffe::NetParameter net, weights;
  Status s = parse_prototxt(prototxt_text, name, &net);
  if (!s.ok()) return s;
  if (caffemodel_size > static_cast<size_t>(INT_MAX)) return Status(ErrorCode::kUnsupported, "caffemodel over 2 GiB");
  if (caffemodel_size > 0) {
    google::protobuf::io::ArrayInputStream in(caffemodel, static_cast<int>(caffemodel_size));
    if (!parse_caffemodel(&in, &weights)) {
      return Status(ErrorCode::kCorruptModel, "<caffemodel>: not a valid caffemodel (binary NetParameter)");
    }
  }
  Graph g;
  s = Importer(name, options, &g).run(net, weights);
  if (!s.ok()) return s;
  *graph = std::move(g);
  return Status::Ok();
}

}  // namespace kestrel::convert
