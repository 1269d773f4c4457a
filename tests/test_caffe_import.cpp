// Caffe front end: input declarations, the legacy V1 format, in-place renaming,
// weight handling and checks, error messages, and the kestrel-convert tool's
// all-or-nothing output. Prototxts are written as text, caffemodels with the
// generated caffe:: classes, both into a fresh temporary directory.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "caffe/caffe_import.h"
#include "graph/graph.h"
#include "graph_run.h"
#include "kestrel/net.h"

namespace {

namespace fs = std::filesystem;
namespace kc = kestrel::convert;
using kestrel::ErrorCode;
using kestrel::Status;

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "kestrel_caffe_XXXXXX").string();
    REQUIRE(mkdtemp(templ.data()) != nullptr);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

struct BlobSpec {
  std::vector<int> shape;
  std::vector<float> values;
  bool legacy = false;  // num/channels/height/width instead of shape
};

void fill_blob(caffe::BlobProto* b, const BlobSpec& spec) {
  if (spec.legacy) {
    std::vector<int> s(4 - spec.shape.size(), 1);
    s.insert(s.end(), spec.shape.begin(), spec.shape.end());
    b->set_num(s[0]), b->set_channels(s[1]), b->set_height(s[2]), b->set_width(s[3]);
  } else {
    for (int d : spec.shape) b->mutable_shape()->add_dim(d);
  }
  for (float v : spec.values) b->add_data(v);
}

// A caffemodel: layer name -> blobs, in the current or the legacy V1 format.
void write_caffemodel(const std::string& path, const std::map<std::string, std::vector<BlobSpec>>& layers,
                      bool v1 = false) {
  caffe::NetParameter net;
  for (const auto& [name, blobs] : layers) {
    if (v1) {
      caffe::V1LayerParameter* l = net.add_layers();
      l->set_name(name);
      for (const BlobSpec& b : blobs) fill_blob(l->add_blobs(), b);
    } else {
      caffe::LayerParameter* l = net.add_layer();
      l->set_name(name);
      for (const BlobSpec& b : blobs) fill_blob(l->add_blobs(), b);
    }
  }
  std::ofstream f(path, std::ios::binary);
  REQUIRE(net.SerializeToOstream(&f));
}

