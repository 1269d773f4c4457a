// The data-movement and small math layers (Slice, Split, Crop, Padding, Squeeze,
// Unsqueeze, Interp, ShuffleChannel, Reduce, Gemm): what the PyTorch cases in
// tests/torch cannot express — several tops, inputs without channel padding, thread
// invariance on larger blobs, and every rejected parameter or shape.
#include "layer_test_util.h"

using namespace lt;

namespace {

// Prepares `tops` outputs (Harness handles one).
Status prepare_tops(Harness& h, const std::vector<Shape>& in, int tops) {
  h.out_shapes.assign(size_t(tops), Shape{});
  return h.layer->prepare(in, h.out_shapes, PrepareContext{});
}

std::vector<Mat> run_tops(Harness& h, const std::vector<Mat>& in, int tops, int threads = 1) {
  REQUIRE(h.load.ok());
  std::vector<Shape> shapes;
  for (const Mat& m : in) shapes.push_back(m.shape());
  const Status s = prepare_tops(h, shapes, tops);
  REQUIRE_MESSAGE(s.ok(), s.message());
  std::vector<Mat> out(static_cast<size_t>(tops));
  for (int i = 0; i < tops; ++i) {
    REQUIRE(out[i].create(h.out_shapes[i]));
    std::fill(out[i].data, out[i].data + out[i].total(), kNaN);
  }
  h.forward(in, out, threads);
  return out;
}

// A Mat over `storage` (values in logical order) with no channel padding, as an
// application's external input may be.
Mat dense_mat(const Shape& s, std::vector<float>& storage) {
  return Mat::external(s, storage.data(), size_t(s.w) * s.h * s.d);
}

// Runs a one-top layer on the padded and on the dense layout of the same values, with
// 1 and 2 threads; all four results must agree bit for bit.
std::vector<float> run_both_layouts(Harness& h, const Shape& s, const std::vector<float>& x) {
  std::vector<float> storage = x;
  const std::vector<float> padded = logical(h.run({make_mat(s, x)}, 1));
  CHECK(same_bits(padded, logical(h.run({dense_mat(s, storage)}, 1))));
  CHECK(same_bits(padded, logical(h.run({dense_mat(s, storage)}, 2))));
  CHECK(same_bits(padded, logical(h.run({make_mat(s, x)}, 2))));
  return padded;
}

fb::SliceParamT slice_param(int axis, std::vector<int> points = {}) {
  fb::SliceParamT p;
  p.axis = axis;
  p.points = std::move(points);
  return p;
}

fb::CropParamT crop_slice(std::vector<int> starts, std::vector<int> ends, std::vector<int> axes = {},
                          std::vector<int> steps = {}) {
  fb::CropParamT p;
  p.starts = std::move(starts), p.ends = std::move(ends), p.axes = std::move(axes), p.steps = std::move(steps);
  return p;
}

fb::PaddingParamT pad_param(std::vector<int> pads, fb::PadType mode = fb::PadType::Constant, float value = 0.f) {
  fb::PaddingParamT p;
  p.pads = std::move(pads), p.mode = mode, p.value = value;
  return p;
}

fb::InterpParamT interp_param(fb::InterpMode mode, int oh, int ow, float sh = 0.f, float sw = 0.f) {
  fb::InterpParamT p;
  p.mode = mode, p.output_h = oh, p.output_w = ow, p.scale_h = sh, p.scale_w = sw;
  return p;
}

fb::ReduceParamT reduce_param(fb::ReduceOp op, std::vector<int> axes, bool keepdims) {
  fb::ReduceParamT p;
  p.op = op, p.axes = std::move(axes), p.keepdims = keepdims;
  return p;
}

fb::GemmParamT gemm_param(bool ta, bool tb, float alpha = 1.f, float beta = 1.f) {
  fb::GemmParamT p;
  p.trans_a = ta, p.trans_b = tb, p.alpha = alpha, p.beta = beta;
  return p;
}

}  // namespace

