// DetectionOutput against Caffe's algorithm written out one pair at a time (the layer
// tests 4 kept boxes at once with vector masks, and selects instead of sorting): many
// overlapping boxes, classes above top_k, inverted and infinite boxes, kept counts that
// are and are not multiples of 4, with and without keep_top_k.
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
};

// Rows [label, score, x0, y0, x1, y1] as Caffe computes them (Corner code, background 0).
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
  for (int c = 1; c < k.classes; ++c) {
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