std::vector<float> ramp(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

// One test's files and conversion.
struct Case {
  TempDir dir;
  std::string prototxt = dir.file("deploy.prototxt");
  std::string caffemodel = dir.file("net.caffemodel");

  Status import(const std::string& text, const std::map<std::string, std::vector<BlobSpec>>& weights, kc::Graph* g,
                const kc::CaffeImportOptions& options = {}, bool v1 = false) {
    write_text(prototxt, text);
    write_caffemodel(caffemodel, weights, v1);
    return kc::import_caffe(prototxt, caffemodel, options, g);
  }
};

using kt::run_graph;

const kc::Node* node_named(const kc::Graph& g, const std::string& name) {
  for (const kc::Node& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kReluNet = R"(
layer { name: "relu" type: "ReLU" bottom: "data" top: "out" }
)";

}  // namespace

TEST_SUITE("caffe_import") {
  TEST_CASE("inputs declared with input + input_dim") {
    Case c;
    kc::Graph g;
    const Status s = c.import(std::string("input: \"data\"\ninput_dim: 1\ninput_dim: 3\ninput_dim: 5\ninput_dim: 7\n") +
                                  kReluNet,
                              {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    REQUIRE(g.inputs.size() == 1);
    CHECK(g.inputs[0].name == "data");
    CHECK(g.inputs[0].shape == std::vector<int>{3, 5, 7});
    CHECK(g.outputs == std::vector<std::string>{"out"});
  }

  TEST_CASE("inputs declared with input + input_shape") {
    Case c;
    kc::Graph g;
    const Status s =
        c.import(std::string("input: \"data\"\ninput_shape { dim: 1 dim: 2 dim: 4 dim: 4 }\n") + kReluNet, {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(g.inputs[0].shape == std::vector<int>{2, 4, 4});
  }

  TEST_CASE("inputs declared by an Input layer, one shape for two tops") {
    Case c;
    kc::Graph g;
    const Status s = c.import(R"(
layer { name: "in" type: "Input" top: "a" top: "b" input_param { shape { dim: 1 dim: 3 dim: 2 dim: 2 } } }
layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "sum" }
)",
                              {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    REQUIRE(g.inputs.size() == 2);
    CHECK(g.inputs[1].name == "b");
    CHECK(g.inputs[1].shape == std::vector<int>{3, 2, 2});
    std::map<std::string, kestrel::Shape> shapes;
    CHECK(kc::infer_shapes(g, &shapes).ok());
  }

  TEST_CASE("input shape overrides, batch and unknown names") {
    Case c;
    kc::Graph g;
    const std::string net = std::string("input: \"data\"\ninput_shape { dim: 1 dim: 3 dim: 8 dim: 8 }\n") + kReluNet;
    kc::CaffeImportOptions options;
    options.input_shapes = {{"data", {1, 3, 16, 12}}};
    REQUIRE(c.import(net, {}, &g, options).ok());
    CHECK(g.inputs[0].shape == std::vector<int>{3, 16, 12});

    options.input_shapes = {{"data", {2, 3, 16, 12}}};
    Status s = c.import(net, {}, &g, options);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK(contains(s.message(), "batch 2"));

    options.input_shapes = {{"image", {1, 3, 16, 12}}};
    s = c.import(net, {}, &g, options);
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "'image'"));

    s = c.import(std::string("input: \"data\"\ninput_dim: 4\ninput_dim: 3\ninput_dim: 8\ninput_dim: 8\n") + kReluNet,
                 {}, &g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK(contains(s.message(), "batch 4"));
  }

  TEST_CASE("legacy V1 layers and legacy 4-D blobs") {
    Case c;
    kc::Graph g;
    const std::vector<float> w = {1.f, -2.f, 0.5f, 0.25f, 1.f, -1.f};  // [2,3,1,1]
    const std::vector<float> b = {0.5f, -4.f};
    const Status s = c.import(R"(
name: "old"
input: "data"
input_dim: 1 input_dim: 3 input_dim: 1 input_dim: 2
layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1" convolution_param { num_output: 2 kernel_size: 1 } }
layers { name: "relu1" type: RELU bottom: "conv1" top: "conv1" }
)",
                              {{"conv1", {{{2, 3, 1, 1}, w, true}, {{2}, b, true}}}}, &g, {}, true);
    REQUIRE_MESSAGE(s.ok(), s.message());
    REQUIRE(g.nodes.size() == 2);
    CHECK(g.nodes[0].type == "Convolution");
    CHECK(g.nodes[0].weights[0].shape == std::vector<int>{2, 3, 1, 1});
    CHECK(g.nodes[1].type == "Activation");
    // x: channel-major [3][1][2].
    const std::vector<float> x = {1.f, 2.f, 3.f, -1.f, 0.f, 4.f};
    const std::vector<float> y = run_graph(g, x, "conv1");
    REQUIRE(y.size() == 4);
    for (int o = 0; o < 2; ++o) {
      for (int p = 0; p < 2; ++p) {
        float v = b[o];
        for (int i = 0; i < 3; ++i) v += w[o * 3 + i] * x[i * 2 + p];
        CHECK(y[o * 2 + p] == doctest::Approx(std::max(v, 0.f)));
      }
    }
  }

  TEST_CASE("in-place layers: one producer per blob, the last version keeps the name") {
    Case c;
    kc::Graph g;
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 2 dim: 4 dim: 4 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 2 kernel_size: 3 pad: 1 } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
)",
                              {{"conv1", {{{2, 2, 3, 3}, ramp(36, -1.f, 0.05f)}, {{2}, {0.1f, 0.2f}}}},
                               {"bn1", {{{2}, {0.f, 1.f}}, {{2}, {1.f, 2.f}}, {{1}, {1.f}}}},
                               {"scale1", {{{2}, {1.f, 2.f}}, {{2}, {0.f, 1.f}}}}},
                              &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    REQUIRE(g.nodes.size() == 5);
    CHECK(g.nodes[0].outputs[0] == "conv1#conv1");
    CHECK(g.nodes[1].inputs[0] == "conv1#conv1");
    CHECK(g.nodes[1].outputs[0] == "conv1#bn1");
    CHECK(g.nodes[2].outputs[0] == "conv1#scale1");
    CHECK(g.nodes[3].inputs[0] == "conv1#scale1");
    CHECK(g.nodes[3].outputs[0] == "conv1");
    CHECK(g.nodes[4].inputs[0] == "conv1");
    CHECK(g.outputs == std::vector<std::string>{"pool1"});
    for (const kc::Node& n : g.nodes) CHECK(g.producer(n.outputs[0]) == &n - g.nodes.data());
    std::map<std::string, kestrel::Shape> shapes;
    const Status si = kc::infer_shapes(g, &shapes);
    CHECK_MESSAGE(si.ok(), si.message());
  }

  TEST_CASE("BatchNorm divides mean and variance by the moving-average factor") {
    Case c;
    kc::Graph g;
    const float factor = 7.5f;
    const std::vector<float> mean = {0.3f, -0.7f}, var = {2.f, 0.5f};
    std::vector<float> mean_sum, var_sum;
    for (int i = 0; i < 2; ++i) mean_sum.push_back(mean[i] * factor), var_sum.push_back(var[i] * factor);
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 2 dim: 1 dim: 3 }
layer { name: "bn1" type: "BatchNorm" bottom: "data" top: "bn1" batch_norm_param { eps: 0.001 } }
layer { name: "bn2" type: "BatchNorm" bottom: "bn1" top: "bn2" batch_norm_param { eps: 0.25 } }
)",
                              {{"bn1", {{{2}, mean_sum}, {{2}, var_sum}, {{1}, {factor}}}},
                               // A zero factor means no statistics: mean and variance 0.
                               {"bn2", {{{2}, {5.f, 5.f}}, {{2}, {9.f, 9.f}}, {{1}, {0.f}}}}},
                              &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    const std::vector<float> x = {1.f, -2.f, 0.5f, 3.f, 0.f, -1.f};
    const std::vector<float> y1 = run_graph(g, x, "bn1");
    const std::vector<float> y2 = run_graph(g, x, "bn2");
    REQUIRE(y1.size() == 6);
    for (int ch = 0; ch < 2; ++ch) {
      for (int i = 0; i < 3; ++i) {
        const double v = (x[ch * 3 + i] - mean[ch]) / std::sqrt(static_cast<double>(var[ch]) + 0.001);
        CHECK(y1[ch * 3 + i] == doctest::Approx(v).epsilon(1e-5));
        CHECK(y2[ch * 3 + i] == doctest::Approx(v / std::sqrt(0.25)).epsilon(1e-5));
      }
    }
  }

  TEST_CASE("InnerProduct transpose and Power become exact Kestrel nodes") {
    Case c;
    kc::Graph g;
    // Stored transposed: [inputs=3, num_output=2].
    const std::vector<float> wt = {1.f, 4.f, 2.f, 5.f, 3.f, 6.f};
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 3 }
layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
        inner_product_param { num_output: 2 bias_term: false transpose: true } }