TEST_SUITE("layers") {

TEST_CASE("registry lists the reshape and math layers") {
  for (const char* t : {"Slice", "Split", "Crop", "Padding", "Squeeze", "Unsqueeze", "Interp", "ShuffleChannel",
                        "Reduce", "Gemm"}) {
    CHECK_MESSAGE(bool(find_layer_creator(t)), t);
  }
}

TEST_CASE("Split copies a dense or padded input to every top") {
  std::mt19937 rng(11);
  for (const std::vector<int>& e : std::vector<std::vector<int>>{{7}, {3, 5}, {5, 3, 7}, {2, 3, 4, 5}}) {
    const std::vector<float> x = random_values(count_of(e), rng);
    std::vector<float> storage = x;
    Harness h("Split", fb::SplitParamT());
    for (int tops : {1, 2, 4}) {
      for (const Mat& in : {make_mat(shape_of(e), x), dense_mat(shape_of(e), storage)}) {
        const std::vector<Mat> out = run_tops(h, {in}, tops, 2);
        REQUIRE(out.size() == size_t(tops));
        for (const Mat& o : out) {
          CHECK(o.shape() == shape_of(e));
          CHECK(logical(o) == x);
        }
      }
    }
  }
  Harness h("Split", nullptr);  // no parameter table needed
  CHECK(h.load.ok());
  check_error(prepare_tops(h, {Shape::make1(3), Shape::make1(3)}, 2), "1 input");
  check_error(prepare_tops(h, {Shape::make1(3)}, 0), "no outputs");
}

TEST_CASE("Slice into several tops along every axis, dense and padded") {
  std::mt19937 rng(12);
  const std::vector<int> e = {6, 4, 8};
  const std::vector<float> x = random_values(count_of(e), rng);
  std::vector<float> storage = x;
  for (int a = 0; a < 3; ++a) {
    for (bool equal : {true, false}) {
      INFO("axis " << a << " equal " << equal);
      const int len = e[a];
      const std::vector<int> bounds = equal ? std::vector<int>{0, len / 2, len} : std::vector<int>{0, 1, 3, len};
      std::vector<int> points(bounds.begin() + 1, bounds.end() - 1);
      Harness h("Slice", slice_param(a - 3 * (a % 2), equal ? std::vector<int>{} : points));
      const int tops = int(bounds.size()) - 1;
      for (int threads : {1, 2}) {
        for (const Mat& in : {make_mat(shape_of(e), x), dense_mat(shape_of(e), storage)}) {
          const std::vector<Mat> out = run_tops(h, {in}, tops, threads);
          for (int k = 0; k < tops; ++k) {
            std::vector<int> pe = e;
            pe[a] = bounds[k + 1] - bounds[k];
            REQUIRE(out[k].shape() == shape_of(pe));
            std::vector<float> want(count_of(pe));
            for (size_t i = 0; i < want.size(); ++i) {
              std::vector<int> idx = unravel(i, pe);
              idx[a] += bounds[k];
              want[i] = x[ravel(idx, e)];
            }
            CHECK(logical(out[k]) == want);
          }
        }
      }
    }
  }
  check_error(Harness("Slice", slice_param(0, {3, 2})).load, "strictly ascending");
  check_error(Harness("Slice", slice_param(0, {0, 2})).load, "strictly ascending");
  Harness pts("Slice", slice_param(1, {2, 5}));
  check_error(prepare_tops(pts, {Shape::make2(8, 3)}, 2), "3 parts");
  check_error(prepare_tops(pts, {Shape::make2(5, 3)}, 3), "empty last part");
  Harness eq("Slice", slice_param(-1));
  check_error(prepare_tops(eq, {Shape::make2(7, 3)}, 2), "2 equal parts");
  check_error(prepare_tops(eq, {Shape::make2(7, 3)}, 0), "equal parts");
  Harness far("Slice", slice_param(2));
  check_error(prepare_tops(far, {Shape::make2(7, 3)}, 1), "axis 2");
  check_error(Harness("Slice", nullptr).load, "missing SliceParam");
}

TEST_CASE("Crop: both forms on dense inputs, and every rejected parameter") {
  std::mt19937 rng(13);
  const std::vector<int> e = {5, 6, 7};
  const std::vector<float> x = random_values(count_of(e), rng);
  // ONNX Slice form: channels 2..4, rows 1 and 3, columns 3 and 6 (from -4, step 3,
  // end clamped from INT_MAX).
  Harness sl("Crop", crop_slice({2, 1, -4}, {5, 4, 2147483647}, {0, -2, 2}, {1, 2, 3}));
  const std::vector<float> got = run_both_layouts(sl, shape_of(e), x);
  CHECK(sl.out_shapes[0] == Shape::make3(2, 2, 3));
  std::vector<float> want;
  for (int c = 2; c < 5; ++c)
    for (int y : {1, 3})
      for (int xx : {3, 6}) want.push_back(x[ravel({c, y, xx}, e)]);
  CHECK(got == want);

  // Caffe form: crop to the reference's rows and columns at offsets (1, 2).
  fb::CropParamT caffe;
  caffe.axis = -2;
  caffe.offsets = {1, 2};
  Harness cf("Crop", caffe);
  std::vector<float> storage = x;
  const Mat ref = make_mat(Shape::make3(3, 4, 1), std::vector<float>(12, 0.f));
  const Mat out = cf.run({dense_mat(shape_of(e), storage), ref}, 2);
  REQUIRE(out.shape() == Shape::make3(3, 4, 5));
  want.clear();
  for (int c = 0; c < 5; ++c)
    for (int y = 1; y < 5; ++y)
      for (int xx = 2; xx < 5; ++xx) want.push_back(x[ravel({c, y, xx}, e)]);
  CHECK(logical(out) == want);

  check_error(Harness("Crop", nullptr).load, "missing CropParam");
  check_error(Harness("Crop", crop_slice({0, 1}, {2})).load, "ends has 1");
  check_error(Harness("Crop", crop_slice({0}, {2}, {0, 1})).load, "axes has 2");
  check_error(Harness("Crop", crop_slice({0}, {2}, {0}, {1, 1})).load, "steps has 2");
  check_error(Harness("Crop", crop_slice({0}, {2}, {0}, {0})).load, "step must be > 0");
  check_error(Harness("Crop", crop_slice({0}, {2}, {0}, {-1})).load, "step must be > 0");
  fb::CropParamT neg;
  neg.offsets = {-1};
  check_error(Harness("Crop", neg).load, "offset must be >= 0");

  const Shape in = shape_of(e);
  check_error(Harness("Crop", fb::CropParamT()).prepare({in}), "needs starts and ends");
  check_error(Harness("Crop", crop_slice({0, 0}, {1, 1})).prepare({in}), "without axes");
  check_error(Harness("Crop", crop_slice({0, 0}, {1, 1}, {1, -2})).prepare({in}), "repeated");
  check_error(Harness("Crop", crop_slice({0}, {1}, {3})).prepare({in}), "out of range");
  check_error(Harness("Crop", crop_slice({4}, {2}, {1})).prepare({in}), "keeps nothing of axis 1");
  check_error(Harness("Crop", crop_slice({0}, {-2147483647}, {2})).prepare({in}), "keeps nothing of axis 2");
  check_error(Harness("Crop", crop_slice({9}, {2147483647}, {0})).prepare({in}), "keeps nothing of axis 0");
  check_error(cf.prepare({in, Shape::make2(3, 4)}), "reference input has 2 dims");
  check_error(cf.prepare({in, Shape::make3(6, 4, 5)}), "exceeds the input's extent 7");
  check_error(cf.prepare({in, in, in}), "1 to 2 input(s)");
  fb::CropParamT three = caffe;
  three.offsets = {1, 2, 3};
  check_error(Harness("Crop", three).prepare({in, in}), "3 offsets for 2 cropped axes");
  three.axis = 3;
  check_error(Harness("Crop", three).prepare({in, in}), "axis 3");
}

TEST_CASE("Padding: every mode on dense 4-D input against a naive reference") {
  std::mt19937 rng(14);
  const std::vector<int> e = {3, 4, 5, 6};
  const std::vector<float> x = random_values(count_of(e), rng);
  const std::vector<int> pads = {1, 0, 3, 2, 2, 3, 1, 5};
  for (fb::PadType mode : {fb::PadType::Constant, fb::PadType::Edge, fb::PadType::Reflect}) {
    CAPTURE(int(mode));
    Harness h("Padding", pad_param(pads, mode, 7.5f));
    const std::vector<float> got = run_both_layouts(h, shape_of(e), x);
    std::vector<int> oe(4);
    for (int a = 0; a < 4; ++a) oe[a] = e[a] + pads[a] + pads[a + 4];
    REQUIRE(h.out_shapes[0] == shape_of(oe));
    std::vector<float> want(count_of(oe));
    for (size_t i = 0; i < want.size(); ++i) {
      std::vector<int> idx = unravel(i, oe);
      bool outside = false;
      for (int a = 0; a < 4; ++a) {
        int v = idx[a] - pads[a];
        const int n = e[a];
        if (v < 0 || v >= n) {
          if (mode == fb::PadType::Constant) outside = true;
          else if (mode == fb::PadType::Edge) v = std::clamp(v, 0, n - 1);
          else v = v < 0 ? -v : 2 * (n - 1) - v;
        }
        idx[a] = v;
      }
      want[i] = outside ? 7.5f : x[ravel(idx, e)];
    }
    CHECK(got == want);
  }
  // Edge on a size-1 axis; reflect by extent - 1.
  Harness edge("Padding", pad_param({2, 3}, fb::PadType::Edge));
  CHECK(logical(edge.run({make_mat(Shape::make1(1), {4.f})})) == std::vector<float>(6, 4.f));
  Harness refl("Padding", pad_param({2, 2}, fb::PadType::Reflect));
  CHECK(logical(refl.run({make_mat(Shape::make1(3), {1, 2, 3})})) == std::vector<float>{3, 2, 1, 2, 3, 2, 1});

  check_error(Harness("Padding", nullptr).load, "missing PaddingParam.pads");
  check_error(Harness("Padding", pad_param({1, 2, 3})).load, "2 to 8 values");
  check_error(Harness("Padding", pad_param({})).load, "missing PaddingParam.pads");  // packed as absent
  check_error(Harness("Padding", pad_param(std::vector<int>(10, 1))).load, "2 to 8 values");
  check_error(Harness("Padding", pad_param({1, 1}, fb::PadType(7))).load, "unknown padding mode 7");
  check_error(Harness("Padding", pad_param({1, 1, 1, 1})).prepare({Shape::make3(2, 2, 2)}), "needs 6");
  check_error(Harness("Padding", pad_param({0, 3}, fb::PadType::Reflect)).prepare({Shape::make1(3)}),
              "must be smaller");
  check_error(Harness("Padding", pad_param({1, 0}, fb::PadType::Reflect)).prepare({Shape::make1(1)}),
              "must be smaller");
  check_error(Harness("Padding", pad_param({-2, -1})).prepare({Shape::make1(3)}), "empty");
  check_error(Harness("Padding", pad_param({2147483647, 1})).prepare({Shape::make1(3)}), "too large");
  check_error(Harness("Padding", pad_param({1, 1}, fb::PadType::Edge)).prepare({Shape::make1(0)}),
              "only constant padding");
}

TEST_CASE("Squeeze and Unsqueeze keep logical order across padding changes") {
  std::mt19937 rng(15);
  const std::vector<float> x = random_values(5 * 6, rng);
  fb::SqueezeParamT sq;
  sq.axes = {0};
  Harness s("Squeeze", sq);
  CHECK(run_both_layouts(s, Shape::make3(6, 5, 1), x) == x);
  CHECK(s.out_shapes[0] == Shape::make2(6, 5));
  Harness all("Squeeze", nullptr);  // no table: every size-1 axis
  CHECK(all.run({make_mat(Shape::make4(1, 1, 1, 1), {3.f})}).shape() == Shape::make1(1));
  fb::UnsqueezeParamT uq;
  uq.axes = {1, -1};
  Harness u("Unsqueeze", uq);
  CHECK(run_both_layouts(u, Shape::make2(6, 5), x) == x);
  CHECK(u.out_shapes[0] == Shape::make4(1, 6, 1, 5));

  sq.axes = {1};
  check_error(Harness("Squeeze", sq).prepare({Shape::make3(6, 5, 1)}), "extent 5");
  sq.axes = {0, -3};
  check_error(Harness("Squeeze", sq).prepare({Shape::make3(6, 5, 1)}), "repeated");
  sq.axes = {3};
  check_error(Harness("Squeeze", sq).prepare({Shape::make3(6, 5, 1)}), "out of range");
  check_error(Harness("Unsqueeze", nullptr).load, "missing UnsqueezeParam.axes");
  uq.axes = {0, 1, 2, 3};
  check_error(Harness("Unsqueeze", uq).load, "more than 4 dims");
  uq.axes = {0, 1};
  check_error(Harness("Unsqueeze", uq).prepare({Shape::make3(2, 2, 2)}), "the most is 4");
  uq.axes = {0, -3};
  check_error(Harness("Unsqueeze", uq).prepare({Shape::make1(2)}), "repeated");
  uq.axes = {3};
  check_error(Harness("Unsqueeze", uq).prepare({Shape::make2(2, 2)}), "out of range");
}

TEST_CASE("Interp hand-computed, dense input, rejected parameters") {
  // 2x2 -> 3x3 with align_corners: corners kept, edges and centre averaged.
  fb::InterpParamT p = interp_param(fb::InterpMode::Bilinear, 3, 3);
  p.align_corners = true;
  Harness h("Interp", p);
  check_close(logical(h.run({make_mat(Shape::make3(2, 2, 1), {0, 2, 4, 6})})), {0, 1, 2, 2, 3, 4, 4, 5, 6}, 1e-6f);
  // Half-pixel, 2x: 0.25 / 0.75 blends inside, edges clamped.
  Harness hp("Interp", interp_param(fb::InterpMode::Bilinear, 1, 4));
  check_close(logical(hp.run({make_mat(Shape::make3(2, 1, 1), {0, 4})})), {0, 1, 3, 4}, 1e-6f);
  // Nearest 3 -> 5 picks floor(i * 3 / 5): 0 0 1 1 2.
  Harness nn("Interp", interp_param(fb::InterpMode::Nearest, 1, 5));
  CHECK(logical(nn.run({make_mat(Shape::make3(3, 1, 1), {7, 8, 9})})) == std::vector<float>{7, 7, 8, 8, 9});

  std::mt19937 rng(16);
  Harness big("Interp", interp_param(fb::InterpMode::Bilinear, 0, 0, 1.5f, 0.5f));
  run_both_layouts(big, Shape::make3(9, 7, 5), random_values(9 * 7 * 5, rng));
  CHECK(big.out_shapes[0] == Shape::make3(4, 10, 5));

  check_error(Harness("Interp", nullptr).load, "missing InterpParam");
  check_error(Harness("Interp", interp_param(fb::InterpMode::Nearest, 0, 4)).load, "neither output_h nor scale_h");
  check_error(Harness("Interp", interp_param(fb::InterpMode::Nearest, 4, 0, 0.f, -2.f)).load,
              "scale_w must be finite");
  check_error(Harness("Interp", interp_param(fb::InterpMode::Nearest, -1, 4)).load, "output_h must be >= 0");
  check_error(Harness("Interp", interp_param(fb::InterpMode(5), 4, 4)).load, "unknown interpolation mode 5");
  Harness tiny("Interp", interp_param(fb::InterpMode::Nearest, 0, 4, 0.1f, 0.f));
  check_error(tiny.prepare({Shape::make3(4, 5, 1)}), "output height");
  check_error(h.prepare({Shape::make2(4, 4)}), "3-D");
  check_error(h.prepare({Shape::make3(0, 2, 1)}), "empty plane");
}

TEST_CASE("ShuffleChannel: known order, reverse undoes it, rejected groups") {
  fb::ShuffleChannelParamT p;
  p.group = 2;
  Harness h("ShuffleChannel", p);
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};
  CHECK(run_both_layouts(h, Shape::make3(1, 1, 6), x) == std::vector<float>{0, 3, 1, 4, 2, 5});
  p.reverse = true;
  Harness r("ShuffleChannel", p);
  CHECK(logical(r.run({make_mat(Shape::make3(1, 1, 6), {0, 3, 1, 4, 2, 5})})) == x);
  // Channels of a padded 3-D blob move whole.
  std::mt19937 rng(17);
  const std::vector<float> y = random_values(6 * 5 * 3, rng);
  const Mat shuffled = h.run({make_mat(Shape::make3(3, 5, 6), y)}, 2);
  CHECK(logical(r.run({shuffled}, 2)) == y);

  p.group = 0;
  check_error(Harness("ShuffleChannel", p).load, "group must be > 0");
  p.group = 4;
  check_error(Harness("ShuffleChannel", p).prepare({Shape::make3(2, 2, 6)}), "6 channels");
}

