// DetectionOutput against Caffe's algorithm written out one pair at a time (the layer
// collects candidates prior by prior with vector compares, orders them as integer keys,
// tests 4 kept boxes at once with vector masks, with min/max instructions when no box
// is NaN, and selects instead of sorting): many overlapping boxes, classes above top_k,
// inverted, infinite and NaN boxes, tied and signed-zero scores, scores at the
// threshold, class counts around the layer's 4-lane and 32-class groups, every place of
// the background, kept counts that are and are not multiples of 4, with and without
// keep_top_k.
#include <algorithm>
#include <cmath>
#include <limits>

#include "layer_test_util.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;

struct Box {
  float x0, y0, x1, y1;
};

float area(const Box& b) { return b.x1 < b.x0 || b.y1 < b.y0 ? 0.f : (b.x1 - b.x0) * (b.y1 - b.y0); }

// Caffe's JaccardOverlap of a candidate a with a kept box b.
float iou(const Box& a, const Box& b) {
  if (b.x0 > a.x1 || b.x1 < a.x0 || b.y0 > a.y1 || b.y1 < a.y0) return 0.f;
  const float iw = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const float ih = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (iw <= 0.f || ih <= 0.f) return 0.f;
  const float inter = iw * ih;
  return inter / (area(a) + area(b) - inter);
}

struct Det {
  int label;
  float score;
  int index;
};

struct Case {
  int priors, classes, top_k, keep_top_k;
  float nms, conf;
  int background = 0;
};

// Rows [label, score, x0, y0, x1, y1] as Caffe computes them (Corner code).
std::vector<float> reference(const Case& k, const std::vector<float>& loc, const std::vector<float>& conf,
                             const std::vector<float>& pri) {
  const size_t np = static_cast<size_t>(k.priors);
  std::vector<Box> boxes(np);
  for (size_t i = 0; i < np; ++i) {
    float v[4];
    for (int j = 0; j < 4; ++j) v[j] = pri[4 * i + j] + pri[4 * np + 4 * i + j] * loc[4 * i + j];
    boxes[i] = Box{v[0], v[1], v[2], v[3]};
  }
  std::vector<Det> all;
  for (int c = 0; c < k.classes; ++c) {
    if (c == k.background) continue;
    std::vector<Det> cand;
    for (size_t i = 0; i < np; ++i) {
      const float s = conf[i * k.classes + c];
      if (s > k.conf) cand.push_back(Det{c, s, static_cast<int>(i)});
    }
    std::stable_sort(cand.begin(), cand.end(), [](const Det& a, const Det& b) { return a.score > b.score; });
    if (k.top_k > 0 && cand.size() > size_t(k.top_k)) cand.resize(k.top_k);
    std::vector<Box> kept;
    for (const Det& d : cand) {
      bool keep = true;
      for (const Box& b : kept) keep = keep && iou(boxes[d.index], b) <= k.nms;
      if (!keep) continue;
      kept.push_back(boxes[d.index]);
      all.push_back(d);
    }
  }
  std::sort(all.begin(), all.end(), [](const Det& a, const Det& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.label != b.label ? a.label < b.label : a.index < b.index;
  });
  if (k.keep_top_k > 0 && all.size() > size_t(k.keep_top_k)) all.resize(k.keep_top_k);
  std::vector<float> rows;
  for (const Det& d : all) {
    const Box& b = boxes[d.index];
    rows.insert(rows.end(), {static_cast<float>(d.label), d.score, b.x0, b.y0, b.x1, b.y1});
  }
  return rows;
}

}  // namespace

