// Shared by the layer test files: naive references, a one-layer harness, helpers.
#pragma once
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

namespace lt {

using namespace kestrel;
using AT = fb::ActivationType;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Tensor {
  std::vector<int> shape;
  std::vector<float> data;
};
inline WeightView view(const Tensor& t) { return WeightView{t.data.data(), t.shape, t.data.size()}; }

inline std::vector<float> random_values(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline Tensor random_tensor(std::vector<int> shape, std::mt19937& rng) {
  size_t n = 1;
  for (int d : shape) n *= size_t(d);
  return Tensor{shape, random_values(n, rng)};
}

inline size_t plane_of(const Mat& m) { return size_t(m.w) * m.h * (m.dims == 4 ? m.d : 1); }
inline int planes_of(const Mat& m) { return m.dims >= 3 ? m.c : 1; }

// Values in logical order (outermost first), skipping channel padding.
inline std::vector<float> logical(const Mat& m) {
  std::vector<float> v;
  for (int q = 0; q < planes_of(m); ++q) v.insert(v.end(), m.channel(q), m.channel(q) + plane_of(m));
  return v;
}

// A Mat holding `values` in logical order; the padding holds NaN so that reading it
// shows up in every result.
inline Mat make_mat(const Shape& s, const std::vector<float>& values) {
  Mat m;
  REQUIRE(m.create(s));
  std::fill(m.data, m.data + m.total(), kNaN);
  for (int q = 0; q < planes_of(m); ++q) {
    std::copy(values.begin() + q * plane_of(m), values.begin() + (q + 1) * plane_of(m), m.channel(q));
  }
  return m;
}

inline void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (1.f + std::fabs(want[i])))) {
      FAIL_CHECK("value " << i << ": got " << got[i] << ", want " << want[i]);
      return;
    }
  }
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // An empty vector's data() may be null, which memcmp must not see even for 0 bytes.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
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
    // Laid out as the Extractor does: shared scratch, then one region per thread.
    const size_t shared = (layer->workspace_bytes + kAlignment - 1) / kAlignment * kAlignment;
    const size_t stride = (layer->workspace_per_thread_bytes + kAlignment - 1) / kAlignment * kAlignment;
    const size_t bytes = std::max<size_t>(shared + stride * threads, 1);
    void* ws = ::operator new(bytes, std::align_val_t(kAlignment));
    ForwardContext fc;
    fc.num_threads = threads;
    fc.workspace = ws;
    fc.thread_scratch = static_cast<char*>(ws) + shared;
    fc.thread_scratch_stride = stride;
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

inline void check_error(const Status& s, const char* words) {
  CHECK_FALSE(s.ok());
  CHECK_MESSAGE(s.message().find(words) != std::string::npos, "message: " << s.message());
}

inline double ref_activation(AT t, double x, double a, double b) {
  switch (t) {
    case AT::ReLU: return std::max(x, 0.0);
    case AT::LeakyReLU: return x > 0 ? x : a * x;
    case AT::Clip: return std::min(std::max(x, a), b);
    case AT::Sigmoid: return 1 / (1 + std::exp(-x));
    case AT::TanH: return std::tanh(x);
    case AT::HardSigmoid: return std::clamp(a * x + b, 0.0, 1.0);
    case AT::HardSwish: return a == 0 ? x * std::clamp(x + 3, 0.0, 6.0) / 6 : x * a * std::clamp(x + 3, 0.0, 6.0);
    case AT::SiLU: return x / (1 + std::exp(-x));
    case AT::ELU: return x > 0 ? x : a * (std::exp(x) - 1);
    case AT::GELU: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

inline std::unique_ptr<fb::ActivationT> act(AT t, float a = 0.f, float b = 0.f) {
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
inline void ref_axis(int in, int k, int s, int d, int pb, int pe, fb::PadMode mode, int* pad, int* out) {
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

inline std::vector<float> ref_conv(const ConvCase& k, const std::vector<float>& x, const Tensor& wt, const Tensor& bias,
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

inline fb::ConvolutionParamT conv_param(const ConvCase& k) {
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

inline int ref_pool_out(int in, int k, int s, int pb, int pe, bool ceil_mode) {
  const int span = in + pb + pe - k;
  int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;  // last window must start inside
  return out;
}

inline std::vector<float> ref_pool(const PoolCase& k, const std::vector<float>& x, int* oh, int* ow) {
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

inline fb::PoolingParamT pool_param(const PoolCase& k) {
  fb::PoolingParamT p;
  p.pool = k.pool, p.global = k.global;
  p.kernel_h = k.kh, p.kernel_w = k.kw, p.stride_h = k.sh, p.stride_w = k.sw;
  p.pad_top = k.pt, p.pad_left = k.pl, p.pad_bottom = k.pb, p.pad_right = k.pr;
  p.pad_mode = k.mode, p.round_mode = k.round, p.count_include_pad = k.include_pad;
  return p;
}

// ---- Shape helpers for the data-movement layers -------------------------------

inline Shape shape_of(const std::vector<int>& e) {
  switch (e.size()) {
    case 1: return Shape::make1(e[0]);
    case 2: return Shape::make2(e[1], e[0]);
    case 3: return Shape::make3(e[2], e[1], e[0]);
    default: return Shape::make4(e[3], e[2], e[1], e[0]);
  }
}

inline std::vector<int> unravel(size_t i, const std::vector<int>& e) {
  std::vector<int> idx(e.size());
  for (size_t k = e.size(); k-- > 0;) idx[k] = int(i % e[k]), i /= e[k];
  return idx;
}

inline size_t ravel(const std::vector<int>& idx, const std::vector<int>& e) {
  size_t i = 0;
  for (size_t k = 0; k < e.size(); ++k) i = i * e[k] + idx[k];
  return i;
}

inline size_t count_of(const std::vector<int>& e) {
  size_t n = 1;
  for (int d : e) n *= size_t(d);
  return n;
}

inline fb::SoftmaxParamT softmax_param(int axis) { fb::SoftmaxParamT p; p.axis = axis; return p; }
inline fb::ConcatParamT concat_param(int axis) { fb::ConcatParamT p; p.axis = axis; return p; }

}  // namespace lt