TEST_CASE("Reduce: thread-invariant on large blobs, NaN, rejected axes") {
  std::mt19937 rng(18);
  const std::vector<float> x = random_values(33 * 40 * 50, rng);
  for (fb::ReduceOp op : {fb::ReduceOp::Sum, fb::ReduceOp::Mean, fb::ReduceOp::Max, fb::ReduceOp::Min}) {
    for (const std::vector<int>& axes : std::vector<std::vector<int>>{{}, {1, 2}, {0}, {-2}}) {
      Harness h("Reduce", reduce_param(op, axes, false));
      run_both_layouts(h, Shape::make3(50, 40, 33), x);
    }
  }
  Harness mean("Reduce", reduce_param(fb::ReduceOp::Mean, {}, true));
  const Mat m = mean.run({make_mat(Shape::make3(2, 1, 2), {1, 2, 3, 6})});
  CHECK(m.shape() == Shape::make3(1, 1, 1));
  CHECK(m[0] == 3.f);
  Harness mx("Reduce", reduce_param(fb::ReduceOp::Max, {0}, false));
  const std::vector<float> r = logical(mx.run({make_mat(Shape::make2(2, 2), {1, kNaN, kNaN, 0})}));
  CHECK(std::isnan(r[0]));
  CHECK(std::isnan(r[1]));

  check_error(Harness("Reduce", nullptr).load, "missing ReduceParam");
  check_error(Harness("Reduce", reduce_param(fb::ReduceOp(9), {}, true)).load, "unknown reduce op 9");
  check_error(Harness("Reduce", reduce_param(fb::ReduceOp::Sum, {1, -1}, true)).prepare({Shape::make2(2, 2)}),
              "repeated");
  check_error(Harness("Reduce", reduce_param(fb::ReduceOp::Sum, {2}, true)).prepare({Shape::make2(2, 2)}),
              "out of range");
}

