// A small prototxt reader and the checks that compare zoo layers with Caffe layers.
#pragma once
#include <doctest/doctest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace zt {

namespace fb = kestrel::fb;

// ---- a small prototxt reader --------------------------------------------------------
// Text format as Caffe writes it: `key: value` pairs (values bare words, numbers or
// quoted strings), nested `key { ... }` blocks (optionally `key: { ... }`), `key: [a, b]`
// lists, comments from '#' to the end of the line.

struct PtNode {
  std::vector<std::pair<std::string, std::string>> values;
  std::vector<std::pair<std::string, PtNode>> blocks;

  std::vector<std::string> all(const std::string& key) const {
    std::vector<std::string> r;
    for (const auto& kv : values) {
      if (kv.first == key) r.push_back(kv.second);
    }
    return r;
  }
  bool has(const std::string& key) const { return !all(key).empty(); }
  // The single value of `key`, or `fallback` when absent; a repeated key is an error.
  std::string get(const std::string& key, const std::string& fallback = "") const {
    const std::vector<std::string> v = all(key);
    if (v.size() > 1) throw std::runtime_error("field '" + key + "' is repeated");
    return v.empty() ? fallback : v[0];
  }
  std::vector<const PtNode*> children(const std::string& key) const {
    std::vector<const PtNode*> r;
    for (const auto& kb : blocks) {
      if (kb.first == key) r.push_back(&kb.second);
    }
    return r;
  }
  // The single block `key`, or nullptr when absent.
  const PtNode* child(const std::string& key) const {
    const std::vector<const PtNode*> c = children(key);
    if (c.size() > 1) throw std::runtime_error("block '" + key + "' is repeated");
    return c.empty() ? nullptr : c[0];
  }
};

class PrototxtParser {
 public:
  explicit PrototxtParser(std::string text) : text_(std::move(text)) {}

  PtNode parse() {
    PtNode root;
    parse_fields(&root, /*nested=*/false);
    return root;
  }

 private:
  struct Token {
    enum Kind { kEnd, kWord, kString, kPunct } kind = kEnd;
    std::string text;
  };

  [[noreturn]] void fail(const std::string& what) const {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) line += text_[i] == '\n' ? 1 : 0;
    throw std::runtime_error("prototxt line " + std::to_string(line) + ": " + what);
  }

  void skip_space_and_comments() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  Token next() {
    skip_space_and_comments();
    Token t;
    if (pos_ >= text_.size()) return t;
    const char c = text_[pos_];
    if (c == '{' || c == '}' || c == ':' || c == '[' || c == ']' || c == ',' || c == ';') {
      ++pos_;
      t.kind = Token::kPunct;
      t.text = std::string(1, c);
      return t;
    }
    if (c == '"' || c == '\'') {
      ++pos_;
      t.kind = Token::kString;
      while (true) {
        if (pos_ >= text_.size()) fail("unterminated string");
        const char s = text_[pos_++];
        if (s == c) break;
        if (s == '\\') {
          if (pos_ >= text_.size()) fail("unterminated escape");
          const char e = text_[pos_++];
          t.text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
          t.text += s;
        }
      }
      return t;
    }
    t.kind = Token::kWord;
    while (pos_ < text_.size()) {
      const char w = text_[pos_];
      if (std::isalnum(static_cast<unsigned char>(w)) || w == '_' || w == '.' || w == '-' || w == '+' || w == '/') {
        t.text += w;
        ++pos_;
      } else {
        break;
      }
    }
    if (t.text.empty()) fail(std::string("unexpected character '") + c + "'");
    return t;
  }

  Token peek() {
    const size_t saved = pos_;
    Token t = next();
    pos_ = saved;
    return t;
  }

  static bool is(const Token& t, const char* punct) { return t.kind == Token::kPunct && t.text == punct; }

  std::string scalar() {
    const Token v = next();
    if (v.kind != Token::kWord && v.kind != Token::kString) fail("expected a value");
    return v.text;
  }

  void parse_fields(PtNode* node, bool nested) {
    while (true) {
      Token key = next();
      if (key.kind == Token::kEnd) {
        if (nested) fail("missing '}'");
        return;
      }
      if (is(key, "}")) {
        if (!nested) fail("unbalanced '}'");
        return;
      }
      if (is(key, ";") || is(key, ",")) continue;  // optional separators
      if (key.kind != Token::kWord) fail("expected a field name, got '" + key.text + "'");
      Token t = peek();
      if (is(t, ":")) {
        next();
        t = peek();
      }
      if (is(t, "{")) {
        next();
        PtNode child;
        parse_fields(&child, /*nested=*/true);
        node->blocks.emplace_back(key.text, std::move(child));
      } else if (is(t, "[")) {
        next();
        if (is(peek(), "]")) {
          next();
          continue;
        }
        while (true) {
          node->values.emplace_back(key.text, scalar());
          const Token sep = next();
          if (is(sep, "]")) break;
          if (!is(sep, ",")) fail("expected ',' or ']' in a list");
        }
      } else {
        node->values.emplace_back(key.text, scalar());
      }
    }
  }

  std::string text_;
  size_t pos_ = 0;
};

