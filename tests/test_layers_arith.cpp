// Deconvolution, BatchNorm, Scale, PReLU, Eltwise, BinaryOp, LRN and Normalize: what the
// PyTorch cases (tests/torch/cases_arith.py, cases_deconv.py) cannot express:
// parameter errors, in-place runs, unpadded external inputs, NaN handling and output
// padding beyond PyTorch's limit.
#include "kestrel/builder.h"
#include "kestrel/net.h"
#include "layer_test_util.h"

using namespace lt;

namespace {

// Runs a prepared harness with the output written over a copy of the input, as the
// Extractor does for a layer it runs in place.
Mat run_inplace(Harness& h, const Mat& in, int threads) {
  Mat m = in.clone();
  std::vector<Mat> out{m};
  h.forward({m}, out, threads);
  return m;
}

// The same values as `m` in an unpadded external buffer (cstep == w*h), kept in `store`.
Mat external_copy(const Mat& m, std::vector<float>& store) {
  store = logical(m);
  return Mat::external(m.shape(), store.data(), m.dims >= 3 ? plane_of(m) : 0);
}

// Checks that `h` gives the same bits out of place, in place, from an unpadded
// external input and with 1 or 3 threads.
void check_layouts(Harness& h, const Mat& in) {
  const std::vector<float> want = logical(h.run({in}, 1));
  CHECK(same_bits(want, logical(h.run({in}, 3))));
  std::vector<float> store;
  CHECK(same_bits(want, logical(h.run({external_copy(in, store)}, 2))));
  if (h.layer->supports_inplace()) CHECK(same_bits(want, logical(run_inplace(h, in, 2))));
}

Tensor values(std::vector<int> shape, std::vector<float> v) { return Tensor{std::move(shape), std::move(v)}; }

// ---- Deconvolution reference ---------------------------------------------------

struct DeconvCase {
  int c, h, w, out, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw, group;
  bool bias;
  AT act;
};

fb::ConvolutionParamT deconv_param(const DeconvCase& k) {
  fb::ConvolutionParamT p;
  p.num_output = k.out;
  p.kernel_h = k.kh, p.kernel_w = k.kw, p.stride_h = k.sh, p.stride_w = k.sw;
  p.dilation_h = k.dh, p.dilation_w = k.dw;
  p.pad_top = k.pt, p.pad_left = k.pl, p.pad_bottom = k.pb, p.pad_right = k.pr;
  p.output_pad_h = k.oph, p.output_pad_w = k.opw;
  p.group = k.group;
  p.bias_term = k.bias;
  p.activation = act(k.act, 0.1f, 6.f);
  return p;
}

// Straight from the definition: input pixel (iy, ix) adds x * w at output position
// iy * stride - pad + tap * dilation of every output channel of its group.
std::vector<float> ref_deconv(const DeconvCase& k, const std::vector<float>& x, const Tensor& wt, const Tensor& b,
                              int* oh, int* ow) {
  *oh = (k.h - 1) * k.sh + k.dh * (k.kh - 1) + 1 - k.pt - k.pb + k.oph;
  *ow = (k.w - 1) * k.sw + k.dw * (k.kw - 1) + 1 - k.pl - k.pr + k.opw;
  const int ipg = k.c / k.group, opg = k.out / k.group;
  std::vector<double> acc(size_t(k.out) * *oh * *ow, 0.0);
  for (int ic = 0; ic < k.c; ++ic)
    for (int og = 0; og < opg; ++og)
      for (int iy = 0; iy < k.h; ++iy)
        for (int ix = 0; ix < k.w; ++ix)
          for (int ky = 0; ky < k.kh; ++ky)
            for (int kx = 0; kx < k.kw; ++kx) {
              const int oy = iy * k.sh - k.pt + ky * k.dh, ox = ix * k.sw - k.pl + kx * k.dw;
              if (oy < 0 || oy >= *oh || ox < 0 || ox >= *ow) continue;
              const int oc = (ic / ipg) * opg + og;
              acc[(size_t(oc) * *oh + oy) * *ow + ox] +=
                  double(x[(size_t(ic) * k.h + iy) * k.w + ix]) *
                  wt.data[((size_t(ic) * opg + og) * k.kh + ky) * k.kw + kx];
            }
  std::vector<float> y(acc.size());
  const size_t plane = size_t(*oh) * *ow;
  for (size_t i = 0; i < acc.size(); ++i) {
    const double v = acc[i] + (k.bias ? b.data[i / plane] : 0.0);
    y[i] = float(ref_activation(k.act, v, 0.1, 6.0));
  }
  return y;
}

}  // namespace