TEST_CASE("Gemm: hand-computed, thread-invariant, rejected shapes") {
  // A = [[1,2],[3,4]], B = [[1,0],[1,1]] (as a weight), C = [[10],[20]]: alpha 2, beta 0.5.
  const Tensor b{{2, 2}, {1, 0, 1, 1}}, c{{2, 1}, {10, 20}};
  Harness h("Gemm", gemm_param(false, false, 2.f, 0.5f), {view(b), view(c)});
  check_close(logical(h.run({make_mat(Shape::make2(2, 2), {1, 2, 3, 4})})), {11, 9, 24, 18}, 1e-6f);
  // C of shape [] is a scalar; op(A) = A^T = [[1,3],[2,4]].
  const Tensor s{{}, {1}};
  Harness hs("Gemm", gemm_param(true, false), {view(b), view(s)});
  check_close(logical(hs.run({make_mat(Shape::make2(2, 2), {1, 2, 3, 4})})), {5, 4, 7, 5}, 1e-6f);

  // Larger blobs: the result must not depend on the thread count (rows x column blocks).
  std::mt19937 rng(19);
  for (bool tb : {false, true}) {
    const Tensor bw = random_tensor(tb ? std::vector<int>{200, 300} : std::vector<int>{300, 200}, rng);
    Harness g("Gemm", gemm_param(false, tb), {view(bw)});
    run_both_layouts(g, Shape::make2(300, 3), random_values(900, rng));
    CHECK(g.out_shapes[0] == Shape::make2(200, 3));
  }

  const Tensor w3{{2, 2, 1}, {1, 2, 3, 4}}, bad_c{{3}, {1, 2, 3}};
  check_error(Harness("Gemm", nullptr).load, "missing GemmParam");
  check_error(Harness("Gemm", gemm_param(false, false), {view(b), view(c), view(c)}).load, "at most 2");
  check_error(Harness("Gemm", gemm_param(false, false), {view(w3)}).load, "not a 1-D or 2-D");
  Harness none("Gemm", gemm_param(false, false));
  check_error(none.prepare({Shape::make2(2, 2)}), "neither a second input nor a weight");
  check_error(none.prepare({Shape::make2(2, 2), Shape::make2(3, 3)}), "op(B) is [3,3]");
  check_error(none.prepare({Shape::make3(2, 2, 1), Shape::make2(2, 2)}), "2-D inputs");
  check_error(Harness("Gemm", gemm_param(false, false), {view(bad_c)}).prepare({Shape::make2(2, 2)}),
              "B weight shape [3] is not 2-D");
  check_error(Harness("Gemm", gemm_param(false, false), {view(b), view(c)})
                  .prepare({Shape::make2(2, 2), Shape::make2(2, 2)}),
              "only C may be a weight");
  check_error(Harness("Gemm", gemm_param(false, false), {view(b), view(bad_c)}).prepare({Shape::make2(2, 4)}),
              "does not broadcast to [4,2]");
  check_error(Harness("Gemm", gemm_param(false, true), {view(bad_c)})
                  .prepare({Shape::make2(2, 2), Shape::make2(2, 2)}),
              "does not broadcast");
}

}  // TEST_SUITE