inline PtNode read_prototxt(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return PrototxtParser(ss.str()).parse();
  } catch (const std::exception& e) {
    FAIL(path << ": " << e.what());
  }
  return PtNode();
}

inline int to_int(const std::string& s) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  REQUIRE_MESSAGE((end && *end == '\0' && !s.empty()), "not an integer: '" << s << "'");
  return static_cast<int>(v);
}

inline float to_float(const std::string& s) {
  char* end = nullptr;
  const float v = std::strtof(s.c_str(), &end);
  REQUIRE_MESSAGE((end && *end == '\0' && !s.empty()), "not a number: '" << s << "'");
  return v;
}

inline bool to_bool(const std::string& s) {
  REQUIRE_MESSAGE((s == "true" || s == "false"), "not a bool: '" << s << "'");
  return s == "true";
}

inline std::vector<float> to_floats(const std::vector<std::string>& v) {
  std::vector<float> r;
  for (const std::string& s : v) r.push_back(to_float(s));
  return r;
}

inline int int_field(const PtNode* n, const std::string& key, int fallback) {
  return n && n->has(key) ? to_int(n->get(key)) : fallback;
}
inline float float_field(const PtNode* n, const std::string& key, float fallback) {
  return n && n->has(key) ? to_float(n->get(key)) : fallback;
}
inline bool bool_field(const PtNode* n, const std::string& key, bool fallback) {
  return n && n->has(key) ? to_bool(n->get(key)) : fallback;
}

// Caffe's repeated-or-split spatial fields: `kernel_size: 3` (or two values, h then w)
// or `kernel_h` / `kernel_w`.
inline std::pair<int, int> spatial(const PtNode* p, const std::string& both, const std::string& h, const std::string& w,
                            int fallback) {
  if (p && (p->has(h) || p->has(w))) return {int_field(p, h, fallback), int_field(p, w, fallback)};
  const std::vector<std::string> v = p ? p->all(both) : std::vector<std::string>();
  if (v.empty()) return {fallback, fallback};
  if (v.size() == 1) return {to_int(v[0]), to_int(v[0])};
  REQUIRE(v.size() == 2);
  return {to_int(v[0]), to_int(v[1])};
}

// ---- the zoo model, read back from its serialized bytes ------------------------------

struct ZooModel {
  std::vector<uint8_t> bytes;
  const fb::Model* model = nullptr;
  std::map<std::string, const fb::Layer*> layers;

  explicit ZooModel(const kestrel::ModelBuilder& b) : bytes(b.serialize()) {
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    REQUIRE(fb::VerifyModelBuffer(verifier));
    model = fb::GetModel(bytes.data());
    REQUIRE(model->layers() != nullptr);
    for (const fb::Layer* l : *model->layers()) {
      CHECK_MESSAGE(layers.emplace(l->name()->str(), l).second, "layer name used twice: " << l->name()->str());
    }
  }

