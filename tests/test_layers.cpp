// Every built-in layer against naive computations written independently here, plus
// small hand-computed cases and parameter errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/layer.h"

namespace {

using namespace kestrel;
using AT = fb::ActivationType;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Tensor {
  std::vector<int> shape;
  std::vector<float> data;
};
WeightView view(const Tensor& t) { return WeightView{t.data.data(), t.shape, t.data.size()}; }

std::vector<float> random_values(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Tensor random_tensor(std::vector<int> shape, std::mt19937& rng) {
  size_t n = 1;
  for (int d : shape) n *= size_t(d);
  return Tensor{shape, random_values(n, rng)};
}

size_t plane_of(const Mat& m) { return size_t(m.w) * m.h * (m.dims == 4 ? m.d : 1); }
int planes_of(const Mat& m) { return m.dims >= 3 ? m.c : 1; }

// Values in logical order (outermost first), skipping channel padding.
std::vector<float> logical(const Mat& m) {
  std::vector<float> v;
  for (int q = 0; q < planes_of(m); ++q) v.insert(v.end(), m.channel(q), m.channel(q) + plane_of(m));
  return v;
}

// A Mat holding `values` in logical order; the padding holds NaN so that reading it
// shows up in every result.
Mat make_mat(const Shape& s, const std::vector<float>& values) {
  Mat m;
  REQUIRE(m.create(s));
  std::fill(m.data, m.data + m.total(), kNaN);
  for (int q = 0; q < planes_of(m); ++q) {
    std::copy(values.begin() + q * plane_of(m), values.begin() + (q + 1) * plane_of(m), m.channel(q));
  }
  return m;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (1.f + std::fabs(want[i])))) {
      FAIL_CHECK("value " << i << ": got " << got[i] << ", want " << want[i]);
      return;
    }
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One layer built through the flatbuffers object API, loaded with `weights`.
class Harness {
 public:
  template <class Param>
  Harness(const char* type, Param param, std::vector<WeightView> weights = {}) {
    fb::LayerT lt;
    lt.name = "test";
    lt.type = type;
    if constexpr (!std::is_same_v<Param, std::nullptr_t>) lt.params.Set(std::move(param));
    fbb_.Finish(fb::Layer::Pack(fbb_, &lt));
    LoadContext ctx;
    ctx.layer = flatbuffers::GetRoot<fb::Layer>(fbb_.GetBufferPointer());
    ctx.weights = std::move(weights);
    const LayerCreator create = find_layer_creator(type);
    REQUIRE(bool(create));
    layer = create();
    load = layer->load(ctx);
  }

  Status prepare(const std::vector<Shape>& in) {
    out_shapes.assign(1, Shape{});
    return layer->prepare(in, out_shapes, PrepareContext{});
  }

  // Prepares for the inputs' shapes (checking success) and runs forward.
  Mat run(const std::vector<Mat>& in, int threads = 1) {
    REQUIRE(load.ok());
    std::vector<Shape> shapes;
    for (const Mat& m : in) shapes.push_back(m.shape());
    const Status s = prepare(shapes);
    REQUIRE_MESSAGE(s.ok(), s.message());
    std::vector<Mat> out(1);
    REQUIRE(out[0].create(out_shapes[0]));
    std::fill(out[0].data, out[0].data + out[0].total(), kNaN);
    forward(in, out, threads);
    return out[0];
  }

  void forward(const std::vector<Mat>& in, std::vector<Mat>& out, int threads) {
    const size_t bytes = std::max<size_t>(layer->workspace_bytes, 1);
    void* ws = ::operator new(bytes, std::align_val_t(kAlignment));
    ForwardContext fc;
    fc.num_threads = threads;
    fc.workspace = ws;
    const Status s = layer->forward(in, out, fc);
    ::operator delete(ws, std::align_val_t(kAlignment));
    REQUIRE_MESSAGE(s.ok(), s.message());
  }

  std::unique_ptr<Layer> layer;
  Status load;
  std::vector<Shape> out_shapes;