layer { name: "pow" type: "Power" bottom: "fc" top: "pow" power_param { power: 2 scale: 0.5 shift: 1 } }
)",
                              {{"fc", {{{3, 2}, wt}}}}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    const std::vector<float> y = run_graph(g, {1.f, -1.f, 2.f}, "pow");
    REQUIRE(y.size() == 2);
    const float fc0 = 1.f - 2.f + 6.f, fc1 = 4.f - 5.f + 12.f;
    CHECK(y[0] == doctest::Approx(std::pow(1.f + 0.5f * fc0, 2.f)));
    CHECK(y[1] == doctest::Approx(std::pow(1.f + 0.5f * fc1, 2.f)));
  }

  TEST_CASE("LRN keeps Caffe's k; a partial Flatten becomes a Reshape") {
    Case c;
    kc::Graph g;
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 3 dim: 1 dim: 2 }
layer { name: "lrn" type: "LRN" bottom: "data" top: "lrn" lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 k: 2 } }
layer { name: "flat" type: "Flatten" bottom: "lrn" top: "flat" flatten_param { axis: 2 } }
)",
                              {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(node_named(g, "flat")->type == "Reshape");
    CHECK(node_named(g, "flat")->params.AsReshapeParam()->shape == std::vector<int>{0, -1});
    const std::vector<float> x = {1.f, -2.f, 0.5f, 3.f, -1.f, 0.25f};
    const std::vector<float> y = run_graph(g, x, "flat");
    REQUIRE(y.size() == 6);
    for (int ch = 0; ch < 3; ++ch) {
      for (int i = 0; i < 2; ++i) {
        double sum = 0;
        for (int n = std::max(0, ch - 1); n <= std::min(2, ch + 1); ++n) sum += x[n * 2 + i] * x[n * 2 + i];
        CHECK(y[ch * 2 + i] == doctest::Approx(x[ch * 2 + i] / std::pow(2.0 + 0.5 / 3 * sum, 0.75)));
      }
    }
  }

  TEST_CASE("SSD-style head: permute, flatten, reshape, softmax, priorbox, detection output") {
    Case c;
    kc::Graph g;
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 3 dim: 8 dim: 8 }
layer { name: "loc" type: "Convolution" bottom: "data" top: "loc" convolution_param { num_output: 8 kernel_size: 1 } }
layer { name: "loc_perm" type: "Permute" bottom: "loc" top: "loc_perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "loc_flat" type: "Flatten" bottom: "loc_perm" top: "loc_flat" flatten_param { axis: 1 } }
layer { name: "conf" type: "Convolution" bottom: "data" top: "conf" convolution_param { num_output: 6 kernel_size: 1 } }
layer { name: "conf_perm" type: "Permute" bottom: "conf" top: "conf_perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "conf_flat" type: "Flatten" bottom: "conf_perm" top: "conf_flat" }
layer { name: "conf_reshape" type: "Reshape" bottom: "conf_flat" top: "conf_reshape" reshape_param { shape { dim: 0 dim: -1 dim: 3 } } }
layer { name: "conf_softmax" type: "Softmax" bottom: "conf_reshape" top: "conf_softmax" softmax_param { axis: 2 } }
layer { name: "conf_out" type: "Flatten" bottom: "conf_softmax" top: "conf_out" }
layer { name: "prior" type: "PriorBox" bottom: "loc" bottom: "data" top: "prior"
        prior_box_param { min_size: 2 max_size: 4 flip: false clip: true variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 } }
layer { name: "det" type: "DetectionOutput" bottom: "loc_flat" bottom: "conf_out" bottom: "prior" top: "det"
        detection_output_param { num_classes: 3 nms_param { nms_threshold: 0.45 top_k: 10 } code_type: CENTER_SIZE keep_top_k: 5 confidence_threshold: 0.1 } }
)",
                              {{"loc", {{{8, 3, 1, 1}, ramp(24, -0.5f, 0.04f)}, {{8}, ramp(8, 0.f, 0.01f)}}},
                               {"conf", {{{6, 3, 1, 1}, ramp(18, 0.3f, -0.03f)}, {{6}, ramp(6, 0.f, 0.1f)}}}},
                              &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    const kc::Node* perm = node_named(g, "loc_perm");
    REQUIRE(perm);
    CHECK(perm->params.AsPermuteParam()->order == std::vector<int>{1, 2, 0});
    CHECK(node_named(g, "conf_reshape")->params.AsReshapeParam()->shape == std::vector<int>{-1, 3});
    CHECK(node_named(g, "conf_softmax")->params.AsSoftmaxParam()->axis == 1);
    const auto* det = node_named(g, "det")->params.AsDetectionOutputParam();
    CHECK(det->code_type == kestrel::fb::CodeType::CenterSize);
    CHECK(det->nms_threshold == doctest::Approx(0.45f));
    CHECK(det->top_k == 10);
    CHECK(g.outputs == std::vector<std::string>{"det"});
    std::map<std::string, kestrel::Shape> shapes;
    const Status si = kc::infer_shapes(g, &shapes);
    CHECK_MESSAGE(si.ok(), si.message());
  }

  // OpenCV 4.6 cannot run these four, so they are checked against hand computation.
  TEST_CASE("Bias, ShuffleChannel, Interp and Upsample compute what Caffe defines") {
    Case c;
    kc::Graph g;
    const std::vector<float> bias = ramp(4, 0.5f, 0.25f);
    const Status s = c.import(R"(
      input: "data" input_shape { dim: 1 dim: 4 dim: 3 dim: 3 }
      layer { name: "bias" type: "Bias" bottom: "data" top: "b" }
      layer { name: "shuf" type: "ShuffleChannel" bottom: "b" top: "s" shuffle_channel_param { group: 2 } }
      layer { name: "interp" type: "Interp" bottom: "s" top: "i" interp_param { height: 6 width: 6 } }
      layer { name: "up" type: "Upsample" bottom: "i" top: "u" upsample_param { scale: 2 } })",
                              {{"bias", {{{4}, bias}}}}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    const std::vector<float> x = ramp(36, -2.f, 0.37f);
    const std::vector<float> got = run_graph(g, x, "u");
    REQUIRE(got.size() == 4 * 12 * 12);
    // ShuffleNet's order for 4 channels in 2 groups: 0, 2, 1, 3.
    const int from[4] = {0, 2, 1, 3};
    for (int q = 0; q < 4; ++q) {
      const int src = from[q];
      auto at = [&](int y, int xx) { return x[static_cast<size_t>(src * 9 + y * 3 + xx)] + bias[src]; };
      for (int oy = 0; oy < 12; ++oy) {
        for (int ox = 0; ox < 12; ++ox) {
          // Upsample is nearest by 2; DeepLab's Interp aligns corners: 3 -> 6 maps dst d to d * 2 / 5.
          const float fy = static_cast<float>(oy / 2) * 2.f / 5.f, fx = static_cast<float>(ox / 2) * 2.f / 5.f;
          const int y0 = static_cast<int>(fy), x0 = static_cast<int>(fx);
          const int y1 = std::min(y0 + 1, 2), x1 = std::min(x0 + 1, 2);
          const float ly = fy - static_cast<float>(y0), lx = fx - static_cast<float>(x0);
          const float want = (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) +
                             ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1));
          REQUIRE(got[static_cast<size_t>(q * 144 + oy * 12 + ox)] == doctest::Approx(want).epsilon(1e-5));
        }
      }
    }
  }

  TEST_CASE("layers outside the TEST phase are skipped") {
    Case c;
    kc::Graph g;
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 2 }
layer { name: "train_only" type: "Data" top: "label" include { phase: TRAIN } }
layer { name: "relu" type: "ReLU" bottom: "data" top: "out" }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "out" bottom: "label" top: "loss" exclude { phase: TEST } }
)",
                              {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(g.nodes.size() == 1);
  }

  TEST_CASE("Silence: a deploy net's silenced blobs are its outputs") {
    Case c;
    kc::Graph g;
    // As colorization_deploy_v2 ends: the decoded blob is silenced and read by nothing.
    Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 2 dim: 3 dim: 3 }