  std::string blob(uint32_t index) const {
    REQUIRE(index < model->blobs()->size());
    return model->blobs()->Get(index)->name()->str();
  }
  std::vector<std::string> blobs(const flatbuffers::Vector<uint32_t>* v) const {
    std::vector<std::string> r;
    if (v) {
      for (uint32_t i : *v) r.push_back(blob(i));
    }
    return r;
  }
  const fb::Weight* weight(const fb::Layer* l, size_t i) const {
    REQUIRE(l->weights() != nullptr);
    REQUIRE(i < l->weights()->size());
    return model->weights()->Get(l->weights()->Get(static_cast<flatbuffers::uoffset_t>(i)));
  }
};

template <typename T>
inline std::vector<T> vec(const flatbuffers::Vector<T>* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>();
}

inline const std::set<std::string>& compared_types() {
  static const std::set<std::string> types = {"Convolution", "Pooling", "Softmax",  "Permute",        "Flatten",
                                              "PriorBox",    "Concat",  "Reshape", "DetectionOutput"};
  return types;
}

// Layers Kestrel folds into the preceding convolution (they must run in place).
inline const std::set<std::string>& folded_types() {
  static const std::set<std::string> types = {"BatchNorm", "Scale", "ReLU"};
  return types;
}

inline void check_convolution(const ZooModel& zoo, const fb::Layer* zl, const PtNode& cl,
                       const std::set<std::string>& folded_on_top) {
  const fb::ConvolutionParam* z = zl->params_as_ConvolutionParam();
  REQUIRE(z != nullptr);
  const PtNode* p = cl.child("convolution_param");
  REQUIRE(p != nullptr);
  const int num_output = to_int(p->get("num_output"));
  const auto kernel = spatial(p, "kernel_size", "kernel_h", "kernel_w", 1);
  const auto stride = spatial(p, "stride", "stride_h", "stride_w", 1);
  const auto pad = spatial(p, "pad", "pad_h", "pad_w", 0);
  const auto dilation = spatial(p, "dilation", "dilation_h", "dilation_w", 1);
  const int group = int_field(p, "group", 1);
  const bool caffe_bias = bool_field(p, "bias_term", true);

  CHECK(z->num_output() == num_output);
  CHECK(z->kernel_h() == kernel.first);
  CHECK(z->kernel_w() == kernel.second);
  CHECK(z->stride_h() == stride.first);
  CHECK(z->stride_w() == stride.second);
  CHECK(z->pad_top() == pad.first);
  CHECK(z->pad_bottom() == pad.first);
  CHECK(z->pad_left() == pad.second);
  CHECK(z->pad_right() == pad.second);
  CHECK(z->pad_mode() == fb::PadMode::Explicit);
  CHECK(z->dilation_h() == dilation.first);
  CHECK(z->dilation_w() == dilation.second);
  CHECK(z->group() == group);
  // A Caffe bias must survive; a folded BatchNorm / Scale adds one where Caffe has none.
  if (caffe_bias || folded_on_top.count("BatchNorm") || folded_on_top.count("Scale")) CHECK(z->bias_term());
  // ReLU is fused exactly where Caffe applies one to this convolution's output.
  const bool relu = folded_on_top.count("ReLU") > 0;
  const fb::ActivationType act = z->activation() ? z->activation()->type() : fb::ActivationType::None;
  CHECK(act == (relu ? fb::ActivationType::ReLU : fb::ActivationType::None));

  // Weights laid out as the schema documents: [out, in/group, kh, kw] (+ [out] bias).
  REQUIRE(zl->weights() != nullptr);
  REQUIRE(zl->weights()->size() == (z->bias_term() ? 2u : 1u));
  const std::vector<int> ws = vec(zoo.weight(zl, 0)->shape());
  REQUIRE(ws.size() == 4);
  CHECK(ws[0] == num_output);
  CHECK(ws[2] == kernel.first);
  CHECK(ws[3] == kernel.second);
  if (z->bias_term()) CHECK(vec(zoo.weight(zl, 1)->shape()) == std::vector<int>{num_output});
}

