// Shared by the optimizer tests: hand-built converter Graphs with seeded weights, and
// running a Graph through Kestrel's reference kernels to compare it with its
// optimized form.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/optimize.h"
#include "test_util.h"

namespace ot {

using namespace kestrel;
using namespace kestrel::convert;
using AT = fb::ActivationType;

template <class P>
fb::LayerParamsUnion params(P&& p) {
  fb::LayerParamsUnion u;
  u.Set(std::forward<P>(p));
  return u;
}

inline std::unique_ptr<fb::ActivationT> act(AT t, float a = 0.f, float b = 0.f) {
  auto p = std::make_unique<fb::ActivationT>();
  p->type = t;
  p->alpha = a;
  p->beta = b;
  return p;
}

inline fb::ConvolutionParamT conv_param(int out, int k, int stride, int pad, int group, bool bias, AT a = AT::None) {
  fb::ConvolutionParamT p;
  p.num_output = out;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.group = group;
  p.bias_term = bias;
  if (a != AT::None) p.activation = act(a);
  return p;
}

inline fb::SoftmaxParamT softmax_param(int axis) {
  fb::SoftmaxParamT p;
  p.axis = axis;
  return p;
}

inline fb::ReshapeParamT reshape_param(std::vector<int> shape) {
  fb::ReshapeParamT p;
  p.shape = std::move(shape);
  return p;
}

// Builds a Graph node by node; a node's output blob is its name unless given.
class GraphMaker {
 public:
  explicit GraphMaker(uint32_t seed = 1) : rng_(seed) {}

  GraphMaker& input(const std::string& name, std::vector<int> shape) {
    g.inputs.push_back({name, std::move(shape)});
    return *this;
  }
  GraphMaker& output(const std::string& name) {
    g.outputs.push_back(name);
    return *this;
  }

  Tensor random(std::vector<int> shape, float lo = -1.f, float hi = 1.f) {
    size_t n = 1;
    for (int d : shape) n *= size_t(d);
    std::uniform_real_distribution<float> dist(lo, hi);
    Tensor t{std::move(shape), std::vector<float>(n)};
    for (float& v : t.data) v = dist(rng_);
    return t;
  }

  std::string node(const std::string& type, const std::string& name, std::vector<std::string> inputs,
                   fb::LayerParamsUnion p = {}, std::vector<Tensor> weights = {}, std::vector<std::string> outputs = {}) {
    if (outputs.empty()) outputs = {name};
    g.nodes.push_back(Node{name, type, std::move(p), std::move(inputs), std::move(outputs), std::move(weights)});
    return name;
  }

  std::string conv(const std::string& name, const std::string& in, int cin, int cout, int k, int group = 1,
                   bool bias = true, int stride = 1, int pad = -1, AT a = AT::None) {
    std::vector<Tensor> w{random({cout, cin / group, k, k}, -0.5f, 0.5f)};
    if (bias) w.push_back(random({cout}));
    return node("Convolution", name, {in}, params(conv_param(cout, k, stride, pad < 0 ? k / 2 : pad, group, bias, a)),
                std::move(w));
  }

  // Weights [in, out/group, k, k]; output (in_h - 1) * stride + k - 2 * pad.
  std::string deconv(const std::string& name, const std::string& in, int cin, int cout, int k, int stride, int pad,
                     int group, bool bias) {
    std::vector<Tensor> w{random({cin, cout / group, k, k}, -0.5f, 0.5f)};
    if (bias) w.push_back(random({cout}));
    return node("Deconvolution", name, {in}, params(conv_param(cout, k, stride, pad, group, bias)), std::move(w));
  }

  std::string inner_product(const std::string& name, const std::string& in, int nin, int nout, bool bias) {
    fb::InnerProductParamT p;
    p.num_output = nout;
    p.bias_term = bias;
    std::vector<Tensor> w{random({nout, nin}, -0.5f, 0.5f)};
    if (bias) w.push_back(random({nout}));
    return node("InnerProduct", name, {in}, params(std::move(p)), std::move(w));
  }

  std::string batchnorm(const std::string& name, const std::string& in, int c) {
    fb::BatchNormParamT p;
    p.eps = 1e-3f;
    return node("BatchNorm", name, {in}, params(std::move(p)),
                {random({c}), random({c}, 0.5f, 2.f), random({c}, 0.5f, 1.5f), random({c})});
  }

  // `count` values (the channel count, or 1 for one shared value).
  std::string scale(const std::string& name, const std::string& in, int count, bool bias) {
    fb::ScaleParamT p;
    p.bias_term = bias;
    std::vector<Tensor> w{random({count}, 0.5f, 1.5f)};
    if (bias) w.push_back(random({count}));
    return node("Scale", name, {in}, params(std::move(p)), std::move(w));
  }