 private:
  flatbuffers::FlatBufferBuilder fbb_;
};

void check_error(const Status& s, const char* words) {
  CHECK_FALSE(s.ok());
  CHECK_MESSAGE(s.message().find(words) != std::string::npos, "message: " << s.message());
}

double ref_activation(AT t, double x, double a, double b) {
  switch (t) {
    case AT::ReLU: return std::max(x, 0.0);
    case AT::LeakyReLU: return x > 0 ? x : a * x;
    case AT::Clip: return std::min(std::max(x, a), b);
    case AT::Sigmoid: return 1 / (1 + std::exp(-x));
    case AT::TanH: return std::tanh(x);
    case AT::HardSigmoid: return std::clamp(a * x + b, 0.0, 1.0);
    case AT::HardSwish: return x * std::clamp(x + 3, 0.0, 6.0) / 6;
    case AT::SiLU: return x / (1 + std::exp(-x));
    case AT::ELU: return x > 0 ? x : a * (std::exp(x) - 1);
    case AT::GELU: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

std::unique_ptr<fb::ActivationT> act(AT t, float a = 0.f, float b = 0.f) {
  auto p = std::make_unique<fb::ActivationT>();
  p->type = t;
  p->alpha = a;
  p->beta = b;
  return p;
}

// ---- Convolution --------------------------------------------------------------

struct ConvCase {
  int c, h, w, out, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group;
  fb::PadMode mode;
  bool bias;
  AT act;
};

// Padding before one axis and the output size, straight from the ONNX spec.
void ref_axis(int in, int k, int s, int d, int pb, int pe, fb::PadMode mode, int* pad, int* out) {
  const int ek = (k - 1) * d + 1;
  if (mode != fb::PadMode::Explicit) {
    const int o = (in + s - 1) / s;
    const int total = std::max(0, (o - 1) * s + ek - in);
    pb = mode == fb::PadMode::SameLower ? (total + 1) / 2 : total / 2;
    pe = total - pb;
  }
  *pad = pb;
  *out = (in + pb + pe - ek) / s + 1;
}

std::vector<float> ref_conv(const ConvCase& k, const std::vector<float>& x, const Tensor& wt, const Tensor& bias,
                            int* oh, int* ow) {
  int pt, pl;
  ref_axis(k.h, k.kh, k.sh, k.dh, k.pt, k.pb, k.mode, &pt, oh);
  ref_axis(k.w, k.kw, k.sw, k.dw, k.pl, k.pr, k.mode, &pl, ow);
  const int ipg = k.c / k.group, opg = k.out / k.group;
  std::vector<float> y(size_t(k.out) * *oh * *ow);
  for (int o = 0; o < k.out; ++o)
    for (int oy = 0; oy < *oh; ++oy)
      for (int ox = 0; ox < *ow; ++ox) {
        double sum = k.bias ? bias.data[o] : 0.0;
        for (int i = 0; i < ipg; ++i)
          for (int ky = 0; ky < k.kh; ++ky)
            for (int kx = 0; kx < k.kw; ++kx) {
              const int iy = oy * k.sh - pt + ky * k.dh, ix = ox * k.sw - pl + kx * k.dw;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              const int ic = (o / opg) * ipg + i;
              sum += double(wt.data[((size_t(o) * ipg + i) * k.kh + ky) * k.kw + kx]) *
                     x[(size_t(ic) * k.h + iy) * k.w + ix];
            }
        y[(size_t(o) * *oh + oy) * *ow + ox] = float(ref_activation(k.act, sum, 0.1, 6.0));
      }
  return y;
}

fb::ConvolutionParamT conv_param(const ConvCase& k) {
  fb::ConvolutionParamT p;
  p.num_output = k.out;
  p.kernel_h = k.kh, p.kernel_w = k.kw, p.stride_h = k.sh, p.stride_w = k.sw;
  p.dilation_h = k.dh, p.dilation_w = k.dw;
  p.pad_top = k.pt, p.pad_left = k.pl, p.pad_bottom = k.pb, p.pad_right = k.pr;
  p.pad_mode = k.mode;
  p.group = k.group;
  p.bias_term = k.bias;
  p.activation = act(k.act, 0.1f, 6.f);
  return p;
}

// ---- Pooling ------------------------------------------------------------------

struct PoolCase {
  int c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  fb::PoolType pool;
  fb::RoundMode round;
  bool include_pad;
  bool global;
  fb::PadMode mode;
};

int ref_pool_out(int in, int k, int s, int pb, int pe, bool ceil_mode) {
  const int span = in + pb + pe - k;
  int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;  // last window must start inside
  return out;
}

std::vector<float> ref_pool(const PoolCase& k, const std::vector<float>& x, int* oh, int* ow) {
  int kh = k.kh, kw = k.kw, sh = k.sh, sw = k.sw, pt = k.pt, pl = k.pl, pb = k.pb, pr = k.pr;
  if (k.global) kh = k.h, kw = k.w, sh = sw = 1, pt = pl = pb = pr = 0;
  if (k.mode != fb::PadMode::Explicit && !k.global) {
    int dummy;
    ref_axis(k.h, kh, sh, 1, 0, 0, k.mode, &pt, &dummy);
    ref_axis(k.w, kw, sw, 1, 0, 0, k.mode, &pl, &dummy);
    pb = std::max(0, ((k.h + sh - 1) / sh - 1) * sh + kh - k.h) - pt;
    pr = std::max(0, ((k.w + sw - 1) / sw - 1) * sw + kw - k.w) - pl;
  }
  const bool ceil_mode = k.round == fb::RoundMode::Ceil && k.mode == fb::PadMode::Explicit;
  *oh = ref_pool_out(k.h, kh, sh, pt, pb, ceil_mode);
  *ow = ref_pool_out(k.w, kw, sw, pl, pr, ceil_mode);
  std::vector<float> y;
  for (int q = 0; q < k.c; ++q)
    for (int oy = 0; oy < *oh; ++oy)
      for (int ox = 0; ox < *ow; ++ox) {
        double sum = 0, mx = -INFINITY;
        int inside = 0, padded = 0;
        for (int ky = 0; ky < kh; ++ky)
          for (int kx = 0; kx < kw; ++kx) {
            const int iy = oy * sh - pt + ky, ix = ox * sw - pl + kx;
            padded += iy < k.h + pb && ix < k.w + pr;  // Caffe: the window clipped to the padded input
            if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
            const float v = x[(size_t(q) * k.h + iy) * k.w + ix];
            sum += v, mx = std::max<double>(mx, v), ++inside;
          }
        if (k.pool == fb::PoolType::Max) y.push_back(float(mx));
        else y.push_back(float(sum / (k.include_pad ? padded : inside)));
      }
  return y;
}

fb::PoolingParamT pool_param(const PoolCase& k) {
  fb::PoolingParamT p;
  p.pool = k.pool, p.global = k.global;
  p.kernel_h = k.kh, p.kernel_w = k.kw, p.stride_h = k.sh, p.stride_w = k.sw;
  p.pad_top = k.pt, p.pad_left = k.pl, p.pad_bottom = k.pb, p.pad_right = k.pr;
  p.pad_mode = k.mode, p.round_mode = k.round, p.count_include_pad = k.include_pad;
  return p;
}

// ---- Shape helpers for the data-movement layers -------------------------------

Shape shape_of(const std::vector<int>& e) {
  switch (e.size()) {
    case 1: return Shape::make1(e[0]);
    case 2: return Shape::make2(e[1], e[0]);
    case 3: return Shape::make3(e[2], e[1], e[0]);
    default: return Shape::make4(e[3], e[2], e[1], e[0]);
  }
}

std::vector<int> unravel(size_t i, const std::vector<int>& e) {
  std::vector<int> idx(e.size());
  for (size_t k = e.size(); k-- > 0;) idx[k] = int(i % e[k]), i /= e[k];
  return idx;
}

size_t ravel(const std::vector<int>& idx, const std::vector<int>& e) {
  size_t i = 0;
  for (size_t k = 0; k < e.size(); ++k) i = i * e[k] + idx[k];
  return i;
}

size_t count_of(const std::vector<int>& e) {
  size_t n = 1;
  for (int d : e) n *= size_t(d);
  return n;
}

fb::SoftmaxParamT softmax_param(int axis) { fb::SoftmaxParamT p; p.axis = axis; return p; }
fb::ConcatParamT concat_param(int axis) { fb::ConcatParamT p; p.axis = axis; return p; }

}  // namespace

TEST_SUITE("layers") {

TEST_CASE("registry lists every built-in layer") {
  const std::vector<std::string> names = registered_layer_types();
  for (const char* t : {"Convolution", "Pooling", "InnerProduct", "Softmax", "Concat", "Flatten", "Reshape",
                        "Permute", "PriorBox", "DetectionOutput", "Activation", "Dropout"}) {
    CHECK(std::find(names.begin(), names.end(), t) != names.end());
    CHECK(bool(find_layer_creator(t)));
  }
  CHECK_FALSE(bool(find_layer_creator("NoSuchLayer")));
}

TEST_CASE("Convolution matches a naive convolution") {
  using PM = fb::PadMode;
  const ConvCase cases[] = {
      // c, h, w, out, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group, mode, bias, act
      {3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, PM::Explicit, true, AT::None},
      {5, 13, 17, 7, 3, 3, 2, 2, 1, 1, 0, 1, 2, 0, 1, PM::Explicit, true, AT::ReLU},      // stride 2, asym pad
      {4, 11, 10, 6, 3, 2, 1, 2, 2, 3, 2, 3, 1, 0, 2, PM::Explicit, false, AT::LeakyReLU},  // dilation, groups
      {6, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, PM::Explicit, true, AT::Clip},         // depthwise
      {6, 8, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6, PM::Explicit, true, AT::None},        // depthwise x2
      {3, 1, 1, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, PM::Explicit, true, AT::HardSwish},    // 1x1 spatial
      {17, 5, 6, 19, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, PM::Explicit, false, AT::Sigmoid},  // 1x1 kernel
      {3, 10, 11, 4, 4, 3, 3, 2, 1, 1, 0, 0, 0, 0, 1, PM::SameUpper, true, AT::None},
      {3, 10, 11, 4, 4, 3, 3, 2, 1, 2, 0, 0, 0, 0, 1, PM::SameLower, true, AT::SiLU},
      {8, 6, 5, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 4, PM::Explicit, true, AT::ELU},          // ipg 2, opg 1
  };
  std::mt19937 rng(1);
  for (const ConvCase& k : cases) {
    INFO("conv c=" << k.c << " h=" << k.h << " w=" << k.w << " group=" << k.group << " mode=" << int(k.mode));
    const Tensor w = random_tensor({k.out, k.c / k.group, k.kh, k.kw}, rng);
    const Tensor b = random_tensor({k.out}, rng);
    std::vector<WeightView> views{view(w)};
    if (k.bias) views.push_back(view(b));
    Harness h("Convolution", conv_param(k), views);
    const std::vector<float> x = random_values(size_t(k.c) * k.h * k.w, rng);
    int oh, ow;
    const std::vector<float> want = ref_conv(k, x, w, b, &oh, &ow);
    const Mat in = make_mat(Shape::make3(k.w, k.h, k.c), x);
    const Mat out1 = h.run({in}, 1);
    CHECK(out1.shape() == Shape::make3(ow, oh, k.out));
    check_close(logical(out1), want);
    CHECK(same_bits(logical(out1), logical(h.run({in}, 2))));
    // An unpadded external input (cstep == w*h) gives the same bits.
    std::vector<float> dense = x;
    const Mat ext = Mat::external(Shape::make3(k.w, k.h, k.c), dense.data(), size_t(k.w) * k.h);
    CHECK(same_bits(logical(out1), logical(h.run({ext}, 3))));
  }
}

TEST_CASE("Convolution hand-computed") {
  fb::ConvolutionParamT p;
  p.num_output = 1, p.kernel_h = 2, p.kernel_w = 2, p.bias_term = true;
  p.activation = act(AT::ReLU);
  const Tensor w{{1, 1, 2, 2}, {1, 1, 1, 1}}, b{{1}, {-20}};
  Harness h("Convolution", std::move(p), {view(w), view(b)});
  // 1 2 3 / 4 5 6 / 7 8 9: window sums 12 16 24 28, minus 20, ReLU.
  const Mat out = h.run({make_mat(Shape::make3(3, 3, 1), {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  CHECK(logical(out) == std::vector<float>{0, 0, 4, 8});
}

TEST_CASE("Convolution rejects bad parameters") {
  const ConvCase base{4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, fb::PadMode::Explicit, true, AT::None};
  std::mt19937 rng(2);
  const Tensor w = random_tensor({6, 2, 3, 3}, rng), b = random_tensor({6}, rng);
  auto load = [&](ConvCase k, std::vector<WeightView> views) {
    return Harness("Convolution", conv_param(k), std::move(views)).load;
  };
  ConvCase k = base;
  k.out = 0;
  check_error(load(k, {view(w), view(b)}), "num_output");
  k = base, k.kw = 0;
  check_error(load(k, {view(w), view(b)}), "kernel_w");
  k = base, k.sh = -1;
  check_error(load(k, {view(w), view(b)}), "stride_h");
  k = base, k.dw = 0;
  check_error(load(k, {view(w), view(b)}), "dilation_w");
  k = base, k.pb = -2;
  check_error(load(k, {view(w), view(b)}), "pad_bottom");
  k = base, k.group = 0;
  check_error(load(k, {view(w), view(b)}), "group");
  k = base, k.group = 4;
  check_error(load(k, {view(w), view(b)}), "divisible");
  check_error(load(base, {view(w)}), "expects 2 weights");
  const Tensor short_b{{5}, std::vector<float>(5)};
  check_error(load(base, {view(w), view(short_b)}), "bias");
  const Tensor wrong{{6, 2, 3, 2}, std::vector<float>(72)};
  check_error(load(base, {view(wrong), view(b)}), "kernel weight shape");
  // A shape whose element count overflows size_t must not be trusted.
  k = base, k.out = 65536, k.group = 1, k.kh = k.kw = 65536, k.bias = false;
  WeightView huge{w.data.data(), {65536, 65536 * 4, 65536, 65536}, 72};
  check_error(load(k, {huge}), "overflow");
  k = base, k.act = AT(99);
  check_error(load(k, {view(w), view(b)}), "activation");
  k = base, k.mode = fb::PadMode(7);
  check_error(load(k, {view(w), view(b)}), "pad_mode");

  Harness h("Convolution", conv_param(base), {view(w), view(b)});
  REQUIRE(h.load.ok());
  check_error(h.prepare({Shape::make3(8, 8, 3)}), "channels");
  CHECK(h.prepare({Shape::make3(1, 1, 4)}).ok());  // 1 + 2 padding == kernel: 1x1 output
  ConvCase unpadded = base;
  unpadded.pt = unpadded.pl = unpadded.pb = unpadded.pr = 0;
  Harness h2("Convolution", conv_param(unpadded), {view(w), view(b)});
  check_error(h2.prepare({Shape::make3(2, 8, 4)}), "window width (3) exceeds the padded input (2)");
  check_error(h.prepare({Shape::make1(8)}), "3-D");
}

TEST_CASE("Pooling matches a naive pooling") {
  using P = fb::PoolType;
  using R = fb::RoundMode;
  using PM = fb::PadMode;
  const PoolCase cases[] = {
      // c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, pool, round, include_pad, global, mode
      {3, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, P::Max, R::Floor, true, false, PM::Explicit},
      {3, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, P::Max, R::Ceil, true, false, PM::Explicit},
      {5, 13, 10, 3, 2, 2, 3, 0, 1, 2, 0, P::Average, R::Ceil, true, false, PM::Explicit},
      {5, 13, 10, 3, 2, 2, 3, 0, 1, 2, 0, P::Average, R::Ceil, false, false, PM::Explicit},
      {2, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, P::Average, R::Ceil, true, false, PM::Explicit},  // last window dropped
      {4, 17, 19, 2, 2, 2, 2, 0, 0, 0, 0, P::Average, R::Floor, true, false, PM::Explicit},
      {3, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, P::Average, R::Floor, false, false, PM::Explicit},  // 1x1 spatial
      {6, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0, P::Max, R::Floor, true, true, PM::Explicit},        // global max
      {6, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0, P::Average, R::Floor, true, true, PM::Explicit},    // global avg
      {3, 10, 11, 3, 2, 2, 3, 0, 0, 0, 0, P::Average, R::Floor, false, false, PM::SameUpper},
      {3, 10, 11, 3, 2, 2, 3, 0, 0, 0, 0, P::Max, R::Floor, true, false, PM::SameLower},
  };
  std::mt19937 rng(3);
  for (const PoolCase& k : cases) {
    INFO("pool " << int(k.pool) << " round " << int(k.round) << " include_pad " << k.include_pad << " global "
                 << k.global << " mode " << int(k.mode) << " h " << k.h);
    Harness h("Pooling", pool_param(k));
    const std::vector<float> x = random_values(size_t(k.c) * k.h * k.w, rng);
    int oh, ow;
    const std::vector<float> want = ref_pool(k, x, &oh, &ow);
    const Mat in = make_mat(Shape::make3(k.w, k.h, k.c), x);
    const Mat out = h.run({in}, 1);
    CHECK(out.shape() == Shape::make3(ow, oh, k.c));
    check_close(logical(out), want, 1e-5f);
    CHECK(same_bits(logical(out), logical(h.run({in}, 2))));
  }
}

TEST_CASE("Pooling hand-computed Caffe ceil mode") {
  // 4x4 input 0..15, kernel 3, stride 2, ceil: 2x2 outputs; the second window in each
  // axis reaches past the input and is clipped, so it divides by 2 cells per axis.
  PoolCase k{1, 4, 4, 3, 3, 2, 2, 0, 0, 0, 0, fb::PoolType::Average, fb::RoundMode::Ceil, true, false,
             fb::PadMode::Explicit};
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = float(i);
  Harness avg("Pooling", pool_param(k));
  CHECK(logical(avg.run({make_mat(Shape::make3(4, 4, 1), x)})) == std::vector<float>{5, 6.5f, 11, 12.5f});
  // 3x3 input, kernel 2, stride 2, pad 1, ceil: the third window would start at the
  // end padding (2 * 2 - 1 = 3 = in), so Caffe drops it: 2x2 output.
  k = PoolCase{1, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, fb::PoolType::Average, fb::RoundMode::Ceil, true, false,
               fb::PadMode::Explicit};
  Harness with_pad("Pooling", pool_param(k));
  const Mat in = make_mat(Shape::make3(3, 3, 1), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(logical(with_pad.run({in})) == std::vector<float>{0.25f, 1.25f, 2.75f, 7});
  k.include_pad = false;
  Harness without_pad("Pooling", pool_param(k));
  CHECK(logical(without_pad.run({in})) == std::vector<float>{1, 2.5f, 5.5f, 7});
}

TEST_CASE("Pooling rejects bad parameters") {
  PoolCase k{1, 4, 4, 3, 3, 2, 2, 0, 0, 0, 0, fb::PoolType::Max, fb::RoundMode::Floor, true, false,
             fb::PadMode::Explicit};
  PoolCase bad = k;
  bad.kh = 0;
  check_error(Harness("Pooling", pool_param(bad)).load, "kernel_h");
  bad = k, bad.sw = 0;
  check_error(Harness("Pooling", pool_param(bad)).load, "stride_w");
  bad = k, bad.pl = 3;
  check_error(Harness("Pooling", pool_param(bad)).load, "pad_left (3) must be smaller than kernel_w");
  bad = k, bad.pool = fb::PoolType(9);
  check_error(Harness("Pooling", pool_param(bad)).load, "pool type");
  Harness h("Pooling", pool_param(k));
  check_error(h.prepare({Shape::make3(2, 2, 1)}), "exceeds");
}

TEST_CASE("InnerProduct flattens any input and skips channel padding") {
  std::mt19937 rng(4);
  const std::vector<std::vector<int>> inputs = {{3, 5, 7}, {37}, {4, 9}, {2, 3, 1, 5}};
  for (const auto& e : inputs) {
    const int n_in = int(count_of(e)), n_out = 13;
    const Tensor w = random_tensor({n_out, n_in}, rng), b = random_tensor({n_out}, rng);
    fb::InnerProductParamT p;
    p.num_output = n_out, p.bias_term = true, p.activation = act(AT::TanH);
    Harness h("InnerProduct", std::move(p), {view(w), view(b)});
    const std::vector<float> x = random_values(n_in, rng);
    std::vector<float> want(n_out);
    for (int o = 0; o < n_out; ++o) {
      double s = b.data[o];
      for (int i = 0; i < n_in; ++i) s += double(w.data[size_t(o) * n_in + i]) * x[i];
      want[o] = float(std::tanh(s));
    }
    const Mat out = h.run({make_mat(shape_of(e), x)});
    CHECK(out.shape() == Shape::make1(n_out));
    check_close(logical(out), want);
    CHECK(same_bits(logical(out), logical(h.run({make_mat(shape_of(e), x)}, 2))));
  }
  fb::InnerProductParamT p;
  p.num_output = 2;
  const Tensor w{{2, 6}, std::vector<float>(12)};
  Harness h("InnerProduct", p, {view(w)});
  check_error(h.prepare({Shape::make3(2, 2, 2)}), "8 values");
  p.num_output = 3;
  check_error(Harness("InnerProduct", p, {view(w)}).load, "weight shape");
  p.num_output = 2, p.bias_term = true;
  check_error(Harness("InnerProduct", p, {view(w)}).load, "expects 2 weights");
}

TEST_CASE("Softmax along every axis") {
  std::mt19937 rng(5);
  const std::vector<std::vector<int>> shapes = {{11}, {5, 9}, {6, 3, 7}, {3, 4, 2, 5}, {17, 1, 1}};
  for (const auto& e : shapes) {
    const int nd = int(e.size());
    for (int axis = -nd; axis < nd; ++axis) {
      INFO("dims " << nd << " axis " << axis);
      const int a = axis < 0 ? axis + nd : axis;
      std::vector<float> x = random_values(count_of(e), rng, -5.f, 5.f);
      x[0] = 1000.f;  // must not overflow
      std::vector<float> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        std::vector<int> idx = unravel(i, e);
        double mx = -INFINITY, sum = 0;
        for (idx[a] = 0; idx[a] < e[a]; ++idx[a]) mx = std::max<double>(mx, x[ravel(idx, e)]);
        for (idx[a] = 0; idx[a] < e[a]; ++idx[a]) sum += std::exp(x[ravel(idx, e)] - mx);
        want[i] = float(std::exp(x[i] - mx) / sum);
      }
      Harness h("Softmax", softmax_param(axis));
      const Mat in = make_mat(shape_of(e), x);
      const Mat out = h.run({in});
      CHECK(out.shape() == in.shape());
      check_close(logical(out), want, 1e-5f);
      CHECK(same_bits(logical(out), logical(h.run({in}, 2))));
    }
  }
  Harness h("Softmax", softmax_param(3));
  check_error(h.prepare({Shape::make3(2, 2, 2)}), "axis 3");
}

TEST_CASE("Concat along every axis") {
  std::mt19937 rng(6);
  const std::vector<std::vector<int>> shapes = {{5}, {3, 7}, {4, 3, 5}, {2, 3, 2, 5}};
  for (const auto& base : shapes) {
    const int nd = int(base.size());
    for (int a = 0; a < nd; ++a) {
      INFO("dims " << nd << " axis " << a);
      std::vector<std::vector<int>> ext;
      std::vector<std::vector<float>> vals;
      std::vector<Mat> ins;
      std::vector<int> oe = base;
      oe[a] = 0;
      for (int i = 0; i < 3; ++i) {
        std::vector<int> e = base;
        e[a] = i + 1 + (a % 2);
        oe[a] += e[a];
        ext.push_back(e);
        vals.push_back(random_values(count_of(e), rng));
        ins.push_back(make_mat(shape_of(e), vals.back()));
      }
      std::vector<float> want(count_of(oe));
      for (size_t i = 0; i < want.size(); ++i) {
        std::vector<int> idx = unravel(i, oe);
        int k = 0;
        while (idx[a] >= ext[k][a]) idx[a] -= ext[k++][a];
        want[i] = vals[k][ravel(idx, ext[k])];
      }
      Harness h("Concat", concat_param(a - (a % 2) * nd));  // odd axes given negative
      const Mat out = h.run(ins, 2);
      CHECK(out.shape() == shape_of(oe));
      CHECK(logical(out) == want);
    }
  }
  Harness h("Concat", concat_param(1));
  check_error(h.prepare({Shape::make3(4, 3, 2), Shape::make3(5, 3, 2)}), "does not match");
  check_error(h.prepare({Shape::make3(4, 3, 2), Shape::make2(4, 3)}), "does not match");
  check_error(Harness("Concat", concat_param(-4)).prepare({Shape::make3(4, 3, 2)}), "axis -4");
}

TEST_CASE("Flatten, Reshape and Dropout keep logical order") {
  std::mt19937 rng(7);
  const std::vector<float> x = random_values(3 * 5 * 7, rng);
  const Mat in = make_mat(Shape::make3(7, 5, 3), x);
  Harness flat("Flatten", nullptr);
  const Mat f = flat.run({in}, 2);
  CHECK(f.shape() == Shape::make1(105));
  CHECK(logical(f) == x);

  auto reshape = [](std::vector<int> target) {
    fb::ReshapeParamT p;
    p.shape = std::move(target);
    return Harness("Reshape", p);
  };
  Harness r1 = reshape({0, -1});
  CHECK(r1.run({in}).shape() == Shape::make2(35, 3));
  CHECK(logical(r1.run({in})) == x);
  Harness r2 = reshape({5, 3, 1, 7});
  const Mat r2o = r2.run({in}, 2);
  CHECK(r2o.shape() == Shape::make4(7, 1, 3, 5));
  CHECK(logical(r2o) == x);
  Harness r3 = reshape({-1, 21});  // a padded output from a dense input
  CHECK(logical(reshape({7, 3, 5}).run({r3.run({in})})) == x);
  check_error(reshape({-1, -1}).load, "more than one -1");
  check_error(reshape({1, 2, 3, 4, 5}).load, "1 to 4 dims");
  check_error(reshape({-2}).load, "invalid");
  check_error(reshape({4, -1}).prepare({in.shape()}), "-1");
  check_error(reshape({100}).prepare({in.shape()}), "100 values");
  check_error(reshape({0, 0, 0, 0}).prepare({in.shape()}), "only 3 dims");
  check_error(reshape({2147483647, 2147483647, 2}).prepare({in.shape()}), "more values");

  Harness drop("Dropout", nullptr);
  CHECK(drop.layer->supports_inplace());
  CHECK(logical(drop.run({in})) == x);
  std::vector<Mat> same{in};
  drop.forward({in}, same, 1);
  CHECK(logical(in) == x);
}

TEST_CASE("Permute any order") {
  std::mt19937 rng(8);
  const std::vector<std::vector<int>> shapes = {{6}, {4, 7}, {3, 5, 6}, {2, 3, 4, 5}};
  for (const auto& e : shapes) {
    std::vector<int> order(e.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    const std::vector<float> x = random_values(count_of(e), rng);
    const Mat in = make_mat(shape_of(e), x);
    do {
      std::vector<int> oe(e.size());
      for (size_t i = 0; i < e.size(); ++i) oe[i] = e[order[i]];
      std::vector<float> want(x.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const std::vector<int> oi = unravel(i, oe);
        std::vector<int> ii(e.size());
        for (size_t k = 0; k < e.size(); ++k) ii[order[k]] = oi[k];
        want[i] = x[ravel(ii, e)];
      }
      fb::PermuteParamT p;
      p.order = order;
      Harness h("Permute", p);
      const Mat out = h.run({in}, 2);
      CHECK(out.shape() == shape_of(oe));
      CHECK(logical(out) == want);
    } while (std::next_permutation(order.begin(), order.end()));
  }
  fb::PermuteParamT p;
  p.order = {0, 2, 2};
  check_error(Harness("Permute", p).load, "not a permutation");
  p.order = {1, 0};
  check_error(Harness("Permute", p).prepare({Shape::make3(2, 2, 2)}), "3 dims");
}

TEST_CASE("Activation layer: every type, in place and not") {
  const std::vector<float> x = {-7.f, -3.f, -2.5f, -1.f, -0.5f, -0.f, 0.f, 0.25f, 1.f, 2.5f, 3.f, 7.f};
  const struct { AT t; float a, b; } cases[] = {
      {AT::None, 0, 0}, {AT::ReLU, 0, 0},   {AT::LeakyReLU, 0.2f, 0}, {AT::Clip, -1.f, 2.f},
      {AT::Sigmoid, 0, 0}, {AT::TanH, 0, 0}, {AT::HardSigmoid, 0.2f, 0.5f}, {AT::HardSwish, 0, 0},
      {AT::SiLU, 0, 0}, {AT::ELU, 1.5f, 0}, {AT::GELU, 0, 0}};
  for (const auto& k : cases) {
    CAPTURE(int(k.t));
    std::vector<float> want;
    for (float v : x) want.push_back(float(ref_activation(k.t, v, k.a, k.b)));
    fb::ActivationParamT p;
    p.activation = act(k.t, k.a, k.b);
    Harness h("Activation", std::move(p));
    CHECK(h.layer->supports_inplace());
    const Mat in = make_mat(Shape::make3(4, 1, 3), x);
    check_close(logical(h.run({in})), want, 1e-6f);
    std::vector<Mat> same{in};
    h.forward({in}, same, 2);
    check_close(logical(in), want, 1e-6f);
  }
  fb::ActivationParamT p;
  p.activation = act(AT(42));
  check_error(Harness("Activation", std::move(p)).load, "unknown activation type 42");
}

TEST_CASE("PriorBox hand-computed (Caffe-SSD)") {
  fb::PriorBoxParamT p;
  p.min_sizes = {30};
  p.max_sizes = {60};
  p.aspect_ratios = {2.f, 2.0000001f, 0.5f};  // duplicates of 2 and its flip: 1, 2, 1/2
  p.flip = true;
  p.variances = {0.1f, 0.1f, 0.2f, 0.2f};
  Harness h("PriorBox", p);
  std::vector<float> unused(4 * 100 * 100);
  const Mat feat = make_mat(Shape::make3(2, 2, 1), {0, 0, 0, 0});
  const Mat image = Mat::external(Shape::make3(100, 100, 1), unused.data());
  const Mat out = h.run({feat, image});
  REQUIRE(out.shape() == Shape::make2(2 * 2 * 4 * 4, 2));
  // Cell (y 0, x 0), center (25, 25), step 50: min square, sqrt(30*60) square, ar 2, ar 1/2.
  const float s = 21.2132034f, r = 10.6066017f;  // sqrt(1800) / 2, 30 / sqrt(2) / 2
  const std::vector<float> cell0 = {0.1f, 0.1f, 0.4f, 0.4f,
                                    (25 - s) / 100, (25 - s) / 100, (25 + s) / 100, (25 + s) / 100,
                                    (25 - s) / 100, (25 - r) / 100, (25 + s) / 100, (25 + r) / 100,
                                    (25 - r) / 100, (25 - s) / 100, (25 + r) / 100, (25 + s) / 100};
  check_close(std::vector<float>(out.row(0), out.row(0) + 16), cell0, 1e-6f);
  // Cell (y 0, x 1): center (75, 25).
  check_close(std::vector<float>(out.row(0) + 16, out.row(0) + 20), {0.6f, 0.1f, 0.9f, 0.4f}, 1e-6f);
  // Cell (y 1, x 0): center (25, 75).
  check_close(std::vector<float>(out.row(0) + 32, out.row(0) + 36), {0.1f, 0.6f, 0.4f, 0.9f}, 1e-6f);
  for (int i = 0; i < out.w; ++i) CHECK(out.row(1)[i] == (i % 4 < 2 ? 0.1f : 0.2f));

  // Image size from the parameters, clipping, one variance, no max size, explicit step,
  // and Caffe's int truncation of min_size (80.9 -> 80).
  fb::PriorBoxParamT q;
  q.min_sizes = {80.9f};
  q.clip = true;
  q.variances = {0.1f};
  q.image_w = 200, q.image_h = 100;
  q.step_w = 40, q.step_h = 40;
  Harness hq("PriorBox", q);
  const Mat oq = hq.run({make_mat(Shape::make3(3, 2, 8), std::vector<float>(48))});
  REQUIRE(oq.shape() == Shape::make2(3 * 2 * 4, 2));
  // Cell (0, 0): center (20, 20): (-20, -20, 60, 60) / (200, 100), clipped.
  check_close(std::vector<float>(oq.row(0), oq.row(0) + 4), {0.f, 0.f, 0.3f, 0.6f}, 1e-6f);
  for (int i = 0; i < oq.w; ++i) CHECK(oq.row(1)[i] == 0.1f);

  fb::PriorBoxParamT bad;
  check_error(Harness("PriorBox", bad).load, "min_sizes");
  bad.min_sizes = {30, 40};
  bad.max_sizes = {60};
  check_error(Harness("PriorBox", bad).load, "max_sizes");
  bad.max_sizes = {60, 35};
  check_error(Harness("PriorBox", bad).load, "max_size 35");
  bad.max_sizes = {};
  bad.variances = {0.1f, 0.2f};
  check_error(Harness("PriorBox", bad).load, "variances");
  bad.variances = {};
  check_error(Harness("PriorBox", bad).prepare({Shape::make3(2, 2, 1)}), "input");
}

TEST_CASE("DetectionOutput decodes, suppresses and ranks") {
  // Priors 0 and 1 overlap (IoU 0.818), prior 2 is apart, prior 3 is far away.
  const std::vector<float> boxes = {0.1f, 0.1f, 0.3f, 0.3f, 0.12f, 0.1f, 0.32f, 0.3f,
                                    0.6f, 0.6f, 0.9f, 0.9f, 0.0f, 0.5f, 0.2f, 0.7f};
  std::vector<float> pri = boxes;
  for (int i = 0; i < 4; ++i) pri.insert(pri.end(), {0.1f, 0.1f, 0.2f, 0.2f});
  const Mat priors = make_mat(Shape::make2(16, 2), pri);
  std::vector<float> loc(16, 0.f);
  // Prior 3: CenterSize offsets (1, 0, ln 2 / 0.2, 0): the center x moves by
  // 0.1 * 1 * 0.2 to 0.12 and the width doubles to 0.4: box (-0.08, 0.5, 0.32, 0.7).
  loc[12] = 1.f, loc[14] = std::log(2.f) / 0.2f;
  // Classes: 0 background, 1, 2. Scores per prior.
  const std::vector<float> conf = {0.1f, 0.9f, 0.0f,  0.1f, 0.8f, 0.1f,
                                   0.2f, 0.7f, 0.05f, 0.1f, 0.2f, 0.85f};
  auto run = [&](float threshold, int keep_top_k, int top_k) {
    fb::DetectionOutputParamT p;
    p.num_classes = 3, p.nms_threshold = 0.45f, p.confidence_threshold = threshold;
    p.keep_top_k = keep_top_k, p.top_k = top_k;
    Harness h("DetectionOutput", p);
    const Mat out = h.run({make_mat(Shape::make1(16), loc), make_mat(Shape::make1(12), conf), priors});
    CHECK(h.out_shapes[0].h == (keep_top_k > 0 ? keep_top_k : 8));
    CHECK(out.w == 6);
    std::vector<std::vector<float>> rows;
    for (int i = 0; i < out.h; ++i) rows.emplace_back(out.row(i), out.row(i) + 6);
    return rows;
  };
  const auto all = run(0.01f, -1, -1);
  REQUIRE(all.size() == 6);
  // Score order across classes; prior 1 in class 1 (0.8) is suppressed by prior 0,
  // while in class 2 nothing it overlaps is kept.
  check_close(all[0], {1, 0.9f, 0.1f, 0.1f, 0.3f, 0.3f}, 1e-5f);
  check_close(all[1], {2, 0.85f, -0.08f, 0.5f, 0.32f, 0.7f}, 1e-5f);
  check_close(all[2], {1, 0.7f, 0.6f, 0.6f, 0.9f, 0.9f}, 1e-5f);
  check_close(all[3], {1, 0.2f, -0.08f, 0.5f, 0.32f, 0.7f}, 1e-5f);
  check_close(all[4], {2, 0.1f, 0.12f, 0.1f, 0.32f, 0.3f}, 1e-5f);
  check_close(all[5], {2, 0.05f, 0.6f, 0.6f, 0.9f, 0.9f}, 1e-5f);
  // Scores must exceed the threshold: 0.15 drops 0.1 and 0.05, 0.09 only 0.05.
  CHECK(run(0.15f, -1, -1).size() == 4);
  CHECK(run(0.09f, -1, -1).size() == 5);
  const auto top2 = run(0.01f, 2, -1);
  REQUIRE(top2.size() == 2);
  CHECK(top2[0][1] == 0.9f);
  CHECK(top2[1][1] == 0.85f);
  // top_k 1 per class before NMS: class 1 keeps prior 0, class 2 prior 3.
  CHECK(run(0.01f, -1, 1).size() == 2);
  const auto none = run(0.95f, 3, -1);
  CHECK(none.empty());
}

TEST_CASE("DetectionOutput Corner code and bad parameters") {
  fb::DetectionOutputParamT p;
  p.num_classes = 2, p.code_type = fb::CodeType::Corner, p.confidence_threshold = 0.5f;
  Harness h("DetectionOutput", p);
  const Mat priors = make_mat(Shape::make2(4, 2), {0.2f, 0.2f, 0.4f, 0.4f, 0.1f, 0.1f, 0.2f, 0.2f});
  const Mat out = h.run({make_mat(Shape::make1(4), {1, -1, 1, 0.5f}), make_mat(Shape::make2(2, 1), {0.3f, 0.7f}),
                         priors});
  REQUIRE(out.h == 1);
  check_close(std::vector<float>(out.row(0), out.row(0) + 6), {1, 0.7f, 0.3f, 0.1f, 0.6f, 0.5f}, 1e-6f);

  fb::DetectionOutputParamT bad = p;
  bad.share_location = false;
  check_error(Harness("DetectionOutput", bad).load, "share_location");
  bad = p, bad.num_classes = 0;
  check_error(Harness("DetectionOutput", bad).load, "num_classes");
  bad = p, bad.num_classes = 1;
  check_error(Harness("DetectionOutput", bad).load, "no class besides the background");
  bad = p, bad.background_label_id = 2;
  check_error(Harness("DetectionOutput", bad).load, "background_label_id");
  check_error(h.prepare({Shape::make1(8), Shape::make1(4), Shape::make2(4, 2)}), "loc has 8");
  check_error(h.prepare({Shape::make1(4), Shape::make1(3), Shape::make2(4, 2)}), "conf has 3");
  check_error(h.prepare({Shape::make1(4), Shape::make1(2), Shape::make2(4, 3)}), "priors");
}

}  // TEST_SUITE