inline void check_pooling(const fb::Layer* zl, const PtNode& cl) {
  const fb::PoolingParam* z = zl->params_as_PoolingParam();
  REQUIRE(z != nullptr);
  const PtNode* p = cl.child("pooling_param");
  const std::string pool = p ? p->get("pool", "MAX") : "MAX";
  REQUIRE((pool == "MAX" || pool == "AVE"));
  CHECK(z->pool() == (pool == "MAX" ? fb::PoolType::Max : fb::PoolType::Average));
  const bool global = bool_field(p, "global_pooling", false);
  CHECK(z->global() == global);
  if (!global) {
    const auto kernel = spatial(p, "kernel_size", "kernel_h", "kernel_w", 1);
    const auto stride = spatial(p, "stride", "stride_h", "stride_w", 1);
    const auto pad = spatial(p, "pad", "pad_h", "pad_w", 0);
    CHECK(z->kernel_h() == kernel.first);
    CHECK(z->kernel_w() == kernel.second);
    CHECK(z->stride_h() == stride.first);
    CHECK(z->stride_w() == stride.second);
    CHECK(z->pad_top() == pad.first);
    CHECK(z->pad_bottom() == pad.first);
    CHECK(z->pad_left() == pad.second);
    CHECK(z->pad_right() == pad.second);
    CHECK(z->round_mode() == fb::RoundMode::Ceil);  // Caffe always rounds up
    CHECK(z->count_include_pad());
  }
}

inline void check_priorbox(const fb::Layer* zl, const PtNode& cl) {
  const fb::PriorBoxParam* z = zl->params_as_PriorBoxParam();
  REQUIRE(z != nullptr);
  const PtNode* p = cl.child("prior_box_param");
  REQUIRE(p != nullptr);
  CHECK(vec(z->min_sizes()) == to_floats(p->all("min_size")));
  CHECK(vec(z->max_sizes()) == to_floats(p->all("max_size")));
  CHECK(vec(z->aspect_ratios()) == to_floats(p->all("aspect_ratio")));
  CHECK(z->flip() == bool_field(p, "flip", true));
  CHECK(z->clip() == bool_field(p, "clip", false));
  CHECK(vec(z->variances()) == to_floats(p->all("variance")));
  CHECK(z->offset() == float_field(p, "offset", 0.5f));
  const int img = int_field(p, "img_size", 0);
  CHECK(z->image_h() == int_field(p, "img_h", img));
  CHECK(z->image_w() == int_field(p, "img_w", img));
  const float step = float_field(p, "step", 0.f);
  CHECK(z->step_h() == float_field(p, "step_h", step));
  CHECK(z->step_w() == float_field(p, "step_w", step));
}

inline void check_detection_output(const fb::Layer* zl, const PtNode& cl) {
  const fb::DetectionOutputParam* z = zl->params_as_DetectionOutputParam();
  REQUIRE(z != nullptr);
  const PtNode* p = cl.child("detection_output_param");
  REQUIRE(p != nullptr);
  const PtNode* nms = p->child("nms_param");
  CHECK(z->num_classes() == to_int(p->get("num_classes")));
  CHECK(z->share_location() == bool_field(p, "share_location", true));
  CHECK(z->background_label_id() == int_field(p, "background_label_id", 0));
  CHECK(z->nms_threshold() == float_field(nms, "nms_threshold", 0.3f));
  CHECK(z->top_k() == int_field(nms, "top_k", -1));
  CHECK(z->keep_top_k() == int_field(p, "keep_top_k", -1));
  CHECK(z->confidence_threshold() == float_field(p, "confidence_threshold", 0.f));
  CHECK(z->variance_encoded_in_target() == bool_field(p, "variance_encoded_in_target", false));
  const std::string code = p->get("code_type", "CORNER");
  const std::map<std::string, fb::CodeType> codes = {
      {"CORNER", fb::CodeType::Corner}, {"CENTER_SIZE", fb::CodeType::CenterSize}, {"CORNER_SIZE", fb::CodeType::CornerSize}};
  REQUIRE(codes.count(code) == 1);
  CHECK(z->code_type() == codes.at(code));
}