  std::string activation(const std::string& name, const std::string& in, AT t, float a = 0.f, float b = 0.f) {
    fb::ActivationParamT p;
    p.activation = act(t, a, b);
    return node("Activation", name, {in}, params(std::move(p)));
  }

  std::string global_pool(const std::string& name, const std::string& in) {
    fb::PoolingParamT p;
    p.pool = fb::PoolType::Average;
    p.global = true;
    return node("Pooling", name, {in}, params(std::move(p)));
  }

  std::string pool2x2(const std::string& name, const std::string& in) {
    fb::PoolingParamT p;
    p.kernel_h = p.kernel_w = p.stride_h = p.stride_w = 2;
    return node("Pooling", name, {in}, params(std::move(p)));
  }

  Graph g;

 private:
  std::mt19937 rng_;
};

inline std::vector<std::string> types(const Graph& g) {
  std::vector<std::string> t;
  for (const Node& n : g.nodes) t.push_back(n.type);
  return t;
}

inline const Node& find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes) {
    if (n.name == name) return n;
  }
  FAIL("no node " << name);
  return g.nodes.front();
}

inline AT activation_of(const Node& n) {
  const std::unique_ptr<fb::ActivationT>* a = nullptr;
  if (const auto* c = n.params.AsConvolutionParam()) a = &c->activation;
  if (const auto* p = n.params.AsInnerProductParam()) a = &p->activation;
  if (const auto* e = n.params.AsEltwiseParam()) a = &e->activation;
  if (const auto* b = n.params.AsBinaryOpParam()) a = &b->activation;
  REQUIRE(a);
  return *a ? (*a)->type : AT::None;
}

struct Output {
  std::vector<int> shape;
  std::vector<float> values;  // logical order
};

// Every graph output for seeded random inputs, computed by the reference kernels.
inline std::vector<Output> run(const Graph& g) {
  Net net;
  net.option().kernels = KernelSet::kReference;
  net.option().num_threads = 1;
  const Status s = kt::load_bytes(net, to_builder(g).serialize());
  REQUIRE_MESSAGE(s.ok(), s.message());
  Extractor ex = net.create_extractor();
  std::vector<Mat> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    inputs.push_back(kt::random_input(net, g.inputs[i].name, 100 + static_cast<uint32_t>(i)));
    REQUIRE(ex.input(g.inputs[i].name, inputs.back()).ok());
  }
  std::vector<Output> out;
  for (const std::string& name : g.outputs) {
    Mat m;
    REQUIRE(ex.extract(name, m).ok());
    Output o;
    const int cs = m.c * m.elempack;
    o.shape = m.dims == 1 ? std::vector<int>{m.w}
              : m.dims == 2 ? std::vector<int>{m.h, m.w}
              : m.dims == 3 ? std::vector<int>{cs, m.h, m.w}
                            : std::vector<int>{cs, m.d, m.h, m.w};
    const size_t plane = size_t(m.w) * m.h * m.d;
    for (int q = 0; q < (m.dims >= 3 ? m.c : 1); ++q) o.values.insert(o.values.end(), m.channel(q), m.channel(q) + plane);
    out.push_back(std::move(o));
  }
  return out;
}

// The optimized graph computes what the original did: same output names, shapes and
// values within float rounding (folding reassociates the arithmetic).
inline void check_same_outputs(const Graph& original, const Graph& optimized, float rtol = 1e-5f) {
  REQUIRE(original.outputs == optimized.outputs);
  const std::vector<Output> want = run(original), got = run(optimized);
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("output " << original.outputs[i]);
    CHECK(got[i].shape == want[i].shape);
    REQUIRE(got[i].values.size() == want[i].values.size());
    float scale = 1.f;
    for (float v : want[i].values) scale = std::max(scale, std::fabs(v));
    for (size_t k = 0; k < want[i].values.size(); ++k) {
      if (!(std::fabs(got[i].values[k] - want[i].values[k]) <= rtol * scale)) {
        FAIL_CHECK("value " << k << ": got " << got[i].values[k] << ", want " << want[i].values[k]);
        break;
      }
    }
  }
}

// Runs one pass on a copy of g and checks its count and that the result computes
// the same outputs; returns the rewritten graph for the structural checks.
inline Graph apply(int (*pass)(Graph&), const Graph& g, int expected) {
  Graph opt = g;
  CHECK(pass(opt) == expected);
  std::map<std::string, Shape> shapes;
  const Status s = infer_shapes(opt, &shapes);
  REQUIRE_MESSAGE(s.ok(), s.message());
  check_same_outputs(g, opt);
  if (expected == 0) CHECK(types(opt) == types(g));
  return opt;
}

}  // namespace ot
