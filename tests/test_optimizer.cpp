// The graph optimizer: each pass alone on small hand-built graphs (the rewrite it
// makes, the cases it must leave alone, and that the result computes what the
// original did), then all passes on MobileNet-like chains.
#include "optimizer_test_util.h"

using namespace ot;

TEST_SUITE("optimizer") {

// ---- fold_batchnorm_scale ------------------------------------------------------------

TEST_CASE("fold: Convolution then BatchNorm becomes one Convolution writing the BatchNorm's blob") {
  GraphMaker m;
  m.input("data", {3, 6, 6});
  m.conv("conv", "data", 3, 5, 3);
  m.batchnorm("bn", "conv", 5);
  m.output("bn");
  const Graph g = apply(fold_batchnorm_scale, m.g, 1);
  CHECK(types(g) == std::vector<std::string>{"Convolution"});
  CHECK(g.nodes[0].name == "conv");
  CHECK(g.nodes[0].outputs == std::vector<std::string>{"bn"});
}

TEST_CASE("fold: depthwise Convolution without bias, BatchNorm then Scale; the bias is created") {
  GraphMaker m;
  m.input("data", {4, 7, 7});
  m.conv("dw", "data", 4, 4, 3, /*group=*/4, /*bias=*/false, /*stride=*/2);
  m.batchnorm("bn", "dw", 4);
  m.scale("sc", "bn", 4, /*bias=*/true);
  m.conv("next", "sc", 4, 2, 1);
  m.output("next");
  const Graph g = apply(fold_batchnorm_scale, m.g, 2);
  CHECK(types(g) == std::vector<std::string>{"Convolution", "Convolution"});
  const Node& dw = g.nodes[0];
  CHECK(dw.params.AsConvolutionParam()->bias_term);
  REQUIRE(dw.weights.size() == 2);
  CHECK(dw.weights[1].shape == std::vector<int>{4});
  CHECK(g.nodes[1].inputs == std::vector<std::string>{"sc"});
}

TEST_CASE("fold: grouped Deconvolution scales dim 1 of [in, out/group, kh, kw] per group") {
  for (bool shared : {false, true}) {
    CAPTURE(shared);
    GraphMaker m(shared ? 3 : 4);
    m.input("data", {4, 3, 3});
    m.deconv("up", "data", 4, 6, 3, /*stride=*/2, /*pad=*/1, /*group=*/2, /*bias=*/true);
    m.batchnorm("bn", "up", 6);
    m.scale("sc", "bn", shared ? 1 : 6, /*bias=*/!shared);
    m.output("sc");
    const Graph g = apply(fold_batchnorm_scale, m.g, 2);
    CHECK(types(g) == std::vector<std::string>{"Deconvolution"});
    CHECK(g.nodes[0].outputs == std::vector<std::string>{"sc"});
  }
}

TEST_CASE("fold: InnerProduct without bias, Scale then BatchNorm on the 1-D result") {
  GraphMaker m;
  m.input("data", {2, 3, 3});
  m.inner_product("fc", "data", 18, 7, /*bias=*/false);
  m.scale("sc", "fc", 7, /*bias=*/false);
  m.batchnorm("bn", "sc", 7);
  m.output("bn");
  const Graph g = apply(fold_batchnorm_scale, m.g, 2);
  CHECK(types(g) == std::vector<std::string>{"InnerProduct"});
  CHECK(g.nodes[0].params.AsInnerProductParam()->bias_term);
}

TEST_CASE("fold: one shared Scale value with a bias applies to every channel") {
  GraphMaker m;
  m.input("data", {3, 5, 5});
  m.conv("conv", "data", 3, 4, 3, 1, /*bias=*/false);
  m.scale("sc", "conv", 1, /*bias=*/true);
  m.output("sc");
  const Graph g = apply(fold_batchnorm_scale, m.g, 1);
  CHECK(types(g) == std::vector<std::string>{"Convolution"});
}

TEST_CASE("fold: left alone when the producer's result is seen elsewhere, activated or not foldable") {
  GraphMaker m;
  m.input("data", {3, 6, 6});
  SUBCASE("the producer has a second reader") {
    m.conv("conv", "data", 3, 4, 3);
    m.batchnorm("bn", "conv", 4);
    m.pool2x2("pool", "conv");
    m.output("bn").output("pool");
  }
  SUBCASE("the producer's output is a graph output") {
    m.conv("conv", "data", 3, 4, 3);
    m.batchnorm("bn", "conv", 4);
    m.output("conv").output("bn");
  }
  SUBCASE("the producer already applies an activation") {
    m.conv("conv", "data", 3, 4, 3, 1, true, 1, 1, AT::ReLU);
    m.batchnorm("bn", "conv", 4);
    m.output("bn");
  }
  SUBCASE("BatchNorm after ReLU") {
    m.conv("conv", "data", 3, 4, 3);
    m.activation("relu", "conv", AT::ReLU);
    m.batchnorm("bn", "relu", 4);
    m.output("bn");
  }
  SUBCASE("BatchNorm after Pooling") {
    m.pool2x2("pool", "data");
    m.batchnorm("bn", "pool", 3);
    m.output("bn");
  }
  apply(fold_batchnorm_scale, m.g, 0);
}

TEST_CASE("fold: BatchNorm after a separate ReLU stays after optimize() fuses the ReLU") {
  GraphMaker m;
  m.input("data", {3, 6, 6});
  m.conv("conv", "data", 3, 4, 3);
  m.activation("relu", "conv", AT::ReLU);
  m.batchnorm("bn", "relu", 4);
  m.output("bn");
  Graph g = m.g;
  OptimizeReport r;
  REQUIRE(optimize(g, &r).ok());
  CHECK(types(g) == std::vector<std::string>{"Convolution", "BatchNorm"});
  CHECK(activation_of(g.nodes[0]) == AT::ReLU);
  check_same_outputs(m.g, g);
}

// ---- fuse_activation -----------------------------------------------------------------

TEST_CASE("fuse: every activation type into a Convolution") {
  struct Case {
    AT type;
    float alpha, beta;
  };
  const Case cases[] = {{AT::ReLU, 0, 0},        {AT::LeakyReLU, 0.1f, 0}, {AT::Clip, -0.2f, 0.3f},
                        {AT::Sigmoid, 0, 0},     {AT::TanH, 0, 0},         {AT::HardSigmoid, 0.2f, 0.5f},
                        {AT::HardSwish, 0, 0},   {AT::SiLU, 0, 0},         {AT::ELU, 0.7f, 0},
                        {AT::GELU, 0, 0}};
  for (const Case& c : cases) {
    CAPTURE(fb::EnumNameActivationType(c.type));
    GraphMaker m;
    m.input("data", {3, 5, 5});
    m.conv("conv", "data", 3, 4, 3);
    m.activation("act", "conv", c.type, c.alpha, c.beta);
    m.output("act");
    const Graph g = apply(fuse_activation, m.g, 1);
    REQUIRE(types(g) == std::vector<std::string>{"Convolution"});
    const fb::ActivationT& a = *g.nodes[0].params.AsConvolutionParam()->activation;
    CHECK(a.type == c.type);
    CHECK(a.alpha == c.alpha);
    CHECK(a.beta == c.beta);
    CHECK(g.nodes[0].outputs == std::vector<std::string>{"act"});
  }
}

TEST_CASE("fuse: hard-swish written as (x * k) * Clip(x + 3, 0, 6) becomes one HardSwish") {
  auto scalar_op = [](fb::BinaryOpType op, float v, AT act = AT::None) {
    fb::BinaryOpParamT p;
    p.op = op;
    p.with_scalar = true;
    p.scalar = v;
    if (act != AT::None) p.activation = ot::act(act, 0.f, 6.f);
    return params(std::move(p));
  };
  fb::BinaryOpParamT mul;
  mul.op = fb::BinaryOpType::Mul;
  for (float k : {1.f / 6.f, 0.1666259765625f}) {
    CAPTURE(k);
    GraphMaker m;
    m.input("data", {4, 5, 5});
    m.conv("conv", "data", 4, 4, 3);
    m.node("BinaryOp", "scale", {"conv"}, scalar_op(fb::BinaryOpType::Mul, k));
    m.node("BinaryOp", "shift", {"conv"}, scalar_op(fb::BinaryOpType::Add, 3.f, AT::Clip));
    m.node("BinaryOp", "swish", {"shift", "scale"}, params(fb::BinaryOpParamT(mul)));
    m.output("swish");
    const Graph g = apply(fuse_hard_swish, m.g, 2);
    REQUIRE(types(g) == std::vector<std::string>{"Convolution", "Activation"});
    const fb::ActivationT& a = *g.nodes[1].params.AsActivationParam()->activation;
    CHECK(a.type == AT::HardSwish);
    CHECK(a.alpha == (k == 1.f / 6.f ? 0.f : k));
    CHECK(g.nodes[1].inputs == std::vector<std::string>{"conv"});
    CHECK(g.nodes[1].outputs == std::vector<std::string>{"swish"});
  }
  SUBCASE("left alone when a part is read elsewhere or is not the pattern") {
    GraphMaker m;
    m.input("data", {4, 5, 5});
    m.conv("conv", "data", 4, 4, 3);
    m.node("BinaryOp", "scale", {"conv"}, scalar_op(fb::BinaryOpType::Mul, 1.f / 6.f));
    m.node("BinaryOp", "shift", {"conv"}, scalar_op(fb::BinaryOpType::Add, 2.f, AT::Clip));  // not + 3
    m.node("BinaryOp", "swish", {"shift", "scale"}, params(fb::BinaryOpParamT(mul)));
    m.node("BinaryOp", "scale2", {"conv"}, scalar_op(fb::BinaryOpType::Mul, 1.f / 6.f));
    m.node("BinaryOp", "shift2", {"conv"}, scalar_op(fb::BinaryOpType::Add, 3.f, AT::Clip));
    m.node("BinaryOp", "swish2", {"shift2", "scale2"}, params(fb::BinaryOpParamT(mul)));
    m.output("swish").output("swish2").output("scale2");  // scale2 is seen by the user
    apply(fuse_hard_swish, m.g, 0);
  }
}

TEST_CASE("fuse: into Deconvolution, InnerProduct, Eltwise and BinaryOp") {
  GraphMaker m;
  m.input("data", {4, 4, 4});
  std::string producer;
  SUBCASE("Deconvolution") { producer = m.deconv("p", "data", 4, 4, 2, 2, 0, 2, true); }
  SUBCASE("InnerProduct") { producer = m.inner_product("p", "data", 64, 10, true); }
  SUBCASE("Eltwise") {
    m.conv("a", "data", 4, 4, 3);
    m.conv("b", "data", 4, 4, 1);
    fb::EltwiseParamT e;
    e.op = fb::EltwiseOp::Sum;
    e.coefficients = {0.5f, -2.f};
    producer = m.node("Eltwise", "p", {"a", "b"}, params(std::move(e)));
  }
  SUBCASE("BinaryOp") {
    m.conv("a", "data", 4, 4, 3);
    fb::BinaryOpParamT b;
    b.op = fb::BinaryOpType::Mul;
    producer = m.node("BinaryOp", "p", {"a", "data"}, params(std::move(b)));
  }
  m.activation("act", producer, AT::LeakyReLU, 0.2f);
  m.output("act");
  const Graph g = apply(fuse_activation, m.g, 1);
  const Node& p = find_node(g, "p");
  CHECK(activation_of(p) == AT::LeakyReLU);
  CHECK(p.outputs == std::vector<std::string>{"act"});
  CHECK(g.nodes.size() + 1 == m.g.nodes.size());
}

TEST_CASE("fuse: left alone when the producer's result is seen elsewhere, activated or has no slot") {
  GraphMaker m;
  m.input("data", {3, 6, 6});
  SUBCASE("the producer has a second reader") {
    m.conv("conv", "data", 3, 4, 3);
    m.activation("act", "conv", AT::ReLU);
    m.pool2x2("pool", "conv");
    m.output("act").output("pool");
  }
  SUBCASE("the producer's output is a graph output") {
    m.conv("conv", "data", 3, 4, 3);
    m.activation("act", "conv", AT::Sigmoid);
    m.output("act").output("conv");
  }
  SUBCASE("the producer already applies an activation") {
    m.conv("conv", "data", 3, 4, 3, 1, true, 1, 1, AT::ReLU);
    m.activation("act", "conv", AT::Sigmoid);
    m.output("act");
  }
  SUBCASE("Pooling has no activation to fuse into") {
    m.pool2x2("pool", "data");
    m.activation("act", "pool", AT::ReLU);
    m.output("act");
  }
  apply(fuse_activation, m.g, 0);
}

// ---- remove_identity -----------------------------------------------------------------

TEST_CASE("identity: Dropout and Split disappear and readers read the input") {
  GraphMaker m;
  m.input("data", {3, 5, 5});
  m.conv("a", "data", 3, 4, 3);
  m.node("Dropout", "drop", {"a"}, params(fb::DropoutParamT{}));
  m.node("Split", "split", {"drop"}, params(fb::SplitParamT{}), {}, {"s0", "s1"});
  m.conv("b", "s0", 4, 4, 3);
  m.conv("c", "s1", 4, 4, 1);
  m.node("Eltwise", "sum", {"b", "c"}, params(fb::EltwiseParamT{}));
  m.output("sum");
  const Graph g = apply(remove_identity, m.g, 2);
  CHECK(types(g) == std::vector<std::string>{"Convolution", "Convolution", "Convolution", "Eltwise"});
  CHECK(find_node(g, "b").inputs == std::vector<std::string>{"a"});
  CHECK(find_node(g, "c").inputs == std::vector<std::string>{"a"});
}

TEST_CASE("identity: a removed node's graph output keeps its name on the producer") {
  GraphMaker m;
  m.input("data", {3, 5, 5});
  m.conv("a", "data", 3, 4, 3);
  m.node("Split", "split", {"a"}, params(fb::SplitParamT{}), {}, {"s0", "s1"});
  m.conv("b", "s1", 4, 2, 3);
  m.node("Dropout", "drop", {"b"}, params(fb::DropoutParamT{}));
  m.output("s0").output("drop");
  const Graph g = apply(remove_identity, m.g, 2);
  CHECK(types(g) == std::vector<std::string>{"Convolution", "Convolution"});
  CHECK(find_node(g, "a").outputs == std::vector<std::string>{"s0"});
  CHECK(find_node(g, "b").inputs == std::vector<std::string>{"s0"});
  CHECK(find_node(g, "b").outputs == std::vector<std::string>{"drop"});
}

TEST_CASE("identity: a Split of a graph input goes when no top is a graph output") {
  GraphMaker m;
  m.input("data", {3, 5, 5});
  m.node("Split", "split", {"data"}, params(fb::SplitParamT{}), {}, {"s0", "s1"});
  m.conv("a", "s0", 3, 2, 3);
  m.conv("b", "s1", 3, 2, 1);
  m.output("a").output("b");
  const Graph g = apply(remove_identity, m.g, 1);
  CHECK(find_node(g, "a").inputs == std::vector<std::string>{"data"});
  CHECK(find_node(g, "b").inputs == std::vector<std::string>{"data"});
}

TEST_CASE("identity: kept when no renaming keeps every graph input and output name") {
  GraphMaker m;
  m.input("data", {3, 5, 5});
  SUBCASE("Split of a graph input with a top that is a graph output") {
    m.node("Split", "split", {"data"}, params(fb::SplitParamT{}), {}, {"s0", "s1"});
    m.conv("a", "s1", 3, 2, 3);
    m.output("s0").output("a");
  }
  SUBCASE("Dropout from a graph input to a graph output") {
    m.node("Dropout", "drop", {"data"}, params(fb::DropoutParamT{}));
    m.output("drop");
  }
  SUBCASE("two tops of one Split are graph outputs") {
    m.conv("a", "data", 3, 2, 3);
    m.node("Split", "split", {"a"}, params(fb::SplitParamT{}), {}, {"s0", "s1"});
    m.output("s0").output("s1");
  }
  SUBCASE("the input and a top are both graph outputs") {
    m.conv("a", "data", 3, 2, 3);
    m.node("Dropout", "drop", {"a"}, params(fb::DropoutParamT{}));
    m.output("a").output("drop");
  }
  apply(remove_identity, m.g, 0);
}

// ---- conv_after_global_pool_to_innerproduct ------------------------------------------

// data [6,5,5] -> conv -> global pooling [8,1,1] -> 1x1 Convolution "fc" [5,1,1]
GraphMaker pooled_head(AT fc_activation = AT::None) {
  GraphMaker m;
  m.input("data", {6, 5, 5});
  m.conv("conv", "data", 6, 8, 3);
  m.global_pool("gp", "conv");
  m.conv("fc", "gp", 8, 5, 1, 1, true, 1, 0, fc_activation);
  return m;
}

TEST_CASE("conv to InnerProduct: read by Flatten, Reshape, InnerProduct and a channel Softmax") {
  GraphMaker m = pooled_head(AT::ReLU);
  m.node("Flatten", "flat", {"fc"}, params(fb::FlattenParamT{}));
  m.node("Reshape", "r", {"fc"}, params(reshape_param({0, -1})));
  m.inner_product("ip", "fc", 5, 3, true);
  m.node("Softmax", "sm", {"fc"}, params(softmax_param(-3)));
  m.node("Flatten", "smf", {"sm"}, params(fb::FlattenParamT{}));
  m.output("flat").output("r").output("ip").output("smf");
  const Graph g = apply(conv_after_global_pool_to_innerproduct, m.g, 1);
  const Node& fc = find_node(g, "fc");
  REQUIRE(fc.type == "InnerProduct");
  const fb::InnerProductParamT& p = *fc.params.AsInnerProductParam();
  CHECK(p.num_output == 5);
  CHECK(p.bias_term);
  CHECK(activation_of(fc) == AT::ReLU);
  CHECK(fc.weights[0].shape == std::vector<int>{5, 8});
  CHECK(fc.weights[0].data == m.g.nodes[2].weights[0].data);
  CHECK(find_node(g, "sm").params.AsSoftmaxParam()->axis == 0);
}

TEST_CASE("conv to InnerProduct: left alone when the 1-D result would change something") {
  GraphMaker m = pooled_head();
  SUBCASE("1x1 Convolution on an input larger than 1x1") {
    m.g.nodes.erase(m.g.nodes.begin() + 1, m.g.nodes.end());
    m.conv("fc", "conv", 8, 5, 1, 1, true, 1, 0);
    m.node("Flatten", "flat", {"fc"}, params(fb::FlattenParamT{}));
    m.output("flat");
  }
  SUBCASE("padded 1x1 Convolution") {
    m.g.nodes.pop_back();
    m.conv("fc", "gp", 8, 5, 1, 1, true, 1, 1);
    m.node("Flatten", "flat", {"fc"}, params(fb::FlattenParamT{}));
    m.output("flat");
  }
  SUBCASE("the Convolution feeds a graph output") {
    m.node("Flatten", "flat", {"fc"}, params(fb::FlattenParamT{}));
    m.output("fc").output("flat");
  }
  SUBCASE("a Softmax of it is a graph output") {
    m.node("Softmax", "prob", {"fc"}, params(softmax_param(0)));
    m.output("prob");
  }
  SUBCASE("Softmax over a size-1 axis") {
    m.node("Softmax", "sm", {"fc"}, params(softmax_param(-1)));
    m.node("Flatten", "flat", {"sm"}, params(fb::FlattenParamT{}));
    m.output("flat");
  }
  SUBCASE("a Reshape that keeps a trailing dimension (0)") {
    m.node("Reshape", "r", {"fc"}, params(reshape_param({0, 0, 1})));
    m.node("Flatten", "flat", {"r"}, params(fb::FlattenParamT{}));
    m.output("flat");
  }
  SUBCASE("an elementwise reader") {
    m.activation("act", "fc", AT::ReLU);
    m.node("Flatten", "flat", {"act"}, params(fb::FlattenParamT{}));
    m.output("flat");
  }
  apply(conv_after_global_pool_to_innerproduct, m.g, 0);
}

// ---- remove_noop_reshape -------------------------------------------------------------

TEST_CASE("noop reshape: Reshape to the same shape and Flatten of a 1-D blob go") {
  GraphMaker m;
  m.input("data", {4, 5, 5});
  m.conv("a", "data", 4, 4, 3);
  m.node("Reshape", "r", {"a"}, params(reshape_param({4, 0, -1})));
  m.conv("b", "r", 4, 2, 3);
  m.inner_product("ip", "b", 50, 6, true);
  m.node("Flatten", "f", {"ip"}, params(fb::FlattenParamT{}));
  m.output("f");
  const Graph g = apply(remove_noop_reshape, m.g, 2);
  CHECK(types(g) == std::vector<std::string>{"Convolution", "Convolution", "InnerProduct"});
  CHECK(find_node(g, "b").inputs == std::vector<std::string>{"a"});
  CHECK(find_node(g, "ip").outputs == std::vector<std::string>{"f"});
}

TEST_CASE("noop reshape: kept when the shape changes or the names are fixed") {
  GraphMaker m;
  m.input("data", {4, 5, 5});
  SUBCASE("Reshape that changes the shape") {
    m.conv("a", "data", 4, 4, 3);
    m.node("Reshape", "r", {"a"}, params(reshape_param({4, 25})));
    m.output("r");
  }
  SUBCASE("Flatten of a 3-D blob") {
    m.conv("a", "data", 4, 4, 3);
    m.node("Flatten", "f", {"a"}, params(fb::FlattenParamT{}));
    m.output("f");
  }
  SUBCASE("no-op Reshape from a graph input to a graph output") {
    m.node("Reshape", "r", {"data"}, params(reshape_param({4, 5, 5})));
    m.output("r");
  }
  apply(remove_noop_reshape, m.g, 0);
}

// ---- optimize ------------------------------------------------------------------------

// conv-BN-Scale-ReLU units (stem 3x3 stride 2, then depthwise 3x3 + pointwise 1x1),
// global pooling, Dropout and a 1x1 Convolution as classifier.
GraphMaker mobilenet_like() {
  GraphMaker m(11);
  m.input("data", {3, 16, 16});
  std::string x = "data";
  int c = 3;
  auto unit = [&](const std::string& name, int out, int k, int group, int stride) {
    m.conv(name, x, c, out, k, group, /*bias=*/false, stride);
    m.batchnorm(name + "/bn", name, out);
    m.scale(name + "/scale", name + "/bn", out, true);
    x = m.activation(name + "/relu", name + "/scale", AT::ReLU);
    c = out;
  };
  unit("conv1", 8, 3, 1, 2);
  unit("conv2/dw", 8, 3, 8, 1);
  unit("conv2/sep", 16, 1, 1, 1);
  unit("conv3/dw", 16, 3, 16, 2);
  unit("conv3/sep", 12, 1, 1, 1);
  m.global_pool("pool", x);
  m.node("Dropout", "drop", {"pool"}, params(fb::DropoutParamT{}));
  m.conv("fc", "drop", 12, 10, 1, 1, true, 1, 0);
  return m;
}

int applied(const OptimizeReport& r, const std::string& pass) {
  for (const auto& [name, n] : r.applied) {
    if (name == pass) return n;
  }
  FAIL("no pass " << pass);
  return -1;
}

TEST_CASE("optimize: MobileNet-like chain ending in a Softmax graph output (Caffe)") {
  GraphMaker m = mobilenet_like();
  m.node("Softmax", "prob", {"fc"}, params(softmax_param(0)));
  m.output("prob");
  Graph g = m.g;
  OptimizeReport r;
  const Status s = optimize(g, &r);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(r.applied.size() == 6);
  CHECK(applied(r, "remove_identity") == 1);
  CHECK(applied(r, "fuse_hard_swish") == 0);
  CHECK(applied(r, "fold_batchnorm_scale") == 10);
  CHECK(applied(r, "fuse_activation") == 5);
  // The 1x1 classifier stays a Convolution: as an InnerProduct, "prob" would become
  // [10] instead of [10,1,1].
  CHECK(applied(r, "conv_after_global_pool_to_innerproduct") == 0);
  CHECK(applied(r, "remove_noop_reshape") == 0);
  CHECK(r.nodes_before == 24);
  CHECK(r.nodes_after == 8);
  CHECK(r.nodes_after == g.nodes.size());
  for (const Node& n : g.nodes) {
    if (n.name != "pool" && n.name != "prob" && n.name != "fc") CHECK(activation_of(n) == AT::ReLU);
  }
  check_same_outputs(m.g, g);
}

TEST_CASE("optimize: MobileNet-like chain with Flatten and Softmax (ONNX)") {
  GraphMaker m = mobilenet_like();
  m.node("Flatten", "flat", {"fc"}, params(fb::FlattenParamT{}));
  m.node("Softmax", "prob", {"flat"}, params(softmax_param(-1)));
  m.output("prob");
  Graph g = m.g;
  OptimizeReport r;
  const Status s = optimize(g, &r);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(applied(r, "remove_identity") == 1);
  CHECK(applied(r, "fold_batchnorm_scale") == 10);
  CHECK(applied(r, "fuse_activation") == 5);
  CHECK(applied(r, "conv_after_global_pool_to_innerproduct") == 1);
  CHECK(applied(r, "remove_noop_reshape") == 1);
  CHECK(r.nodes_before == 25);
  CHECK(r.nodes_after == 8);
  CHECK(types(g) == std::vector<std::string>{"Convolution", "Convolution", "Convolution", "Convolution",
                                             "Convolution", "Pooling", "InnerProduct", "Softmax"});
  CHECK(find_node(g, "prob").inputs == std::vector<std::string>{"fc"});
  check_same_outputs(m.g, g);
}

TEST_CASE("optimize: a graph Kestrel cannot load is an error naming the layer") {
  GraphMaker m;
  m.input("data", {3, 5, 5});
  m.conv("conv", "data", 4, 2, 3);  // weights for 4 input channels, the input has 3
  m.output("conv");
  Graph g = m.g;
  const Status s = optimize(g, nullptr);
  CHECK_FALSE(s.ok());
  CHECK_MESSAGE(s.message().find("conv") != std::string::npos, s.message());
}

}  // TEST_SUITE