inline void check_params(const ZooModel& zoo, const fb::Layer* zl, const PtNode& cl, const std::string& type,
                  const std::set<std::string>& folded_on_top) {
  if (type == "Convolution") {
    check_convolution(zoo, zl, cl, folded_on_top);
  } else if (type == "Pooling") {
    check_pooling(zl, cl);
  } else if (type == "Softmax") {
    const fb::SoftmaxParam* z = zl->params_as_SoftmaxParam();
    REQUIRE(z != nullptr);
    CHECK(z->axis() == int_field(cl.child("softmax_param"), "axis", 1) - 1);
  } else if (type == "Permute") {
    const fb::PermuteParam* z = zl->params_as_PermuteParam();
    REQUIRE(z != nullptr);
    const PtNode* p = cl.child("permute_param");
    REQUIRE(p != nullptr);
    std::vector<int> order;
    for (const std::string& s : p->all("order")) order.push_back(to_int(s));
    REQUIRE(!order.empty());
    REQUIRE(order[0] == 0);  // the batch stays first
    std::vector<int> expected;
    for (size_t i = 1; i < order.size(); ++i) expected.push_back(order[i] - 1);
    CHECK(vec(z->order()) == expected);
  } else if (type == "Flatten") {
    // Kestrel's Flatten takes everything after the batch: Caffe's default axes.
    const PtNode* p = cl.child("flatten_param");
    CHECK(int_field(p, "axis", 1) == 1);
    CHECK(int_field(p, "end_axis", -1) == -1);
    CHECK(zl->params_type() == fb::LayerParams::FlattenParam);
  } else if (type == "PriorBox") {
    check_priorbox(zl, cl);
  } else if (type == "Concat") {
    const fb::ConcatParam* z = zl->params_as_ConcatParam();
    REQUIRE(z != nullptr);
    CHECK(z->axis() == int_field(cl.child("concat_param"), "axis", 1) - 1);
  } else if (type == "Reshape") {
    const fb::ReshapeParam* z = zl->params_as_ReshapeParam();
    REQUIRE(z != nullptr);
    const PtNode* p = cl.child("reshape_param");
    REQUIRE(p != nullptr);
    CHECK(int_field(p, "axis", 0) == 0);
    CHECK(int_field(p, "num_axes", -1) == -1);
    const PtNode* shape = p->child("shape");
    REQUIRE(shape != nullptr);
    std::vector<int> dims;
    for (const std::string& s : shape->all("dim")) dims.push_back(to_int(s));
    REQUIRE(!dims.empty());
    CHECK((dims[0] == 0 || dims[0] == 1));  // the batch dimension is kept
    CHECK(vec(z->shape()) == std::vector<int>(dims.begin() + 1, dims.end()));
  } else if (type == "DetectionOutput") {
    check_detection_output(zl, cl);
  } else {
    FAIL("no parameter comparison for " << type);
  }
}

// The Caffe net's input (name and dims with batch) from `input:` + `input_dim:` or
// `input_shape { dim }`.
inline std::pair<std::string, std::vector<int>> caffe_input(const PtNode& net) {
  const std::vector<std::string> names = net.all("input");
  REQUIRE(names.size() == 1);
  std::vector<int> dims;
  for (const std::string& d : net.all("input_dim")) dims.push_back(to_int(d));
  if (const PtNode* shape = net.child("input_shape")) {
    for (const std::string& d : shape->all("dim")) dims.push_back(to_int(d));
  }
  return {names[0], dims};
}

