// The optimizer passes. Each pass scans the nodes in execution order and applies one
// rewrite at a time to the live graph, so a rewrite is visible to the matches after
// it (Convolution -> BatchNorm -> Scale folds both in one scan). A removed node is
// detached at once (no inputs, no outputs, so producer() and consumers() no longer
// see it) and erased when the pass ends, which keeps indices valid during the scan.
//
// Every pass leaves a node alone when anything about it is not what the layer type
// documents: the loader is the place that reports damaged models, and a rewrite of a
// node it would reject could hide the problem or change what the model computes.
#include "graph/optimize.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

namespace kestrel::convert {
namespace {

using ActivationPtr = std::unique_ptr<fb::ActivationT>;

// ---- Rewiring shared by the passes ----------------------------------------------

// Nodes removed during one pass; erase() drops them from the graph at the end.
class Removals {
 public:
  explicit Removals(const Graph& g) : removed_(g.nodes.size(), false) {}

  void detach(Graph& g, int n) {
    g.nodes[n].inputs.clear();
    g.nodes[n].outputs.clear();
    removed_[n] = true;
  }
  int count() const { return static_cast<int>(std::count(removed_.begin(), removed_.end(), true)); }
  void erase(Graph& g) const { g.erase_nodes(removed_); }

 private:
  std::vector<bool> removed_;
};

// Node n (one input) disappears: the producer of its input writes `keep` (one of n's
// outputs) instead, and every reader of the input or of n's outputs reads `keep`.
// The caller has checked that the input is no graph output, so no graph output is
// renamed, and `keep` stays a blob with exactly one producer.
// `keep` is taken by value: it usually names an output of n, which detach() clears.
void merge_into_producer(Graph& g, int n, std::string keep, Removals& removals) {
  const std::string in = g.nodes[n].inputs[0];
  const std::vector<std::string> outs = g.nodes[n].outputs;
  Node& p = g.nodes[g.producer(in)];
  std::replace(p.outputs.begin(), p.outputs.end(), in, keep);
  removals.detach(g, n);
  g.replace_uses(in, keep);
  for (const std::string& o : outs) {
    if (o != keep) g.replace_uses(o, keep);
  }
}

// Removes node n, whose every output holds exactly the values of its single input.
// Readers of the outputs read the input instead. A graph output among the outputs
// keeps its name: the input's producer writes it. Returns false, leaving the graph
// as it was, when no renaming keeps every graph output name: two of n's outputs are
// graph outputs, the input is itself one, or the input is a graph input (whose name
// belongs to the user and cannot change).
bool bypass(Graph& g, int n, Removals& removals) {
  const Node& node = g.nodes[n];
  if (node.inputs.size() != 1 || node.outputs.empty()) return false;
  const std::string in = node.inputs[0];
  std::vector<std::string> named;
  for (const std::string& o : node.outputs) {
    if (g.is_output(o)) named.push_back(o);
  }
  if (named.empty()) {
    const std::vector<std::string> outs = node.outputs;
    removals.detach(g, n);
    for (const std::string& o : outs) g.replace_uses(o, in);
    return true;
  }
  if (named.size() > 1 || g.is_output(in) || g.producer(in) < 0) return false;
  merge_into_producer(g, n, named[0], removals);
  return true;
}

// The fused-activation field of the layer types that have one, else nullptr (also
// when the parameters are not the table the type expects).
ActivationPtr* activation_slot(Node& n) {
  if (n.type == "Convolution" || n.type == "Deconvolution") {
    fb::ConvolutionParamT* p = n.params.AsConvolutionParam();
    return p ? &p->activation : nullptr;
  }
  if (n.type == "InnerProduct") {
    fb::InnerProductParamT* p = n.params.AsInnerProductParam();
    return p ? &p->activation : nullptr;
  }
  if (n.type == "Eltwise") {
    fb::EltwiseParamT* p = n.params.AsEltwiseParam();
    return p ? &p->activation : nullptr;
  }
  if (n.type == "BinaryOp") {
    fb::BinaryOpParamT* p = n.params.AsBinaryOpParam();
    return p ? &p->activation : nullptr;
  }
  return nullptr;
}

bool has_activation(const ActivationPtr& a) { return a && a->type != fb::ActivationType::None; }

// The producer of node n's single input when n can be merged into it: the producer
// has a fused activation slot that is still empty (whatever n computes must come
// before any activation), and nothing but n sees the blob between them.
int absorbing_producer(Graph& g, int n) {
  const Node& node = g.nodes[n];
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return -1;
  const std::string& in = node.inputs[0];
  const int p = g.producer(in);
  if (p < 0 || g.nodes[p].outputs.size() != 1 || g.is_output(in) || g.consumers(in).size() != 1) return -1;
  const ActivationPtr* slot = activation_slot(g.nodes[p]);
  if (!slot || has_activation(*slot)) return -1;
  return p;
}

// Blob shapes as outermost-first extents with the real channel count (packing is
// a kernel detail, not part of the logical shape).
std::vector<int> extents(const Shape& s) {
  const int c = s.c * s.elempack;
  switch (s.dims) {
    case 1: return {s.w};
    case 2: return {s.h, s.w};
    case 3: return {c, s.h, s.w};
    default: return {c, s.d, s.h, s.w};
  }
}

// Shapes of the graph as the loader computes them; false when it would not load
// (a pass then rewrites nothing: optimize() reports the graph's problem itself).
bool shapes_of(const Graph& g, std::map<std::string, std::vector<int>>* shapes) {
  std::map<std::string, Shape> raw;
  if (!infer_shapes(g, &raw).ok()) return false;
  shapes->clear();
  for (const auto& [name, s] : raw) (*shapes)[name] = extents(s);
  return true;
}

// ---- BatchNorm / Scale folding ---------------------------------------------------

size_t count_of(const std::vector<int>& shape) {
  size_t n = 1;
  for (int d : shape) n *= d > 0 ? static_cast<size_t>(d) : 0;
  return n;
}

// y = a[c] * x + b[c]; a and b have one value per channel, or one for all channels
// when `shared` (Scale with a single value).
struct ChannelAffine {
  std::vector<double> a, b;
  bool shared = false;
};

// The affine map of a BatchNorm or Scale node; false when its parameters are not
// what the layer type documents.
bool affine_of(const Node& n, ChannelAffine* f) {
  if (n.type == "BatchNorm") {
    const fb::BatchNormParamT* p = n.params.AsBatchNormParam();
    if (!p || n.weights.size() != 4 || !(p->eps >= 0.f) || !std::isfinite(p->eps)) return false;
    const size_t c = n.weights[0].data.size();
    for (const Tensor& t : n.weights) {
      if (c == 0 || t.data.size() != c) return false;
    }
    const std::vector<float>& mean = n.weights[0].data;
    const std::vector<float>& var = n.weights[1].data;
    const std::vector<float>& gamma = n.weights[2].data;
    const std::vector<float>& beta = n.weights[3].data;
    f->a.resize(c);
    f->b.resize(c);
    for (size_t i = 0; i < c; ++i) {
      const double denom = double(var[i]) + double(p->eps);
      if (!(denom > 0.0)) return false;  // the loader rejects this model
      f->a[i] = double(gamma[i]) / std::sqrt(denom);
      // (x - mean) * a + beta, as x * a + (beta - mean * a).
      f->b[i] = double(beta[i]) - double(mean[i]) * f->a[i];
    }
    f->shared = false;
    return true;
  }
  if (n.type == "Scale") {
    const fb::ScaleParamT* p = n.params.AsScaleParam();
    if (!p || n.weights.size() != (p->bias_term ? 2u : 1u)) return false;
    const std::vector<float>& s = n.weights[0].data;
    if (s.empty() || (p->bias_term && n.weights[1].data.size() != s.size())) return false;
    f->a.assign(s.begin(), s.end());
    f->b.assign(s.size(), 0.0);
    if (p->bias_term) f->b.assign(n.weights[1].data.begin(), n.weights[1].data.end());
    f->shared = s.size() == 1;
    return true;
  }
  return false;
}

// How the kernel of a Convolution, Deconvolution or InnerProduct maps to output
// channels: `runs` consecutive runs of `run` values, run r feeding channel channel(r).
struct KernelLayout {
  int channels = 0;  // num_output
  bool* bias_term = nullptr;
  size_t run = 0;
  size_t runs = 0;
  std::function<int(size_t)> channel;
};

// False when the weights do not have the shapes the layer type documents.
bool kernel_layout(Node& p, KernelLayout* k) {
  if (p.weights.empty()) return false;
  const std::vector<int>& ws = p.weights[0].shape;
  if (std::any_of(ws.begin(), ws.end(), [](int d) { return d <= 0; })) return false;
  if (p.weights[0].data.size() != count_of(ws)) return false;
  if (fb::InnerProductParamT* ip = p.params.AsInnerProductParam(); ip && p.type == "InnerProduct") {
    if (ws.size() != 2 || ws[0] != ip->num_output || ws[1] <= 0) return false;
    k->channels = ip->num_output;
    k->bias_term = &ip->bias_term;
    k->run = size_t(ws[1]);
    k->runs = size_t(ws[0]);
    k->channel = [](size_t r) { return static_cast<int>(r); };
    return true;
  }
  fb::ConvolutionParamT* cp = p.params.AsConvolutionParam();
  if (!cp || ws.size() != 4 || cp->num_output <= 0 || cp->group <= 0 || cp->num_output % cp->group != 0) return false;
  k->channels = cp->num_output;
  k->bias_term = &cp->bias_term;
  if (p.type == "Convolution") {
    // [out, in/group, kh, kw]: dim 0 is the output channel.
    if (ws[0] != cp->num_output) return false;
    k->run = size_t(ws[1]) * ws[2] * ws[3];
    k->runs = size_t(ws[0]);
    k->channel = [](size_t r) { return static_cast<int>(r); };
    return true;
  }
  if (p.type == "Deconvolution") {
    // [in, out/group, kh, kw]: input channel i belongs to group i / (in/group), and
    // dim 1 is the output channel within that group.
    const int group = cp->group, out_per_group = cp->num_output / group;
    if (ws[0] <= 0 || ws[0] % group != 0 || ws[1] != out_per_group) return false;
    const size_t in_per_group = size_t(ws[0] / group);
    k->run = size_t(ws[2]) * ws[3];
    k->runs = size_t(ws[0]) * ws[1];
    k->channel = [in_per_group, out_per_group](size_t r) {
      const size_t in_channel = r / out_per_group, j = r % out_per_group;
      return static_cast<int>((in_channel / in_per_group) * out_per_group + j);
    };
    return true;
  }
  return false;
}

// Applies y' = a * y + b to producer p's output by rewriting its kernel and bias
// (creating the bias when there is none). Computed in double, stored as float.
bool fold_affine(Node& p, const ChannelAffine& f) {
  KernelLayout k;
  if (!kernel_layout(p, &k)) return false;
  const size_t channels = size_t(k.channels);
  if (!(f.a.size() == channels || f.shared)) return false;
  if (p.weights.size() != (*k.bias_term ? 2u : 1u)) return false;
  if (*k.bias_term && p.weights[1].data.size() != channels) return false;
  if (k.run * k.runs != p.weights[0].data.size()) return false;

  auto at = [&](const std::vector<double>& v, int c) { return f.shared ? v[0] : v[size_t(c)]; };
  float* w = p.weights[0].data.data();
  for (size_t r = 0; r < k.runs; ++r) {
    const double a = at(f.a, k.channel(r));
    for (size_t i = 0; i < k.run; ++i, ++w) *w = static_cast<float>(double(*w) * a);
  }
  if (!*k.bias_term) {
    p.weights.push_back(Tensor{{k.channels}, std::vector<float>(channels, 0.f)});
    *k.bias_term = true;
  }
  std::vector<float>& bias = p.weights[1].data;
  for (size_t c = 0; c < channels; ++c) {
    const int ci = static_cast<int>(c);
    bias[c] = static_cast<float>(double(bias[c]) * at(f.a, ci) + at(f.b, ci));
  }
  return true;
}

bool is_affine_producer(const std::string& type) {
  return type == "Convolution" || type == "Deconvolution" || type == "InnerProduct";
}

// ---- 1x1 Convolution to InnerProduct ---------------------------------------------

// A Convolution that, on a [C,1,1] input, is exactly y = W x + b.
bool is_pointwise(const fb::ConvolutionParamT& p) {
  return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.group == 1 &&
         p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0 &&
         p.pad_mode == fb::PadMode::Explicit;
}

// Whether every reader of `blob`, a [C,1,1] about to become [C], computes the same
// values from the 1-D blob and leaves every graph output's shape as it was.
// Softmax keeps its input's shape, so its output changes too and must satisfy the
// same condition; its axis must be the channel axis (0 or -3), which is axis 0 on
// [C]. Those Softmax nodes are collected in *softmax to get axis 0.
bool readers_accept_1d(Graph& g, const std::string& blob, std::vector<int>* softmax) {
  for (int r : g.consumers(blob)) {
    const Node& n = g.nodes[r];
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    if (n.type == "Flatten" || n.type == "InnerProduct") continue;  // both read all values in order
    if (n.type == "Reshape") {
      // A 0 entry copies the input's dimension: at index 0 that is C either way,
      // elsewhere it would read a dimension the 1-D blob does not have.
      const fb::ReshapeParamT* p = n.params.AsReshapeParam();
      if (!p || p->shape.empty()) return false;
      if (std::find(p->shape.begin() + 1, p->shape.end(), 0) != p->shape.end()) return false;
      continue;
    }
    if (n.type == "Softmax") {
      const fb::SoftmaxParamT* p = n.params.AsSoftmaxParam();
      if (!p || (p->axis != 0 && p->axis != -3)) return false;
      if (g.is_output(n.outputs[0]) || !readers_accept_1d(g, n.outputs[0], softmax)) return false;
      softmax->push_back(r);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

// ---- Passes ------------------------------------------------------------------------

int fold_batchnorm_scale(Graph& g) {
  Removals removals(g);
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    ChannelAffine f;
    if (!affine_of(g.nodes[n], &f)) continue;
    const int p = absorbing_producer(g, n);
    if (p < 0 || !is_affine_producer(g.nodes[p].type)) continue;
    // fold_affine checks everything before it writes, so a refusal leaves p intact.
    if (!fold_affine(g.nodes[p], f)) continue;
    merge_into_producer(g, n, g.nodes[n].outputs[0], removals);
  }
  removals.erase(g);
  return removals.count();
}

int fuse_activation(Graph& g) {
  Removals removals(g);
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    Node& node = g.nodes[n];
    const fb::ActivationParamT* a = node.type == "Activation" ? node.params.AsActivationParam() : nullptr;
    if (!a) continue;
    const int p = absorbing_producer(g, n);
    if (p < 0) continue;
    *activation_slot(g.nodes[p]) = a->activation ? std::make_unique<fb::ActivationT>(*a->activation) : nullptr;
    merge_into_producer(g, n, node.outputs[0], removals);
  }
  removals.erase(g);
  return removals.count();
}

namespace {

// A BinaryOp of one blob and a scalar: its op, scalar and fused activation.
const fb::BinaryOpParamT* scalar_op(const Node& n, fb::BinaryOpType op) {
  const fb::BinaryOpParamT* p = n.type == "BinaryOp" ? n.params.AsBinaryOpParam() : nullptr;
  return p && p->op == op && p->with_scalar && n.inputs.size() == 1 && n.weights.empty() ? p : nullptr;
}

}  // namespace

int fuse_hard_swish(Graph& g) {
  Removals removals(g);
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    Node& node = g.nodes[n];
    const fb::BinaryOpParamT* m = node.type == "BinaryOp" ? node.params.AsBinaryOpParam() : nullptr;
    if (!m || m->op != fb::BinaryOpType::Mul || m->with_scalar || node.inputs.size() != 2 ||
        has_activation(m->activation) || node.outputs.size() != 1) {
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const int p = g.producer(node.inputs[side]), q = g.producer(node.inputs[1 - side]);
      if (p < 0 || q < 0 || p == q) continue;
      const fb::BinaryOpParamT* scale = scalar_op(g.nodes[p], fb::BinaryOpType::Mul);
      const fb::BinaryOpParamT* shift = scalar_op(g.nodes[q], fb::BinaryOpType::Add);
      if (!scale || !shift || has_activation(scale->activation) || shift->scalar != 3.f || !shift->activation ||
          shift->activation->type != fb::ActivationType::Clip || shift->activation->alpha != 0.f ||
          shift->activation->beta != 6.f || g.nodes[p].inputs[0] != g.nodes[q].inputs[0]) {
        continue;
      }
      const std::string& pa = g.nodes[p].outputs[0];
      const std::string& qa = g.nodes[q].outputs[0];
      if (g.is_output(pa) || g.is_output(qa) || g.consumers(pa).size() != 1 || g.consumers(qa).size() != 1) continue;
      fb::ActivationParamT a;
      a.activation = std::make_unique<fb::ActivationT>();
      a.activation->type = fb::ActivationType::HardSwish;
      // 0 is PyTorch's exact 1/6 (a division); any other value multiplies.
      a.activation->alpha = scale->scalar == 1.f / 6.f ? 0.f : scale->scalar;
      const std::string x = g.nodes[p].inputs[0];
      removals.detach(g, p);
      removals.detach(g, q);
      node.type = "Activation";
      node.params.Set(std::move(a));  // m dangles from here on
      node.inputs = {x};
      node.weights.clear();
      break;
    }
  }
  removals.erase(g);
  return removals.count();
}

int remove_identity(Graph& g) {
  Removals removals(g);
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    const Node& node = g.nodes[n];
    const bool identity = (node.type == "Dropout" && node.outputs.size() == 1) || node.type == "Split";
    if (identity) bypass(g, n, removals);
  }
  removals.erase(g);
  return removals.count();
}

int conv_after_global_pool_to_innerproduct(Graph& g) {
  std::map<std::string, std::vector<int>> shapes;
  if (!shapes_of(g, &shapes)) return 0;
  int rewritten = 0;
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    Node& node = g.nodes[n];
    const fb::ConvolutionParamT* p = node.type == "Convolution" ? node.params.AsConvolutionParam() : nullptr;
    if (!p || !is_pointwise(*p) || node.inputs.size() != 1 || node.outputs.size() != 1) continue;
    const auto in = shapes.find(node.inputs[0]);
    if (in == shapes.end() || in->second.size() != 3 || in->second[1] != 1 || in->second[2] != 1) continue;
    const int channels = in->second[0], num_output = p->num_output;
    if (node.weights.size() != (p->bias_term ? 2u : 1u) ||
        node.weights[0].shape != std::vector<int>{num_output, channels, 1, 1} ||
        node.weights[0].data.size() != count_of(node.weights[0].shape)) {
      continue;
    }
    std::vector<int> softmax;
    if (g.is_output(node.outputs[0]) || !readers_accept_1d(g, node.outputs[0], &softmax)) continue;

    fb::InnerProductParamT ip;
    ip.num_output = num_output;
    ip.bias_term = p->bias_term;
    if (p->activation) ip.activation = std::make_unique<fb::ActivationT>(*p->activation);
    node.type = "InnerProduct";
    node.params.Set(std::move(ip));  // p dangles from here on
    node.weights[0].shape = {num_output, channels};
    for (int s : softmax) g.nodes[s].params.AsSoftmaxParam()->axis = 0;
    ++rewritten;
  }
  return rewritten;
}