TEST_SUITE("layers") {

TEST_CASE("registry lists the arithmetic layers") {
  for (const char* t : {"Deconvolution", "BatchNorm", "Scale", "PReLU", "Eltwise", "BinaryOp", "LRN", "Normalize"}) {
    CHECK(bool(find_layer_creator(t)));
  }
}

TEST_CASE("Deconvolution matches a naive scatter, including output padding past the stride") {
  const DeconvCase cases[] = {
      // c, h, w, out, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw, group, bias, act
      {3, 4, 5, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, AT::None},
      {2, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 2, 3, 1, true, AT::ReLU},   // output pad >= stride: bias rows
      {4, 5, 4, 6, 3, 2, 3, 2, 2, 1, 2, 0, 1, 3, 0, 1, 2, false, AT::None},  // groups, asymmetric
      {5, 3, 4, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 5, true, AT::Clip},  // depthwise x2
      {3, 1, 1, 2, 4, 4, 3, 3, 1, 1, 3, 0, 0, 3, 0, 0, 1, true, AT::None},   // 1x1 input, crop to 1x1
  };
  std::mt19937 rng(11);
  for (const DeconvCase& k : cases) {
    INFO("deconv c=" << k.c << " group=" << k.group << " oph=" << k.oph);
    const Tensor w = random_tensor({k.c, k.out / k.group, k.kh, k.kw}, rng);
    const Tensor b = random_tensor({k.out}, rng);
    std::vector<WeightView> views{view(w)};
    if (k.bias) views.push_back(view(b));
    Harness h("Deconvolution", deconv_param(k), views);
    const std::vector<float> x = random_values(size_t(k.c) * k.h * k.w, rng);
    int oh, ow;
    const std::vector<float> want = ref_deconv(k, x, w, b, &oh, &ow);
    const Mat in = make_mat(Shape::make3(k.w, k.h, k.c), x);
    const Mat out = h.run({in});
    CHECK(out.shape() == Shape::make3(ow, oh, k.out));
    check_close(logical(out), want);
    CHECK_FALSE(h.layer->supports_inplace());
    check_layouts(h, in);
  }
}

TEST_CASE("Deconvolution hand-computed") {
  // Kernel 2x2 of ones, stride 2: each input pixel becomes a 2x2 block; stride 1:
  // overlapping blocks add up.
  fb::ConvolutionParamT p;
  p.num_output = 1, p.kernel_h = 2, p.kernel_w = 2, p.stride_h = 2, p.stride_w = 2;
  const Tensor w = values({1, 1, 2, 2}, {1, 1, 1, 1});
  const Mat in = make_mat(Shape::make3(2, 1, 1), {1, 2});
  Harness up("Deconvolution", p, {view(w)});
  CHECK(logical(up.run({in})) == std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2});
  p.stride_h = p.stride_w = 1;
  Harness overlap("Deconvolution", p, {view(w)});
  CHECK(logical(overlap.run({in})) == std::vector<float>{1, 3, 2, 1, 3, 2});
}