inline void compare_with_caffe(const kestrel::ModelBuilder& builder, const std::string& prototxt) {
  const PtNode net = read_prototxt(prototxt);
  const ZooModel zoo(builder);
  const std::vector<const PtNode*> caffe_layers = net.children("layer");
  REQUIRE(!caffe_layers.empty());

  // Folded layers: each must run in place on a convolution's output.
  std::map<std::string, std::set<std::string>> folded;  // blob -> folded types applied to it
  std::map<std::string, std::string> caffe_type_of;      // compared layers by name
  std::set<std::string> all_bottoms, all_tops;
  for (const PtNode* cl : caffe_layers) {
    const std::string name = cl->get("name");
    const std::string type = cl->get("type");
    CAPTURE(name);
    const std::vector<std::string> bottoms = cl->all("bottom"), tops = cl->all("top");
    for (const std::string& b : bottoms) all_bottoms.insert(b);
    for (const std::string& t : tops) all_tops.insert(t);
    if (folded_types().count(type)) {
      REQUIRE(bottoms.size() == 1);
      REQUIRE(tops.size() == 1);
      CHECK_MESSAGE(bottoms[0] == tops[0], type << " layer is not in place, so it cannot be folded");
      if (type == "ReLU") CHECK(float_field(cl->child("relu_param"), "negative_slope", 0.f) == 0.f);
      folded[tops[0]].insert(type);
    } else {
      REQUIRE_MESSAGE(compared_types().count(type) == 1, "Caffe layer type " << type << " is not covered");
      CHECK_MESSAGE(caffe_type_of.emplace(name, type).second, "Caffe layer name used twice");
    }
  }

  int compared = 0;
  for (const PtNode* cl : caffe_layers) {
    const std::string name = cl->get("name");
    const std::string type = cl->get("type");
    if (!compared_types().count(type)) continue;
    CAPTURE(name);
    CAPTURE(type);
    auto it = zoo.layers.find(name);
    REQUIRE_MESSAGE(it != zoo.layers.end(), "the zoo has no layer " << name);
    const fb::Layer* zl = it->second;
    CHECK(zl->type()->str() == type);
    CHECK(zoo.blobs(zl->bottoms()) == cl->all("bottom"));
    CHECK(zoo.blobs(zl->tops()) == cl->all("top"));
    std::set<std::string> folded_on_top;
    for (const std::string& t : cl->all("top")) {
      if (folded.count(t)) folded_on_top = folded.at(t);
    }
    if (type != "Convolution") CHECK_MESSAGE(folded_on_top.empty(), "folded layers on a non-convolution");
    check_params(zoo, zl, *cl, type, folded_on_top);
    ++compared;
  }

  // No extras: every zoo layer is one of the Caffe layers compared above.
  for (const auto& kv : zoo.layers) {
    CAPTURE(kv.first);
    auto it = caffe_type_of.find(kv.first);
    CHECK_MESSAGE(it != caffe_type_of.end(), "zoo layer " << kv.first << " has no Caffe counterpart");
    if (it != caffe_type_of.end()) CHECK(kv.second->type()->str() == it->second);
  }
  CHECK(zoo.layers.size() == static_cast<size_t>(compared));

  // Input: same name, same dims without the batch.
  const auto input = caffe_input(net);
  REQUIRE(input.second.size() == 4);
  CHECK(input.second[0] == 1);
  REQUIRE(zoo.model->inputs() != nullptr);
  REQUIRE(zoo.model->inputs()->size() == 1);
  const fb::Input* zin = zoo.model->inputs()->Get(0);
  CHECK(zoo.blob(zin->blob()) == input.first);
  CHECK(vec(zin->shape()) == std::vector<int>(input.second.begin() + 1, input.second.end()));

  // Outputs: the Caffe blobs nothing reads.
  std::set<std::string> caffe_outputs;
  for (const std::string& t : all_tops) {
    if (!all_bottoms.count(t)) caffe_outputs.insert(t);
  }
  const std::vector<std::string> zoo_outputs = zoo.blobs(zoo.model->outputs());
  CHECK(std::set<std::string>(zoo_outputs.begin(), zoo_outputs.end()) == caffe_outputs);
  CHECK(zoo_outputs.size() == caffe_outputs.size());
}

// The Caffe definitions live in the shared data beside the repository; a user's clone
// has none.
inline bool have_caffe_models(std::string* dir) {
  *dir = kt::shared_dir() + "/models/caffe";
  return std::filesystem::is_directory(*dir);
}

}  // namespace zt