TEST_SUITE("layers") {
  TEST_CASE("DetectionOutput keeps what Caffe's NMS keeps") {
    const Case cases[] = {
        {203, 5, 50, 40, 0.45f, 0.05f}, {203, 5, -1, -1, 0.3f, 0.05f}, {64, 3, 10, 7, 0.7f, 0.1f},
        {1, 2, -1, -1, 0.45f, 0.f},     {97, 21, 20, 33, 0.45f, 0.02f}, {300, 4, 300, 100, 0.1f, 0.f},
    };
    std::mt19937 rng(27);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    const float inf = std::numeric_limits<float>::infinity();
    size_t rows = 0;
    for (const Case& k : cases) {
      const size_t np = static_cast<size_t>(k.priors);
      // Priors crowded into a corner so that many overlap; a few inverted.
      std::vector<float> pri(8 * np), loc(4 * np), conf(np * k.classes);
      for (size_t i = 0; i < np; ++i) {
        const float cx = 0.3f * u(rng), cy = 0.3f * u(rng), w = 0.05f + 0.3f * u(rng), h = 0.05f + 0.3f * u(rng);
        const float sign = i % 17 == 5 ? -1.f : 1.f;
        const float p[4] = {cx - sign * w / 2, cy - h / 2, cx + sign * w / 2, cy + h / 2};
        for (int j = 0; j < 4; ++j) {
          pri[4 * i + j] = p[j];
          // Powers of 2: variance x offset is exact, so the decode's bits do not depend on
          // whether the compiler fuses it into an fma (GCC does on aarch64).
          pri[4 * np + 4 * i + j] = j < 2 ? 0.125f : 0.25f;
          loc[4 * i + j] = i % 23 == 7 && j == 2 ? inf : u(rng) - 0.5f;
        }
        for (int c = 0; c < k.classes; ++c) conf[i * k.classes + c] = u(rng) * u(rng);
      }
      kestrel::fb::DetectionOutputParamT p;
      p.num_classes = k.classes;
      p.nms_threshold = k.nms;
      p.top_k = k.top_k;
      p.keep_top_k = k.keep_top_k;
      p.confidence_threshold = k.conf;
      p.code_type = kestrel::fb::CodeType::Corner;
      lt::Harness h("DetectionOutput", p);
      REQUIRE(h.load.ok());
      const Mat out = h.run({lt::make_mat(Shape::make1(static_cast<int>(4 * np)), loc),
                             lt::make_mat(Shape::make1(static_cast<int>(np * k.classes)), conf),
                             lt::make_mat(Shape::make2(static_cast<int>(4 * np), 2), pri)});
      const std::vector<float> want = reference(k, loc, conf, pri);
      INFO("priors " << k.priors << " classes " << k.classes << " top_k " << k.top_k << " keep_top_k "
                     << k.keep_top_k << " nms " << k.nms);
      REQUIRE(out.w == 6);
      const std::vector<float> got(out.data, out.data + static_cast<size_t>(out.h) * 6);
      CHECK(got.size() == want.size());
      CHECK(lt::same_bits(got, want));
      rows += want.size() / 6;
    }
    CHECK(rows > 100);  // NMS had boxes to compare
  }
}