TEST_CASE("Deconvolution rejects bad parameters") {
  const DeconvCase base{4, 5, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, true, AT::None};
  std::mt19937 rng(12);
  const Tensor w = random_tensor({4, 3, 3, 3}, rng), b = random_tensor({6}, rng);
  auto load = [&](const DeconvCase& k, std::vector<WeightView> views, fb::PadMode mode = fb::PadMode::Explicit) {
    fb::ConvolutionParamT p = deconv_param(k);
    p.pad_mode = mode;
    return Harness("Deconvolution", std::move(p), std::move(views)).load;
  };
  const std::vector<WeightView> good{view(w), view(b)};
  CHECK(load(base, good).ok());
  DeconvCase k = base;
  k.out = 0;
  check_error(load(k, good), "num_output");
  k = base, k.kh = 0;
  check_error(load(k, good), "kernel_h");
  k = base, k.sw = 0;
  check_error(load(k, good), "stride_w");
  k = base, k.dh = -1;
  check_error(load(k, good), "dilation_h");
  k = base, k.pl = -1;
  check_error(load(k, good), "pad_left");
  k = base, k.oph = -1;
  check_error(load(k, good), "output_pad_h");
  k = base, k.opw = -2;
  check_error(load(k, good), "output_pad_w");
  k = base, k.group = 0;
  check_error(load(k, good), "group");
  k = base, k.group = 4;
  check_error(load(k, good), "divisible");
  const Status same = load(base, good, fb::PadMode::SameUpper);
  check_error(same, "pad_mode Explicit");
  CHECK(same.code() == ErrorCode::kUnsupported);
  check_error(load(base, good, fb::PadMode(9)), "unknown pad_mode");
  check_error(load(base, {view(w)}), "expects 2 weights");
  k = base, k.act = AT(77);
  check_error(load(k, good), "activation");
  // Convolution's layout [out, in/group, kh, kw] instead of [in, out/group, kh, kw].
  const Tensor conv_layout = random_tensor({6, 2, 3, 3}, rng);
  check_error(load(base, {view(conv_layout), view(b)}), "kernel weight shape");
  const Tensor odd_in = random_tensor({5, 3, 3, 3}, rng);  // 5 input channels, group 2
  check_error(load(base, {view(odd_in), view(b)}), "kernel weight shape");
  WeightView short_w = view(w);
  short_w.count -= 1;
  check_error(load(base, {short_w, view(b)}), "expected 108");
  WeightView huge{w.data.data(), {65536, 65536, 65536, 65536}, 108};
  k = base, k.out = 65536, k.group = 1, k.kh = k.kw = 65536, k.bias = false;
  check_error(load(k, {huge}), "overflow");
  const Tensor short_b = random_tensor({5}, rng);
  check_error(load(base, {view(w), view(short_b)}), "bias");

  Harness h("Deconvolution", deconv_param(base), good);
  REQUIRE(h.load.ok());
  check_error(h.prepare({Shape::make3(5, 5, 3)}), "channels");
  check_error(h.prepare({Shape::make2(5, 4)}), "3-D");
  CHECK(h.prepare({Shape::make3(1, 1, 4)}).ok());
  CHECK(h.out_shapes[0] == Shape::make3(2, 2, 6));  // 3 - 1 - 1 + 1
  k = base, k.pt = 2, k.pb = 2, k.oph = 0;  // 1x1 input: span 3 - 4 pads
  Harness cropped("Deconvolution", deconv_param(k), good);
  check_error(cropped.prepare({Shape::make3(1, 1, 4)}), "output height would be -1");
}

// ---- BatchNorm, Scale, PReLU ----------------------------------------------------

TEST_CASE("per-channel layers run in place, on every rank and on unpadded inputs") {
  std::mt19937 rng(13);
  const std::vector<std::vector<int>> shapes = {{7}, {5, 3}, {6, 5, 7}, {3, 2, 4, 5}, {17, 1, 1}};
  for (const auto& e : shapes) {
    CAPTURE(e.size());
    const int c = e[0];
    const Mat in = make_mat(shape_of(e), random_values(count_of(e), rng, -2.f, 2.f));
    const std::vector<float> x = logical(in);
    const size_t per = x.size() / c;
    const Tensor mean = random_tensor({c}, rng), gamma = random_tensor({c}, rng), beta = random_tensor({c}, rng);
    const Tensor var{{c}, random_values(c, rng, 0.1f, 2.f)};
    fb::BatchNormParamT bp;
    bp.eps = 1e-3f;
    Harness bn("BatchNorm", bp, {view(mean), view(var), view(gamma), view(beta)});
    CHECK(bn.layer->supports_inplace());
    CHECK(bn.layer->packed_weight_bytes() == 2 * sizeof(float) * c);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t q = i / per;
      want[i] = float((x[i] - mean.data[q]) / std::sqrt(double(var.data[q]) + 1e-3) * gamma.data[q] + beta.data[q]);
    }
    check_close(logical(bn.run({in})), want);
    check_layouts(bn, in);

    fb::ScaleParamT sp;
    sp.bias_term = true;
    Harness scale("Scale", sp, {view(gamma), view(beta)});
    for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * gamma.data[i / per] + beta.data[i / per];
    check_close(logical(scale.run({in})), want, 1e-6f);
    check_layouts(scale, in);

    const Tensor slope = values({1}, {0.25f});  // shared
    Harness prelu("PReLU", fb::PReLUParamT{}, {view(slope)});
    for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] > 0 ? x[i] : 0.25f * x[i];
    CHECK(logical(prelu.run({in})) == want);
    check_layouts(prelu, in);
  }
}

