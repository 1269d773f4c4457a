// ONNX front end: models built here with the generated onnx:: classes (hand-computed
// results), ONNX's own backend test models with their expected outputs (Debian's
// libonnx-testdata, skipped when absent), the folding of exporters' flatten/view
// chains, and the error messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph_run.h"
#include "kestrel/net.h"
#include "onnx.pb.h"
#include "onnx/onnx_import.h"

namespace {

namespace fs = std::filesystem;
namespace kc = kestrel::convert;
using kestrel::ErrorCode;
using kestrel::Status;

// ---- building models ----

void set_shape(onnx::ValueInfoProto* v, const std::vector<int64_t>& dims) {
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape();  // a scalar has a shape without dims
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

struct ModelMaker {
  onnx::ModelProto model;
  onnx::GraphProto* g = model.mutable_graph();

  explicit ModelMaker(int opset = 13) {
    model.set_ir_version(8);
    model.add_opset_import()->set_version(opset);
  }
  void input(const std::string& name, const std::vector<int64_t>& dims) {
    auto* v = g->add_input();
    v->set_name(name);
    set_shape(v, dims);
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
  void init(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void init_ints(const std::string& name, const std::vector<int64_t>& values, bool scalar = false) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name = "") {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? out[0] + "_node" : name);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  Status import(kc::Graph* graph, const kc::OnnxImportOptions& options = {}) const {
    const std::string bytes = model.SerializeAsString();
    return kc::import_onnx_bytes(bytes.data(), bytes.size(), options, graph);
  }
};

void attr_int(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void attr_ints(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

using kt::run_graph;

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK_MESSAGE(std::fabs(got[i] - want[i]) <= tol * (1.f + std::fabs(want[i])),
                  "at " << i << ": " << got[i] << " vs " << want[i]);
  }
}

bool has_type(const kc::Graph& g, const std::string& type) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&](const kc::Node& n) { return n.type == type; });
}

// ---- ONNX's backend test data ----