int remove_noop_reshape(Graph& g) {
  std::map<std::string, std::vector<int>> shapes;
  if (!shapes_of(g, &shapes)) return 0;
  // Removing a no-op leaves every blob's shape as it was, so one inference serves the
  // whole scan.
  Removals removals(g);
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    const Node& node = g.nodes[n];
    if ((node.type != "Flatten" && node.type != "Reshape") || node.inputs.size() != 1 || node.outputs.size() != 1) {
      continue;
    }
    const auto in = shapes.find(node.inputs[0]), out = shapes.find(node.outputs[0]);
    if (in != shapes.end() && out != shapes.end() && in->second == out->second) bypass(g, n, removals);
  }
  removals.erase(g);
  return removals.count();
}

Status optimize(Graph& g, OptimizeReport* report) {
  std::map<std::string, Shape> shapes;
  Status s = infer_shapes(g, &shapes);
  if (!s.ok()) return s.with_context("graph before optimization");

  struct Pass {
    const char* name;
    int (*run)(Graph&);
  };
  // Identities first so that a Split or Dropout does not hide a pattern; folds before
  // fusion since an activation must stay after the affine it follows; the 1x1
  // Convolution becomes an InnerProduct after its activation is fused (carried
  // over), and that may turn a Flatten after it into a no-op.
  static const Pass kPasses[] = {
      {"remove_identity", remove_identity},
      {"fold_batchnorm_scale", fold_batchnorm_scale},
      {"fuse_hard_swish", fuse_hard_swish},
      {"fuse_activation", fuse_activation},
      {"conv_after_global_pool_to_innerproduct", conv_after_global_pool_to_innerproduct},
      {"remove_noop_reshape", remove_noop_reshape},
  };
  OptimizeReport r;
  r.nodes_before = g.nodes.size();
  for (const Pass& p : kPasses) r.applied.emplace_back(p.name, 0);
  // Every rewrite removes a node or a Convolution, so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < r.applied.size(); ++i) {
      const int k = kPasses[i].run(g);
      r.applied[i].second += k;
      changed = changed || k > 0;
    }
  }
  r.nodes_after = g.nodes.size();
  s = infer_shapes(g, &shapes);
  if (!s.ok()) return Status(ErrorCode::kInternal, "the optimized graph does not load: " + s.message());
  if (report) *report = std::move(r);
  return Status::Ok();
}

}  // namespace kestrel::convert