TEST_CASE("BatchNorm, Scale and PReLU reject bad parameters") {
  const Tensor c3 = values({3}, {1, 2, 3}), c2 = values({2}, {1, 1}), neg = values({3}, {1, -2, 1});
  fb::BatchNormParamT bp;
  check_error(Harness("BatchNorm", bp, {view(c3), view(c3), view(c3)}).load, "expects 4 weights");
  check_error(Harness("BatchNorm", bp, {view(c3), view(c3), view(c2), view(c3)}).load, "gamma has 2 values");
  check_error(Harness("BatchNorm", bp, {view(c3), view(neg), view(c3), view(c3)}).load, "var[1]");
  bp.eps = -1.f;
  check_error(Harness("BatchNorm", bp, {view(c3), view(c3), view(c3), view(c3)}).load, "eps");
  bp.eps = 0.f;
  Harness bn("BatchNorm", bp, {view(c3), view(c3), view(c3), view(c3)});
  REQUIRE(bn.load.ok());
  check_error(bn.prepare({Shape::make3(4, 4, 2)}), "2 channels");
  CHECK(bn.prepare({Shape::make2(4, 3)}).ok());  // [C,L]: rows are channels
  check_error(bn.prepare({Shape::make1(4)}), "4 channels");

  fb::ScaleParamT sp;
  check_error(Harness("Scale", sp, {}).load, "expects 1 weight");
  sp.bias_term = true;
  check_error(Harness("Scale", sp, {view(c3)}).load, "expects 2 weights");
  check_error(Harness("Scale", sp, {view(c3), view(c2)}).load, "bias has 2 values");
  Harness scale("Scale", sp, {view(c3), view(c3)});
  check_error(scale.prepare({Shape::make3(2, 2, 5)}), "5 channels");
  check_error(scale.prepare({Shape::make3(2, 2, 3), Shape::make3(2, 2, 3)}), "1 input");

  check_error(Harness("PReLU", fb::PReLUParamT{}, {}).load, "expects 1 weight");
  check_error(Harness("PReLU", fb::PReLUParamT{}, {view(c3)}).prepare({Shape::make3(2, 2, 2)}), "slope has 3");
  check_error(Harness("PReLU", fb::ScaleParamT{}, {view(c3)}).load, "missing PReLUParam");
}