const fs::path kTestData = "/usr/share/libonnx-testdata/data/node";

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<float> read_pb(const fs::path& path) {
  onnx::TensorProto t;
  REQUIRE(t.ParseFromString(read_file(path)));
  std::vector<float> v(t.float_data().begin(), t.float_data().end());
  if (v.empty()) {
    v.resize(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
  }
  return v;
}

void run_test_data(const std::string& name) {
  const fs::path dir = kTestData / name;
  if (!fs::exists(dir / "model.onnx")) {
    MESSAGE("skipped: " << dir << " not installed");
    return;
  }
  // The test models take weights as inputs 1..n; Kestrel needs them constant, so
  // they become initializers with the test data's values.
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(read_file(dir / "model.onnx")));
  for (int i = 1; i < model.graph().input_size(); ++i) {
    onnx::TensorProto* t = model.mutable_graph()->add_initializer();
    REQUIRE(t->ParseFromString(read_file(dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"))));
    t->set_name(model.graph().input(i).name());
  }
  const std::string bytes = model.SerializeAsString();
  kc::Graph g;
  const Status s = kc::import_onnx_bytes(bytes.data(), bytes.size(), {}, &g);
  CHECK_MESSAGE(s.ok(), name << ": " << s.message());
  if (!s.ok()) return;
  const std::vector<float> in = read_pb(dir / "test_data_set_0" / "input_0.pb");
  const std::vector<float> want = read_pb(dir / "test_data_set_0" / "output_0.pb");
  check_close(run_graph(g, in, g.outputs[0]), want);
}

}  // namespace

TEST_SUITE("onnx_import") {
  TEST_CASE("ONNX backend test models match their expected outputs") {
    for (const char* name :
         {"test_basic_conv_with_padding", "test_conv_with_strides_and_asymmetric_padding", "test_maxpool_2d_pads",
          "test_averagepool_2d_pads_count_include_pad", "test_globalaveragepool", "test_convtranspose_pads",
          "test_resize_upsample_scales_linear_align_corners"}) {
      const std::string label = name;
      CAPTURE(label);
      run_test_data(name);
    }
  }

  TEST_CASE("Conv + Add constant + Relu, hand computed") {
    ModelMaker m;
    m.input("x", {1, 1, 2, 2});
    m.init("w", {2, 1, 1, 1}, {1.f, -2.f});
    m.init("b", {2}, {0.5f, 0.f});
    m.init("c", {1, 2, 1, 1}, {1.f, 10.f});
    m.node("Conv", {"x", "w", "b"}, {"conv"});
    m.node("Add", {"conv", "c"}, {"add"});
    m.node("Relu", {"add"}, {"y"});
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(g.inputs[0].shape == std::vector<int>{1, 2, 2});
    // channel 0: x + 0.5 + 1; channel 1: relu(-2x + 10)
    check_close(run_graph(g, {1, 2, 3, 6}, "y"), {2.5f, 3.5f, 4.5f, 7.5f, 8, 6, 4, 0});
  }

  TEST_CASE("Gemm with constant B becomes an InnerProduct") {
    ModelMaker m;
    m.input("x", {1, 3});
    m.init("B", {2, 3}, {1, 2, 3, 4, 5, 6});
    m.init("C", {2}, {1, -1});
    onnx::NodeProto* n = m.node("Gemm", {"x", "B", "C"}, {"y"});
    attr_int(n, "transB", 1);
    m.output("y");
    kc::Graph g;
    REQUIRE(m.import(&g).ok());
    CHECK(has_type(g, "InnerProduct"));
    check_close(run_graph(g, {1, 1, 2}, "y"), {1 + 2 + 6 + 1.f, 4 + 5 + 12 - 1.f});
  }

  TEST_CASE("the exporters' flatten chain folds to a constant Reshape") {
    // x.view(x.size(0), -1): Shape -> Gather(0) -> Unsqueeze -> Concat([n, -1]) -> Reshape.
    ModelMaker m;
    m.input("x", {1, 2, 2, 2});
    m.init_ints("idx0", {0}, /*scalar=*/true);
    m.init_ints("minus1", {-1});
    m.init_ints("ax0", {0});
    m.node("Shape", {"x"}, {"shape"});
    onnx::NodeProto* gather = m.node("Gather", {"shape", "idx0"}, {"n"});
    attr_int(gather, "axis", 0);
    m.node("Unsqueeze", {"n", "ax0"}, {"n1"});
    attr_int(m.node("Concat", {"n1", "minus1"}, {"target"}), "axis", 0);
    m.node("Reshape", {"x", "target"}, {"flat"});
    m.init("s", {}, {2.f});
    m.node("Mul", {"flat", "s"}, {"y"});
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    REQUIRE(g.nodes.size() == 2);
    CHECK(g.nodes[0].type == "Reshape");
    CHECK(g.nodes[0].params.AsReshapeParam()->shape == std::vector<int>{-1});
    check_close(run_graph(g, {1, 2, 3, 4, 5, 6, 7, 8}, "y"), {2, 4, 6, 8, 10, 12, 14, 16});
  }

  TEST_CASE("graph inputs drop a leading 1 from rank 3 on, keep every other shape") {
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> cases = {
        {{1, 3, 4, 4}, {3, 4, 4}}, {{1, 2, 3}, {2, 3}},       {{1, 2, 3, 4, 5}, {2, 3, 4, 5}},
        {{1, 6}, {1, 6}},          {{2, 3}, {2, 3}},          {{5}, {5}},
        {{2, 3, 4, 5}, {2, 3, 4, 5}}};
    for (const auto& [dims, want] : cases) {
      ModelMaker m;
      m.input("x", dims);
      m.node("Relu", {"x"}, {"y"});
      m.output("y");
      kc::Graph g;
      const Status s = m.import(&g);
      REQUIRE_MESSAGE(s.ok(), s.message());
      CHECK(g.inputs[0].shape == want);
    }
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 2, 3, 4, 5}, std::vector<int64_t>{}}) {
      ModelMaker m;
      m.input("x", dims);
      m.node("Relu", {"x"}, {"y"});
      m.output("y");
      kc::Graph g;
      CHECK(m.import(&g).code() == ErrorCode::kUnsupported);
    }
  }

  TEST_CASE("batchless tensors: broadcasting, BatchNormalization as Mul + Add") {
    ModelMaker m(15);
    m.input("x", {2, 3});
    m.init("c", {3}, {1, 10, 100});
    m.init("scale", {3}, {1, 2, 3});
    m.init("bias", {3}, {0, 0, 1});
    m.init("mean", {3}, {0, 0, 0});
    m.init("var", {3}, {1, 1, 1});
    m.node("Mul", {"x", "c"}, {"scaled"});
    m.node("BatchNormalization", {"scaled", "scale", "bias", "mean", "var"}, {"y"});
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(g.inputs[0].shape == std::vector<int>{2, 3});
    CHECK_FALSE(has_type(g, "BatchNorm"));  // dim 0 is not a batch of 1
    check_close(run_graph(g, {1, 2, 3, 4, 5, 6}, "y"), {1, 40, 901, 4, 100, 1801});
  }

  TEST_CASE("Softmax before opset 13 works on the input coerced to 2-D") {
    ModelMaker m(11);
    m.input("x", {2, 2, 2});
    attr_int(m.node("Softmax", {"x"}, {"y"}), "axis", 1);
    m.output("y");
    kc::Graph g;
    REQUIRE(m.import(&g).ok());
    std::vector<float> want;
    for (int row = 0; row < 2; ++row) {
      double sum = 0;
      for (int i = 0; i < 4; ++i) sum += std::exp(static_cast<double>(row * 4 + i));
      for (int i = 0; i < 4; ++i) want.push_back(static_cast<float>(std::exp(static_cast<double>(row * 4 + i)) / sum));
    }
    check_close(run_graph(g, {0, 1, 2, 3, 4, 5, 6, 7}, "y"), want);
  }

  TEST_CASE("batched MatMul with a constant B: one Gemm per batch") {
    ModelMaker m;
    m.input("a", {2, 2, 3});
    std::vector<float> a(12), b(12);
    for (int i = 0; i < 12; ++i) a[i] = static_cast<float>(i + 1), b[i] = static_cast<float>(i % 5) - 2.f;
    m.init("b", {2, 3, 2}, b);
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    std::vector<float> want;
    for (int n = 0; n < 2; ++n) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          float sum = 0;
          for (int k = 0; k < 3; ++k) sum += a[n * 6 + i * 3 + k] * b[n * 6 + k * 2 + j];
          want.push_back(sum);
        }
      }
    }
    check_close(run_graph(g, a, "y"), want);
  }

  TEST_CASE("Gather with constant indices on a run-time tensor") {
    ModelMaker m;
    m.input("x", {3, 2});
    m.init_ints("idx", {2, 0});
    m.node("Gather", {"x", "idx"}, {"y"});
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    REQUIRE_MESSAGE(s.ok(), s.message());
    check_close(run_graph(g, {1, 2, 3, 4, 5, 6}, "y"), {5, 6, 1, 2});
  }

  TEST_CASE("the decomposed GELU becomes one GELU activation") {
    // x * 0.5 * (1 + erf(x / sqrt(2))) in the two association orders exporters write.
    for (bool half_first : {false, true}) {
      ModelMaker m;
      m.input("x", {1, 4});
      m.init("sqrt2", {}, {1.4142135f});
      m.init("one", {}, {1.f});
      m.init("half", {}, {0.5f});
      m.node("Div", {"x", "sqrt2"}, {"d"});
      m.node("Erf", {"d"}, {"e"});
      m.node("Add", {"e", "one"}, {"a"});
      if (half_first) {
        m.node("Mul", {"x", "half"}, {"h"});
        m.node("Mul", {"h", "a"}, {"y"});
      } else {
        m.node("Mul", {"x", "a"}, {"m"});
        m.node("Mul", {"m", "half"}, {"y"});
      }
      m.output("y");
      kc::Graph g;
      const Status s = m.import(&g);
      REQUIRE_MESSAGE(s.ok(), s.message());
      REQUIRE(g.nodes.size() == 1);
      CHECK(g.nodes[0].params.AsActivationParam()->activation->type == kestrel::fb::ActivationType::GELU);
      const std::vector<float> x = {-2.f, -0.5f, 0.5f, 3.f};
      std::vector<float> want;
      for (float v : x) want.push_back(0.5f * v * (1.f + std::erf(v / std::sqrt(2.f))));
      check_close(run_graph(g, x, "y"), want);
    }
    // Erf on its own is not supported.
    ModelMaker m;
    m.input("x", {1, 4});
    m.node("Erf", {"x"}, {"y"}, "erf");
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK_MESSAGE(s.message().find("node 'erf' (Erf, opset 13)") != std::string::npos, s.message());
  }

  TEST_CASE("Resize: a coordinate mapping Interp does not reproduce is refused, naming the difference") {
    ModelMaker m;
    m.input("x", {1, 1, 2, 4});
    m.init_ints("sizes", {1, 1, 1, 3});
    m.node("Resize", {"x", "", "", "sizes"}, {"y"}, "resize");  // nearest, half_pixel, round_prefer_floor
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK_MESSAGE(s.message().find("output column 2 reads input 3, Kestrel's Interp input 2") != std::string::npos,
                  s.message());
  }

  TEST_CASE("symbolic batch is 1; --input-shape fills symbolic dims") {
    ModelMaker m;
    auto* v = m.g->add_input();
    v->set_name("x");
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    t->mutable_shape()->add_dim()->set_dim_value(3);
    t->mutable_shape()->add_dim()->set_dim_param("H");
    t->mutable_shape()->add_dim()->set_dim_param("W");
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(s.message().find("--input-shape") != std::string::npos);
    kc::OnnxImportOptions o;
    o.input_shapes = {{"x", {1, 3, 8, 9}}};
    REQUIRE(m.import(&g, o).ok());
    CHECK(g.inputs[0].shape == std::vector<int>{3, 8, 9});
  }

  TEST_CASE("an unsupported op names the node, op type and opset") {
    ModelMaker m(13);
    m.input("x", {1, 3, 4, 4});
    m.node("Relu", {"x"}, {"r"});
    m.node("LRN", {"r"}, {"y"}, "my_lrn");
    m.output("y");
    kc::Graph g;
    const Status s = m.import(&g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK_MESSAGE(s.message().find("node 'my_lrn' (LRN, opset 13)") != std::string::npos, s.message());
  }

  TEST_CASE("what Kestrel cannot hold is refused, naming the node") {
    // Moving the batch of a 5-D tensor would need 5 Kestrel dims.
    ModelMaker m;
    m.input("x", {1, 2, 3, 4, 5});
    attr_ints(m.node("Transpose", {"x"}, {"y"}, "tr"), "perm", {1, 0, 2, 3, 4});
    m.output("y");
    kc::Graph g;
    Status s = m.import(&g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    CHECK_MESSAGE(s.message().find("node 'tr' (Transpose, opset 13)") != std::string::npos, s.message());
    CHECK(s.message().find("batch") != std::string::npos);
    // Kestrel's convolution takes one image.
    ModelMaker c;
    c.input("x", {2, 1, 3, 3});
    c.init("w", {1, 1, 1, 1}, {2.f});
    c.node("Conv", {"x", "w"}, {"y"}, "conv");
    c.output("y");
    s = c.import(&g);
    CHECK(s.code() == ErrorCode::kUnsupported);
    const std::string want = "node 'conv' (Conv, opset 13): input [2,1,3,3] has a batch of 2";
    CHECK_MESSAGE(s.message().find(want) != std::string::npos, s.message());
  }

  TEST_CASE("a corrupt file is kCorruptModel") {
    const std::string junk = "\xff\xff\xff\xff this is not a protobuf";
    kc::Graph g;
    CHECK(kc::import_onnx_bytes(junk.data(), junk.size(), {}, &g).code() == ErrorCode::kCorruptModel);
    CHECK(kc::import_onnx("/nonexistent/model.onnx", {}, &g).code() == ErrorCode::kNotFound);
  }

  TEST_CASE("supported_onnx_ops lists the handled ops") {
    const std::vector<std::string> ops = kc::supported_onnx_ops();
    for (const char* op : {"Conv", "Relu", "Reshape", "Shape", "Gather", "Resize", "Gemm", "LogSoftmax"}) {
      CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
    }
    CHECK(std::find(ops.begin(), ops.end(), "LRN") == ops.end());
  }
}
