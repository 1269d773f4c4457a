// Every built-in layer against naive computations written independently in
// layer_test_util.h, plus small hand-computed cases and parameter errors.
#include "layer_test_util.h"

using namespace lt;

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

}  // TEST_SUITE