layer { name: "relu" type: "ReLU" bottom: "data" top: "class8_ab" }
layer { name: "Silence" type: "Silence" bottom: "class8_ab" }
)",
                        {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(g.outputs == std::vector<std::string>{"class8_ab"});
    CHECK(g.nodes.size() == 1);

    // A silenced blob that another layer also reads is an output beside the net's end;
    // a blob only read by later layers is not.
    s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 2 dim: 3 dim: 3 }
layer { name: "relu" type: "ReLU" bottom: "data" top: "mid" }
layer { name: "sig" type: "Sigmoid" bottom: "mid" top: "end" }
layer { name: "tanh" type: "TanH" bottom: "mid" top: "quiet" }
layer { name: "Silence" type: "Silence" bottom: "mid" bottom: "quiet" }
)",
                 {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(g.outputs == std::vector<std::string>{"mid", "end", "quiet"});

    // Silence on the input alone leaves nothing to compute.
    s = c.import("input: \"data\"\ninput_shape { dim: 1 dim: 2 }\n"
                 "layer { name: \"Silence\" type: \"Silence\" bottom: \"data\" }\n",
                 {}, &g);
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), "no outputs"));
  }

  TEST_CASE("weight errors name the layer, its type and the blob") {
    Case c;
    kc::Graph g;
    const std::string net = R"(
input: "data"
input_shape { dim: 1 dim: 3 dim: 4 dim: 4 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 4 kernel_size: 3 } }
)";
    // 4 * 3 * 3 * 3 = 108 kernel values expected.
    Status s = c.import(net, {{"conv1", {{{107}, ramp(107, 0.f, 0.01f)}, {{4}, ramp(4, 0.f, 1.f)}}}}, &g);
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), "layer 'conv1' (Convolution)"));
    CHECK(contains(s.message(), "blob 0 (kernel)"));

    s = c.import(net, {{"conv1", {{{4, 3, 3, 3}, ramp(108, 0.f, 0.01f)}, {{3}, ramp(3, 0.f, 1.f)}}}}, &g);
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), "blob 1 (bias)"));

    s = c.import(net, {{"conv1", {{{4, 3, 3, 3}, ramp(108, 0.f, 0.01f)}}}}, &g);
    CHECK(contains(s.message(), "has 1 blobs in the caffemodel, expected 2"));

    s = c.import(net, {}, &g);
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), "layer 'conv1' (Convolution): has no weights"));

    // A shape that does not hold its data.
    s = c.import(net, {{"conv1", {{{4, 3, 3, 3}, ramp(100, 0.f, 0.01f)}, {{4}, ramp(4, 0.f, 1.f)}}}}, &g);
    CHECK(contains(s.message(), "blob 0 has 100 values but its shape holds 108"));
  }

  TEST_CASE("prototxt syntax errors report the line") {
    Case c;
    kc::Graph g;
    const Status s = c.import("input: \"data\"\ninput_dim: 1\nlayer { name: \"x\" type: \n", {}, &g);
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK_MESSAGE(contains(s.message(), "deploy.prototxt:4:"), s.message());
  }

  TEST_CASE("unknown fields are ignored") {
    Case c;
    kc::Graph g;
    const Status s = c.import(R"(
input: "data"
input_shape { dim: 1 dim: 2 dim: 3 dim: 3 }
future_net_option: 5
layer { name: "relu" type: "ReLU" bottom: "data" top: "out"
        relu_param { negative_slope: 0.1 engine: CUDNN }
        some_fork_param { value: 1 nested { x: "y" } } }
)",
                              {}, &g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    const auto* act = g.nodes[0].params.AsActivationParam();
    CHECK(act->activation->type == kestrel::fb::ActivationType::LeakyReLU);
    CHECK(act->activation->alpha == doctest::Approx(0.1f));
  }

  TEST_CASE("unsupported layers and parameters name the layer and its type") {
    Case c;
    kc::Graph g;
    const std::string head = "input: \"data\"\ninput_shape { dim: 1 dim: 2 dim: 4 dim: 4 }\n";
    Status s = c.import(head + "layer { name: \"abs1\" type: \"AbsVal\" bottom: \"data\" top: \"abs1\" }", {}, &g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK(contains(s.message(), "layer 'abs1' (AbsVal)"));

    s = c.import(head + "layer { name: \"p\" type: \"Pooling\" bottom: \"data\" top: \"p\" "
                        "pooling_param { pool: STOCHASTIC kernel_size: 2 } }",
                 {}, &g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK(contains(s.message(), "layer 'p' (Pooling): parameter pool = STOCHASTIC is not supported"));

    s = c.import(head + "layer { name: \"perm\" type: \"Permute\" bottom: \"data\" top: \"perm\" "
                        "permute_param { order: 1 order: 0 order: 2 order: 3 } }",
                 {}, &g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK(contains(s.message(), "layer 'perm' (Permute): parameter order"));

    s = c.import(head + "layer { name: \"cat\" type: \"Concat\" bottom: \"data\" bottom: \"data\" top: \"cat\" "
                        "concat_param { axis: 0 } }",
                 {}, &g);
    CHECK(contains(s.message(), "parameter axis = 0 is not supported"));
  }

  TEST_CASE("kestrel-convert writes the model, or nothing on error") {
    Case c;
    const std::string tool = KESTREL_CONVERT_PATH;
    const std::string out = c.dir.file("out.kst");
    auto convert = [&](const std::string& extra) {
      const std::string cmd = "'" + tool + "' caffe '" + c.prototxt + "' '" + c.caffemodel + "' '" + out + "' " +
                              extra + " >/dev/null 2>&1";
      const int r = std::system(cmd.c_str());
      return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
    };
    write_caffemodel(c.caffemodel, {});
    write_text(c.prototxt, std::string("input: \"data\"\ninput_shape { dim: 1 dim: 2 dim: 3 dim: 3 }\n") + kReluNet);
    write_text(out + ".tmp", "stale");
    CHECK(convert("--meta task=test") == 0);
    CHECK(fs::exists(out));
    CHECK_FALSE(fs::exists(out + ".tmp"));
    kestrel::Net net;
    REQUIRE(net.load(out).ok());
    CHECK(net.metadata("task") == "test");
    fs::remove(out);

    write_text(c.prototxt, "input: \"data\"\ninput_shape { dim: 1 dim: 2 dim: 3 dim: 3 }\n"
                           "layer { name: \"abs1\" type: \"AbsVal\" bottom: \"data\" top: \"abs1\" }\n");
    CHECK(convert("") == 1);
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(out + ".tmp"));
    CHECK(convert("--input-shape data=1,x") == 2);
    CHECK(convert("--bogus") == 2);
    CHECK_FALSE(fs::exists(out));
  }
}