TEST_CASE("BatchNorm, PReLU and BinaryOp run in place inside a net") {
  // net input -> Scale -> a -> BatchNorm -> b -> PReLU -> c -> BinaryOp (1 - x) -> d.
  // With only d declared an output, the last three run over a's memory; declaring
  // every blob an output turns that off. Both must give the same bits.
  std::mt19937 rng(17);
  const std::vector<float> x = random_values(3 * 5 * 7, rng, -2.f, 2.f);
  auto build = [&](bool all_outputs) {
    ModelBuilder b;
    b.add_input("data", {3, 5, 7});
    const uint32_t s = b.add_weight("s", {3}, {1.5f, -1.f, 0.5f});
    const uint32_t mean = b.add_weight("mean", {3}, {0.1f, 0.2f, -0.3f});
    const uint32_t var = b.add_weight("var", {3}, {1.f, 2.f, 0.5f});
    const uint32_t gamma = b.add_weight("gamma", {3}, {1.f, 0.5f, 2.f});
    const uint32_t beta = b.add_weight("beta", {3}, {0.f, 0.1f, -0.1f});
    const uint32_t slope = b.add_weight("slope", {3}, {0.1f, 0.2f, 0.3f});
    fb::LayerParamsUnion u;
    u.Set(fb::ScaleParamT{});
    b.add_layer("Scale", "scale", {"data"}, {"a"}, u, {s});
    u.Set(fb::BatchNormParamT{});
    b.add_layer("BatchNorm", "bn", {"a"}, {"b"}, u, {mean, var, gamma, beta});
    u.Set(fb::PReLUParamT{});
    b.add_layer("PReLU", "prelu", {"b"}, {"c"}, u, {slope});
    fb::BinaryOpParamT bp;
    bp.op = fb::BinaryOpType::Sub, bp.with_scalar = true, bp.scalar = 1.f, bp.reverse = true;
    u.Set(std::move(bp));
    b.add_layer("BinaryOp", "one_minus", {"c"}, {"d"}, u);
    for (const char* o : {"a", "b", "c"}) {
      if (all_outputs) b.add_output(o);
    }
    b.add_output("d");
    return b.serialize();
  };
  const Mat in = make_mat(Shape::make3(7, 5, 3), x);
  std::vector<float> results[2];
  size_t peak[2] = {0, 0};  // peak bytes of live feature maps
  for (MemoryStrategy strategy : {MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
    for (int all = 0; all < 2; ++all) {
      const std::vector<uint8_t> bytes = build(all == 1);
      Net net;
      REQUIRE(net.load(bytes.data(), bytes.size()).ok());
      Extractor ex = net.create_extractor();
      ex.set_memory_strategy(strategy);
      ex.set_num_threads(2);
      REQUIRE(ex.input("data", in).ok());
      Mat out;
      REQUIRE(ex.extract("d", out).ok());
      results[all] = logical(out);
      peak[all] = ex.memory_stats().peak_in_use_bytes;
    }
    CHECK(same_bits(results[0], results[1]));
    // In place, a is the only feature map ever live; otherwise a layer's input and
    // output are live together.
    if (strategy == MemoryStrategy::kPool) CHECK(peak[0] == in.shape().bytes());
    CHECK(peak[0] < peak[1]);
  }
  // Spot check against the definition.
  const double a = x[0] * 1.5, bn = (a - 0.1) / std::sqrt(1.0 + 1e-5), pr = bn > 0 ? bn : 0.1 * bn;
  CHECK(results[0][0] == doctest::Approx(1.0 - pr).epsilon(1e-5));
}

// ---- Eltwise -----------------------------------------------------------------------

TEST_CASE("Eltwise mixes padded and unpadded inputs, propagates NaN in Max") {
  std::mt19937 rng(14);
  const Shape s = Shape::make3(5, 3, 4);
  const Mat a = make_mat(s, random_values(60, rng)), b = make_mat(s, random_values(60, rng));
  std::vector<float> store;
  const Mat b_ext = external_copy(b, store);
  fb::EltwiseParamT p;
  p.coefficients = {2.f, -0.5f};
  Harness sum("Eltwise", p);
  const std::vector<float> want = logical(sum.run({a, b}));
  CHECK(same_bits(want, logical(sum.run({a, b_ext}, 3))));
  std::vector<float> expect(60);
  for (size_t i = 0; i < expect.size(); ++i) expect[i] = 2.f * logical(a)[i] - 0.5f * store[i];
  check_close(want, expect, 1e-6f);

  fb::EltwiseParamT mp;
  mp.op = fb::EltwiseOp::Max;
  Harness mx("Eltwise", mp);
  const Mat n1 = make_mat(Shape::make1(3), {kNaN, 1.f, 2.f}), n2 = make_mat(Shape::make1(3), {0.f, kNaN, 1.f});
  const std::vector<float> got = logical(mx.run({n1, n2}));
  CHECK(std::isnan(got[0]));
  CHECK(std::isnan(got[1]));
  CHECK(got[2] == 2.f);
}

TEST_CASE("Eltwise rejects bad parameters") {
  fb::EltwiseParamT p;
  p.op = fb::EltwiseOp(5);
  check_error(Harness("Eltwise", p).load, "unknown op 5");
  p.op = fb::EltwiseOp::Prod;
  p.coefficients = {1.f, 2.f};
  check_error(Harness("Eltwise", p).load, "only allowed with op Sum");
  p.op = fb::EltwiseOp::Sum;
  Harness h("Eltwise", p);
  REQUIRE(h.load.ok());
  check_error(h.prepare({Shape::make3(2, 2, 2), Shape::make3(2, 2, 2), Shape::make3(2, 2, 2)}), "2 coefficients for 3");
  check_error(h.prepare({Shape::make3(2, 2, 2), Shape::make3(2, 3, 2)}), "input 1 has shape [2,3,2]");
  check_error(h.prepare({Shape::make2(4, 2), Shape::make1(8)}), "input 1");
  const Tensor w = values({1}, {1});
  check_error(Harness("Eltwise", fb::EltwiseParamT{}, {view(w)}).load, "takes no weights");
  fb::EltwiseParamT a;
  a.activation = act(AT(50));
  check_error(Harness("Eltwise", a).load, "activation");
}

// ---- BinaryOp --------------------------------------------------------------------

TEST_CASE("BinaryOp in place with a constant or scalar operand") {
  std::mt19937 rng(15);
  const Mat in = make_mat(Shape::make3(5, 4, 3), random_values(60, rng, 0.5f, 2.f));
  const std::vector<float> x = logical(in);
  const Tensor per_channel{{3, 1, 1}, {1.f, -2.f, 0.5f}};
  const Tensor row{{5}, random_values(5, rng)};
  struct Variant {
    fb::BinaryOpType op;
    const Tensor* weight;
    bool reverse;
  };
  const Variant variants[] = {{fb::BinaryOpType::Sub, &per_channel, true},
                              {fb::BinaryOpType::Div, nullptr, true},
                              {fb::BinaryOpType::Pow, &row, false},
                              {fb::BinaryOpType::Max, &row, true}};
  for (const Variant& v : variants) {
    CAPTURE(int(v.op));
    fb::BinaryOpParamT p;
    p.op = v.op, p.reverse = v.reverse;
    p.with_scalar = v.weight == nullptr, p.scalar = 3.f;
    p.activation = act(AT::TanH);
    std::vector<WeightView> views;
    if (v.weight) views.push_back(view(*v.weight));
    Harness h("BinaryOp", p, views);
    const std::vector<float> out = logical(h.run({in}));
    CHECK(h.out_shapes[0] == in.shape());
    CHECK(h.layer->supports_inplace());
    for (size_t i = 0; i < x.size(); ++i) {
      const float b = !v.weight ? 3.f : v.weight == &row ? row.data[i % 5] : per_channel.data[i / 20];
      const float l = v.reverse ? b : x[i], r = v.reverse ? x[i] : b;
      float y = 0;
      switch (v.op) {
        case fb::BinaryOpType::Sub: y = l - r; break;
        case fb::BinaryOpType::Div: y = l / r; break;
        case fb::BinaryOpType::Pow: y = std::pow(l, r); break;
        default: y = std::max(l, r); break;
      }
      CHECK(out[i] == doctest::Approx(std::tanh(y)).epsilon(1e-6));
    }
    check_layouts(h, in);
  }
}

TEST_CASE("BinaryOp propagates NaN in Max and Min") {
  for (fb::BinaryOpType op : {fb::BinaryOpType::Max, fb::BinaryOpType::Min}) {
    fb::BinaryOpParamT p;
    p.op = op;
    Harness h("BinaryOp", p);
    const Mat a = make_mat(Shape::make1(3), {kNaN, 1.f, 2.f}), b = make_mat(Shape::make1(3), {0.f, kNaN, 1.f});
    const std::vector<float> got = logical(h.run({a, b}));
    CHECK(std::isnan(got[0]));
    CHECK(std::isnan(got[1]));
    CHECK(got[2] == (op == fb::BinaryOpType::Max ? 2.f : 1.f));
  }
}

TEST_CASE("BinaryOp rejects bad parameters and shapes") {
  fb::BinaryOpParamT p;
  p.op = fb::BinaryOpType(9);
  check_error(Harness("BinaryOp", p).load, "unknown op 9");
  p.op = fb::BinaryOpType::Add;
  const Tensor w1 = values({2}, {1, 2}), w5{{1, 1, 1, 1, 2}, {1, 2}};
  check_error(Harness("BinaryOp", p, {view(w1), view(w1)}).load, "at most 1 weight");
  check_error(Harness("BinaryOp", p, {view(w5)}).load, "1 to 4 positive extents");
  WeightView wrong = view(w1);
  wrong.shape = {3};
  check_error(Harness("BinaryOp", p, {wrong}).load, "needs 3");

  Harness none("BinaryOp", p);
  check_error(none.prepare({Shape::make3(2, 2, 2)}), "exactly one second operand");
  Harness weight("BinaryOp", p, {view(w1)});
  check_error(weight.prepare({Shape::make3(2, 2, 2), Shape::make1(2)}), "got 2");
  check_error(weight.prepare({Shape::make3(3, 2, 2)}), "cannot broadcast [2,2,3] with [2]");
  CHECK(weight.prepare({Shape::make2(2, 5)}).ok());
  p.with_scalar = true;
  Harness scalar("BinaryOp", p);
  CHECK(scalar.prepare({Shape::make3(2, 2, 2)}).ok());
  check_error(scalar.prepare({Shape::make3(2, 2, 2), Shape::make3(2, 2, 2)}), "got 2");
  p.with_scalar = false;
  Harness two("BinaryOp", p);
  check_error(two.prepare({Shape::make3(4, 3, 2), Shape::make2(4, 2)}), "cannot broadcast [2,3,4] with [2,4]");
  REQUIRE(two.prepare({Shape::make1(4), Shape::make4(1, 3, 2, 2)}).ok());
  CHECK(two.out_shapes[0] == Shape::make4(4, 3, 2, 2));
  CHECK_FALSE(two.layer->supports_inplace());  // the output is larger than input 0
}

// ---- LRN and Normalize -------------------------------------------------------------

TEST_CASE("LRN and Normalize: unpadded inputs, thread counts, several blocks of positions") {
  std::mt19937 rng(16);
  const Mat big = make_mat(Shape::make3(23, 29, 5), random_values(5 * 23 * 29, rng));  // 667 positions
  for (fb::LRNRegion region : {fb::LRNRegion::AcrossChannels, fb::LRNRegion::WithinChannel}) {
    fb::LRNParamT p;
    p.region = region, p.local_size = 3;
    Harness h("LRN", p);
    CHECK_FALSE(h.layer->supports_inplace());
    check_layouts(h, big);
  }
  for (bool across : {false, true}) {
    fb::NormalizeParamT p;
    p.across_spatial = across;
    const Tensor scale = random_tensor({5}, rng);
    Harness h("Normalize", p, {view(scale)});
    check_layouts(h, big);
    CHECK(h.layer->workspace_bytes == (across ? 5 : 667) * sizeof(float));
  }
}

TEST_CASE("LRN and Normalize hand-computed") {
  // Across, n = 2 covers the channel before and the centre: channel 0 sees only itself.
  fb::LRNParamT p;
  p.local_size = 2, p.alpha = 2.f, p.beta = 1.f, p.bias = 1.f;
  Harness lrn("LRN", p);
  const std::vector<float> got = logical(lrn.run({make_mat(Shape::make3(1, 1, 2), {1.f, 2.f})}));
  // c0: 1 / (1 + 2/2 * 1) = 0.5; c1: 2 / (1 + 1 * (1 + 4)) = 1/3.
  check_close(got, {0.5f, 1.f / 3.f}, 1e-6f);
  // Normalize: eps inside the square root; a zero position stays 0.
  fb::NormalizeParamT np;
  np.eps = 9.f;
  np.channel_shared = true;
  const Tensor s = values({1}, {2.f});
  Harness norm("Normalize", np, {view(s)});
  const std::vector<float> y = logical(norm.run({make_mat(Shape::make3(2, 1, 2), {3.f, 0.f, 4.f, 0.f})}));
  check_close(y, {2 * 3.f / std::sqrt(34.f), 0.f, 2 * 4.f / std::sqrt(34.f), 0.f}, 1e-6f);
}

TEST_CASE("LRN and Normalize reject bad parameters") {
  fb::LRNParamT p;
  p.local_size = 0;
  check_error(Harness("LRN", p).load, "local_size");
  p.local_size = 3, p.region = fb::LRNRegion(4);
  check_error(Harness("LRN", p).load, "unknown region 4");
  p.region = fb::LRNRegion::WithinChannel, p.beta = INFINITY;
  check_error(Harness("LRN", p).load, "finite");
  p.beta = 0.75f;
  Harness within("LRN", p);
  check_error(within.prepare({Shape::make2(4, 4)}), "3-D");
  const Tensor w = values({1}, {1});
  check_error(Harness("LRN", fb::LRNParamT{}, {view(w)}).load, "takes no weights");

  fb::NormalizeParamT np;
  check_error(Harness("Normalize", np).load, "expects 1 weight");
  const Tensor s3 = values({3}, {1, 1, 1});
  Harness norm("Normalize", np, {view(s3)});
  check_error(norm.prepare({Shape::make3(2, 2, 4)}), "4 channels");
  np.channel_shared = true;
  check_error(Harness("Normalize", np, {view(s3)}).load, "channel_shared");
  np.eps = -1.f;
  check_error(Harness("Normalize", np, {view(w)}).load, "eps");
}

}  // TEST_SUITE
