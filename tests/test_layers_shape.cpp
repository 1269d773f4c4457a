// Every built-in layer against naive computations written independently in
// layer_test_util.h, plus small hand-computed cases and parameter errors.
#include <array>
#include <random>

#include "layer_test_util.h"

using namespace lt;

TEST_SUITE("layers") {
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
      {AT::HardSwish, 0.1666259765625f, 0}, {AT::SiLU, 0, 0}, {AT::ELU, 1.5f, 0}, {AT::GELU, 0, 0}};
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
  // A map too large for its priors is refused before they are computed (a fuzzed model
  // asked for 8 GiB of them); 2^24 boxes still load.
  q.image_w = q.image_h = 0;
  q.step_w = q.step_h = 0;
  check_error(Harness("PriorBox", q).prepare({Shape::make3(8192, 8192, 1), Shape::make3(100, 100, 3)}),
              "too many priors: a 8192x8192 map with 1 priors per cell");
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

// Caffe's DetectionOutput step by step, as written (stable sort per class, top_k,
// greedy NMS over the whole list, then every class's survivors sorted and cut to
// keep_top_k), for Corner boxes with the variance in the target: box = prior + loc.
std::vector<std::vector<float>> caffe_detections(const std::vector<float>& loc, const std::vector<float>& conf,
                                                 const std::vector<float>& priors, int classes, float threshold,
                                                 float nms, int top_k, int keep_top_k) {
  const int n = static_cast<int>(loc.size() / 4);
  std::vector<std::array<float, 4>> box(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) box[i][k] = priors[4 * i + k] + loc[4 * i + k];
  }
  const auto area = [](const std::array<float, 4>& b) {
    return b[2] < b[0] || b[3] < b[1] ? 0.f : (b[2] - b[0]) * (b[3] - b[1]);
  };
  const auto iou = [&](const std::array<float, 4>& a, const std::array<float, 4>& b) {
    if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0.f;
    const float iw = std::min(a[2], b[2]) - std::max(a[0], b[0]), ih = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (iw <= 0.f || ih <= 0.f) return 0.f;
    return iw * ih / (area(a) + area(b) - iw * ih);
  };
  struct Det {
    float score;
    int label, index;
  };
  std::vector<Det> all;
  for (int c = 1; c < classes; ++c) {
    std::vector<Det> cand;
    for (int i = 0; i < n; ++i) {
      if (conf[size_t(i) * classes + c] > threshold) cand.push_back({conf[size_t(i) * classes + c], c, i});
    }
    std::stable_sort(cand.begin(), cand.end(), [](const Det& a, const Det& b) { return a.score > b.score; });
    if (top_k > 0 && int(cand.size()) > top_k) cand.resize(top_k);
    std::vector<Det> kept;
    for (const Det& d : cand) {
      bool keep = true;
      for (const Det& k : kept) keep = keep && iou(box[d.index], box[k.index]) <= nms;
      if (keep) kept.push_back(d);
    }
    all.insert(all.end(), kept.begin(), kept.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Det& a, const Det& b) { return a.score > b.score; });
  if (keep_top_k > 0 && int(all.size()) > keep_top_k) all.resize(keep_top_k);
  std::vector<std::vector<float>> rows;
  for (const Det& d : all) {
    const auto& b = box[d.index];
    rows.push_back({float(d.label), d.score, b[0], b[1], b[2], b[3]});
  }
  return rows;
}

TEST_CASE("DetectionOutput equals Caffe's algorithm with every top_k and keep_top_k") {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int trial = 0; trial < 24; ++trial) {
    const int n = 1 + int(rng() % 300), classes = 2 + int(rng() % 5);
    CAPTURE(trial);
    CAPTURE(n);
    // Boxes in clusters so that NMS suppresses; scores on a coarse grid so that many
    // tie (ties go to the lower label, then the lower prior, as in Caffe's order).
    std::vector<float> pri, var(4 * size_t(n), 1.f), loc(4 * size_t(n)), conf(size_t(n) * classes);
    for (int i = 0; i < n; ++i) {
      const float cx = float(rng() % 6) / 6.f, cy = float(rng() % 6) / 6.f, w = 0.05f + 0.3f * u(rng);
      pri.insert(pri.end(), {cx - w / 2, cy - w / 2, cx + w / 2, cy + w / 2});
    }
    pri.insert(pri.end(), var.begin(), var.end());
    for (float& v : loc) v = 0.02f * (u(rng) - 0.5f);
    for (float& v : conf) v = float(rng() % 17) / 16.f;
    const int top_ks[] = {-1, 1, 7, 400}, keeps[] = {-1, 1, 5, 50};
    const int top_k = top_ks[rng() % 4], keep_top_k = keeps[rng() % 4];
    const float threshold = trial % 3 == 0 ? 0.f : 0.4f, nms = trial % 2 ? 0.45f : 0.8f;
    CAPTURE(top_k);
    CAPTURE(keep_top_k);
    fb::DetectionOutputParamT p;
    p.num_classes = classes, p.nms_threshold = nms, p.confidence_threshold = threshold;
    p.top_k = top_k, p.keep_top_k = keep_top_k;
    p.code_type = fb::CodeType::Corner, p.variance_encoded_in_target = true;
    Harness h("DetectionOutput", p);
    const Mat out = h.run({make_mat(Shape::make1(4 * n), loc), make_mat(Shape::make2(classes, n), conf),
                           make_mat(Shape::make2(4 * n, 2), pri)});
    const auto expected = caffe_detections(loc, conf, pri, classes, threshold, nms, top_k, keep_top_k);
    REQUIRE(out.h == int(expected.size()));
    for (int i = 0; i < out.h; ++i) CHECK(std::vector<float>(out.row(i), out.row(i) + 6) == expected[i]);
  }
}

TEST_CASE("DetectionOutput refuses at load NMS work beyond its limit, naming the parameters") {
  fb::DetectionOutputParamT p;
  p.num_classes = 21, p.top_k = -1, p.keep_top_k = -1;
  const auto shapes = [](int priors, int classes) {
    return std::vector<Shape>{Shape::make1(4 * priors), Shape::make2(classes, priors), Shape::make2(4 * priors, 2)};
  };
  // 20 classes x 10000 candidates x 10000 kept: 2e9 IoUs per inference, worst case.
  Harness unbounded("DetectionOutput", p);
  REQUIRE(unbounded.load.ok());
  check_error(unbounded.prepare(shapes(10000, 21)), "may compare up to 2000000000 box pairs");
  check_error(unbounded.prepare(shapes(10000, 21)), "top_k -1 and keep_top_k -1");
  // MobileNet-SSD's own settings (1917 priors, top_k 100, keep_top_k 100): 200000.
  p.top_k = 100, p.keep_top_k = 100;
  CHECK(Harness("DetectionOutput", p).prepare(shapes(1917, 21)).ok());
  // keep_top_k alone bounds it too: 20 x 10000 x 100 = 2e7.
  p.top_k = -1;
  CHECK(Harness("DetectionOutput", p).prepare(shapes(10000, 21)).ok());
  // A negative top_k is "no limit", as in Caffe (the fuzzer's model had -1848).
  p.top_k = -1848, p.keep_top_k = -5;
  check_error(Harness("DetectionOutput", p).prepare(shapes(3000, 21)), "above the limit");
}

}  // TEST_SUITE