namespace {

// What the scores and boxes of a sweep case hold.
enum class Fill {
  kPlain,      // random scores, finite boxes
  kTies,       // scores from 5 values (ties within and across classes), some at the
               // threshold, some NaN; boxes with one-signed infinities (no NaN)
  kNanBoxes,   // some boxes NaN, others infinite: the exact NMS
  kSignedZero  // a negative threshold, scores +0, -0 and negative (ties of +0 and -0)
};

// Runs case k on inputs made for `fill` against reference(), with 1 and 4 threads.
// Returns the rows kept.
size_t check_case(const Case& k, Fill fill, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const size_t np = static_cast<size_t>(k.priors);
  std::vector<float> pri(8 * np), loc(4 * np), conf(np * k.classes);
  for (size_t i = 0; i < np; ++i) {
    const float cx = 0.4f * u(rng), cy = 0.4f * u(rng), w = 0.05f + 0.3f * u(rng), h = 0.05f + 0.3f * u(rng);
    const float p[4] = {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
    for (int j = 0; j < 4; ++j) {
      pri[4 * i + j] = p[j];
      pri[4 * np + 4 * i + j] = j < 2 ? 0.125f : 0.25f;  // exact products (see above)
      loc[4 * i + j] = u(rng) - 0.5f;
    }
    if (fill == Fill::kTies && i % 11 == 3) loc[4 * i + (i % 2 ? 0 : 1)] = -inf;  // xmin or ymin
    if (fill == Fill::kTies && i % 13 == 4) loc[4 * i + (i % 2 ? 2 : 3)] = inf;   // xmax or ymax
    if (fill == Fill::kNanBoxes && i % 7 == 2) loc[4 * i + i % 4] = nan;
    if (fill == Fill::kNanBoxes && i % 9 == 1) loc[4 * i + (i + 1) % 4] = i % 2 ? inf : -inf;
    for (int c = 0; c < k.classes; ++c) {
      float& s = conf[i * k.classes + c];
      s = u(rng) * u(rng);
      if (fill == Fill::kTies) {
        const float levels[5] = {k.conf, 0.3f, 0.5f, 0.75f, nan};
        s = u(rng) < 0.5f ? levels[rng() % 5] : s;
      }
      if (fill == Fill::kSignedZero) {
        const float levels[4] = {0.f, -0.f, -0.25f, k.conf};
        s = u(rng) < 0.6f ? levels[rng() % 4] : s;
      }
    }
  }
  kestrel::fb::DetectionOutputParamT p;
  p.num_classes = k.classes;
  p.background_label_id = k.background;
  p.nms_threshold = k.nms;
  p.top_k = k.top_k;
  p.keep_top_k = k.keep_top_k;
  p.confidence_threshold = k.conf;
  p.code_type = kestrel::fb::CodeType::Corner;
  const std::vector<float> want = reference(k, loc, conf, pri);
  for (int threads : {1, 4}) {
    lt::Harness h("DetectionOutput", p);
    REQUIRE(h.load.ok());
    const Mat out = h.run({lt::make_mat(Shape::make1(static_cast<int>(4 * np)), loc),
                           lt::make_mat(Shape::make2(k.classes, static_cast<int>(np)), conf),
                           lt::make_mat(Shape::make2(static_cast<int>(4 * np), 2), pri)},
                          threads);
    INFO("priors " << k.priors << " classes " << k.classes << " background " << k.background << " top_k "
                   << k.top_k << " keep_top_k " << k.keep_top_k << " nms " << k.nms << " conf " << k.conf
                   << " fill " << static_cast<int>(fill) << " threads " << threads);
    REQUIRE(out.w == 6);
    const std::vector<float> got(out.data, out.data + static_cast<size_t>(out.h) * 6);
    CHECK(got.size() == want.size());
    CHECK(lt::same_bits(got, want));
  }
  return want.size() / 6;
}

}  // namespace

TEST_SUITE("layers") {
  TEST_CASE("DetectionOutput matches Caffe bit for bit across classes, backgrounds and values") {
    std::mt19937 rng(25);
    size_t rows = 0, empty = 0;
    // Class counts: the scalar collect (2, 3), one 4-lane group (4), a last group that
    // overlaps the one before (5, 21), 32-class words (33, 36: a last word of 1 and 4
    // classes; 91: 32 + 32 + 27).
    for (int classes : {2, 3, 4, 5, 21, 33, 36, 91}) {
      for (int background : {-1, 0, classes / 2, classes - 1}) {
        if (background == classes - 1 && classes == 2) continue;  // same as background 1 of 2: covered by classes/2
        for (Fill fill : {Fill::kPlain, Fill::kTies, Fill::kNanBoxes, Fill::kSignedZero}) {
          const float conf = fill == Fill::kSignedZero ? -0.5f : fill == Fill::kTies ? 0.3f : 0.1f;
          // Priors no multiple of 4; top_k below a class's candidates (selection),
          // above keep_top_k (the heap NMS) and none; keep_top_k below the total.
          const Case cases[] = {
              {203, classes, 25, 40, 0.45f, conf, background},
              {61, classes, -1, -1, 0.3f, conf, background},
              {130, classes, 60, 9, 0.6f, conf, background},
              {17, classes, 5, -1, -0.1f, conf, background},  // a negative threshold keeps one a class
          };
          for (const Case& k : cases) rows += check_case(k, fill, rng);
          // Every class empty: nothing above the threshold.
          const size_t none = check_case({50, classes, 20, 10, 0.45f, 2.f, background}, fill, rng);
          CHECK(none == 0);
          empty += none == 0;
        }
      }
    }
    CHECK(rows > 10000);
    CHECK(empty > 0);
  }
}
