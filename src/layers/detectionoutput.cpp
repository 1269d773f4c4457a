// DetectionOutput: SSD box decoding, per-class NMS and the final top-k, following
// Caffe-SSD's DetectionOutputLayer (with shared locations).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

struct Box {
  float xmin, ymin, xmax, ymax;
};

struct Candidate {
  float score;
  int label;
  int index;  // prior index
};

// Higher score first. Caffe sorts candidates with a stable sort in prior order and
// keeps each class's NMS output in that order, so ties go to the lower label, then
// the lower prior index; a total order also makes std::sort deterministic.
bool before(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.label != b.label) return a.label < b.label;
  return a.index < b.index;
}

// before() for two candidates of one class (the label needs no look).
bool before_in_class(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.index < b.index;
}

// The two orders as function objects, which the std algorithms inline (a function
// pointer they call at every comparison).
constexpr auto kBefore = [](const Candidate& a, const Candidate& b) { return before(a, b); };
constexpr auto kBeforeInClass = [](const Candidate& a, const Candidate& b) { return before_in_class(a, b); };

// Caffe's BBoxSize for normalized boxes: an inverted box has no area.
float box_area(const Box& b) {
  if (b.xmax < b.xmin || b.ymax < b.ymin) return 0.f;
  return (b.xmax - b.xmin) * (b.ymax - b.ymin);
}

// NMS tests a candidate against the boxes its class kept so far, 4 at a time: the
// kept boxes side by side as columns (KeptBoxes), Caffe's JaccardOverlap (normalized)
// in GCC's portable vector types (NEON, SSE): the same IEEE operations lane by lane as
// one pair at a time, so the same decisions.
// One by one it took ~10 aarch64 instructions per pair, most of SSD's
// DetectionOutput on random weights (~70 K pairs an inference).
using Vec4 = float __attribute__((vector_size(16)));
using Mask4 = int __attribute__((vector_size(16)));
constexpr int kVec = 4;

Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
Vec4 splat4(float x) { return Vec4{x, x, x, x}; }

// The kept boxes of one class as 5 columns of `cap` floats (a multiple of 4).
struct KeptBoxes {
  float *xmin, *ymin, *xmax, *ymax, *area;
  static size_t floats(size_t cap) { return 5 * cap; }
  KeptBoxes(float* p, size_t cap)
      : xmin(p), ymin(p + cap), xmax(p + 2 * cap), ymax(p + 3 * cap), area(p + 4 * cap) {}
  void set(size_t k, const Box& b) {
    xmin[k] = b.xmin, ymin[k] = b.ymin, xmax[k] = b.xmax, ymax[k] = b.ymax, area[k] = box_area(b);
  }
};

// The most IoU evaluations NMS may need in one inference, worst case (every
// candidate scored above the threshold, none overlapping). Real SSDs declare a few
// million (VGG SSD300: 20 classes x top_k 400 x keep_top_k 200 = 1.6 M). At 2^27
// (11585 disjoint boxes, all kept) one inference takes about 0.15 s on an x86 core;
// anything larger can only stall its caller.
constexpr size_t kMaxNmsComparisons = size_t(1) << 27;

class DetectionOutput final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::DetectionOutputParam* p = ctx.layer->params_as_DetectionOutputParam();
    if (!p) return corrupt("missing DetectionOutputParam");
    num_classes_ = p->num_classes();
    background_ = p->background_label_id();
    nms_threshold_ = p->nms_threshold();
    top_k_ = p->top_k();
    keep_top_k_ = p->keep_top_k();
    confidence_threshold_ = p->confidence_threshold();
    code_type_ = p->code_type();
    variance_in_target_ = p->variance_encoded_in_target();
    const int code = static_cast<int>(code_type_);
    layer_util::ParamCheck check;
    check.positive("num_classes", num_classes_)
        .require(p->share_location(), "share_location = false is not supported")
        .require(background_ >= -1 && background_ < num_classes_, [&] {
          return "background_label_id " + std::to_string(background_) + " must be -1 or a class below num_classes " +
                 std::to_string(num_classes_);
        })
        .require(code >= 0 && code <= static_cast<int>(fb::CodeType::MAX), "unknown code_type " + std::to_string(code))
        .require(std::isfinite(nms_threshold_), "nms_threshold must be finite")
        .require(!std::isnan(confidence_threshold_), "confidence_threshold must not be NaN");
    foreground_ = num_classes_ - (background_ >= 0 ? 1 : 0);
    check.require(!check.ok() || foreground_ > 0, "num_classes leaves no class besides the background");
    return check.status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("DetectionOutput", inputs, 3, 3, outputs);
    if (!s.ok()) return s;
    const Shape& priors = inputs[2];
    if (priors.dims != 2 || priors.h != 2 || priors.w % 4 != 0 || priors.w == 0) {
      return corrupt("priors (input 2) must be 2-D [2][num_priors*4]");
    }
    num_priors_ = priors.w / 4;
    // loc and conf are read as flat arrays, so they must have no channel padding.
    if (inputs[0].dims > 2 || inputs[1].dims > 2) {
      return corrupt("loc and conf (inputs 0 and 1) must be 1-D or 2-D");
    }
    if (inputs[0].total() != size_t(num_priors_) * 4) {
      return corrupt("loc has " + std::to_string(inputs[0].total()) + " values, expected num_priors * 4 = " +
                     std::to_string(size_t(num_priors_) * 4));
    }
    if (inputs[1].total() != size_t(num_priors_) * size_t(num_classes_)) {
      return corrupt("conf has " + std::to_string(inputs[1].total()) + " values, expected num_priors * num_classes = " +
                     std::to_string(size_t(num_priors_) * size_t(num_classes_)));
    }
    // NMS compares each candidate of a class with the boxes the class kept before it:
    // at most (candidates) x (kept) IoUs per class, bounded by top_k and keep_top_k.
    const size_t candidates = top_k_ > 0 ? std::min(size_t(top_k_), size_t(num_priors_)) : size_t(num_priors_);
    max_kept_per_class_ = keep_top_k_ > 0 ? std::min(candidates, size_t(keep_top_k_)) : candidates;
    kept_cap_ = (max_kept_per_class_ + kVec - 1) / kVec * kVec;
    // Workspace: the boxes by prior, the candidates, the boxes a class kept, the
    // candidate count of each class, and a decoded flag per prior.
    size_t max_dets = 0, box_bytes = 0, cand_bytes = 0, count_bytes = sizeof(int) * size_t(num_classes_);
    size_t sum = 0;
    if (!checked_mul({size_t(num_priors_), size_t(foreground_)}, &max_dets) ||
        !checked_mul({size_t(num_priors_), sizeof(Box)}, &box_bytes) ||
        !checked_mul({max_dets, sizeof(Candidate)}, &cand_bytes) || !checked_add(box_bytes, cand_bytes, &sum) ||
        !checked_add(sum, KeptBoxes::floats(kept_cap_) * sizeof(float), &sum) ||
        !checked_add(sum, count_bytes, &sum) || !checked_add(sum, size_t(num_priors_), &workspace_bytes)) {
      return corrupt("too many priors and classes");
    }
    size_t comparisons = 0;
    const bool fits = checked_mul({size_t(foreground_), candidates, max_kept_per_class_}, &comparisons);
    if (!fits || comparisons > kMaxNmsComparisons) {
      return corrupt("NMS over " + std::to_string(num_priors_) + " priors and " + std::to_string(foreground_) +
                     " classes with top_k " + std::to_string(top_k_) + " and keep_top_k " +
                     std::to_string(keep_top_k_) + " may compare up to " +
                     (fits ? std::to_string(comparisons) : std::string("more than 2^64")) +
                     " box pairs per inference, above the limit of " + std::to_string(kMaxNmsComparisons) +
                     ": set nms_param top_k (Caffe's default SSDs use 100-400) or keep_top_k");
    }
    if (keep_top_k_ > 0) max_dets = std::min(max_dets, size_t(keep_top_k_));
    if (max_dets > 0x7fffffffu) return corrupt("too many detections");
    outputs[0] = Shape::make2(6, static_cast<int>(max_dets));
    return Status::Ok();
  }

  bool data_dependent_rows() const override { return true; }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs, const ForwardContext& ctx) const override {
    if (!ctx.workspace) return Status(ErrorCode::kInternal, "DetectionOutput needs a workspace");
    const float* loc = inputs[0].data;
    const float* conf = inputs[1].data;
    const Mat& priors = inputs[2];
    const size_t np = static_cast<size_t>(num_priors_);
    Box* boxes = static_cast<Box*>(ctx.workspace);
    Candidate* dets = reinterpret_cast<Candidate*>(boxes + np);
    float* kept_columns = reinterpret_cast<float*>(dets + np * static_cast<size_t>(foreground_));
    KeptBoxes kept_boxes(kept_columns, kept_cap_);
    int* counts = reinterpret_cast<int*>(kept_columns + KeptBoxes::floats(kept_cap_));
    unsigned char* decoded = reinterpret_cast<unsigned char*>(counts + num_classes_);

    // Each class's candidates (its top_k best above the threshold), class after class.
    size_t total = 0;
    for (int c = 0; c < num_classes_; ++c) {
      if (c == background_) continue;
      Candidate* cand = dets + total;
      int n = collect(conf, c, cand);
      // Only the top_k best take part, picked in linear time.
      if (top_k_ > 0 && n > top_k_) {
        std::nth_element(cand, cand + top_k_, cand + n, kBeforeInClass);
        n = top_k_;
      }
      counts[c] = n;
      total += static_cast<size_t>(n);
    }
    // Only the boxes of those candidates are decoded, each once.
    std::memset(decoded, 0, np);
    for (size_t k = 0; k < total; ++k) {
      const size_t i = static_cast<size_t>(dets[k].index);
      if (decoded[i]) continue;
      decoded[i] = 1;
      boxes[i] = decode(loc + 4 * i, priors.row(0) + 4 * i, priors.row(1) + 4 * i);
    }

    // NMS compacts each class's survivors in place, then after those kept so far.
    size_t kept = 0, start = 0;
    for (int c = 0; c < num_classes_; ++c) {
      if (c == background_) continue;
      const size_t k = nms(dets + start, counts[c], boxes, kept_boxes);
      if (start != kept) std::copy(dets + start, dets + start + k, dets + kept);
      kept += k;
      start += static_cast<size_t>(counts[c]);
    }
    if (keep_top_k_ > 0 && kept > size_t(keep_top_k_)) {
      // Select, then sort the few: half the instructions of partial_sort's heap.
      std::nth_element(dets, dets + keep_top_k_, dets + kept, kBefore);
      std::sort(dets, dets + keep_top_k_, kBefore);
      kept = size_t(keep_top_k_);
    } else {
      std::sort(dets, dets + kept, kBefore);
    }

    Mat& out = outputs[0];
    for (size_t i = 0; i < kept; ++i) {
      const Box& b = boxes[dets[i].index];
      float* row = out.data + i * 6;
      row[0] = static_cast<float>(dets[i].label);
      row[1] = dets[i].score;
      row[2] = b.xmin;
      row[3] = b.ymin;
      row[4] = b.xmax;
      row[5] = b.ymax;
    }
    // The real count; cstep follows so that the Mat's total() stays consistent.
    out.h = static_cast<int>(kept);
    out.cstep = static_cast<size_t>(out.w) * kept;
    return Status::Ok();
  }

 private:
  // The candidates of class c (score above the threshold) in prior order into out;
  // returns how many. A softmax leaves few scores of a class above it, so four are
  // tested before any is looked at one by one.
  int collect(const float* conf, int c, Candidate* out) const {
    const float t = confidence_threshold_;
    const size_t nc = static_cast<size_t>(num_classes_);
    const float* p = conf + c;
    int n = 0, i = 0;
    for (; i + 4 <= num_priors_; i += 4, p += 4 * nc) {
      if (!(p[0] > t || p[nc] > t || p[2 * nc] > t || p[3 * nc] > t)) continue;
      for (int k = 0; k < 4; ++k) {
        if (p[k * nc] > t) out[n++] = Candidate{p[k * nc], c, i + k};
      }
    }
    for (; i < num_priors_; ++i, p += nc) {
      if (*p > t) out[n++] = Candidate{*p, c, i};
    }
    return n;
  }

  // Caffe's DecodeBBox without clipping of one prior. With variance_encoded_in_target
  // the offsets already include the variances.
  Box decode(const float* l, const float* p, const float* var) const {
    float v[4] = {1.f, 1.f, 1.f, 1.f};
    if (!variance_in_target_) std::copy(var, var + 4, v);
    const float pw = p[2] - p[0], ph = p[3] - p[1];
    switch (code_type_) {
      case fb::CodeType::Corner:
        return Box{p[0] + v[0] * l[0], p[1] + v[1] * l[1], p[2] + v[2] * l[2], p[3] + v[3] * l[3]};
      case fb::CodeType::CornerSize:
        return Box{p[0] + v[0] * l[0] * pw, p[1] + v[1] * l[1] * ph, p[2] + v[2] * l[2] * pw, p[3] + v[3] * l[3] * ph};
      default: {
        const float pcx = (p[0] + p[2]) / 2.f, pcy = (p[1] + p[3]) / 2.f;
        const float cx = v[0] * l[0] * pw + pcx;
        const float cy = v[1] * l[1] * ph + pcy;
        const float w = std::exp(v[2] * l[2]) * pw;
        const float h = std::exp(v[3] * l[3]) * ph;
        // Halving in double as Caffe does ("width / 2.").
        return Box{static_cast<float>(cx - w / 2.), static_cast<float>(cy - h / 2.), static_cast<float>(cx + w / 2.),
                   static_cast<float>(cy + h / 2.)};
      }
    }
  }

  // Caffe's ApplyNMSFast with eta = 1: walk candidates best first, keep one unless it
  // overlaps a kept one by more than the threshold. Returns the number kept, which
  // then occupy cand[0..] best first. It stops at keep_top_k kept: every later one of
  // this class has keep_top_k better detections before it and cannot survive the
  // final top-k. So the candidates are not sorted up front but leave a heap best
  // first (linear set-up, log n a step): a class stops after the few it needs. The
  // kept boxes are copied side by side (kept_boxes) for the comparisons.
  size_t nms(Candidate* cand, int n, const Box* boxes, KeptBoxes& kept_boxes) const {
    if (static_cast<size_t>(n) <= max_kept_per_class_) return nms_sorted(cand, n, boxes, kept_boxes);
    const auto after = [](const Candidate& a, const Candidate& b) { return before_in_class(b, a); };
    std::make_heap(cand, cand + n, after);
    // Kept ones collect at the end, best last: cand[n - 1 - k] is the k-th kept, a
    // slot the heap has already left (k < the number popped).
    size_t kept = 0;
    for (int m = n; m > 0 && kept < max_kept_per_class_; --m) {
      std::pop_heap(cand, cand + m, after);
      const Candidate c = cand[m - 1];
      const Box& b = boxes[c.index];
      if (overlaps_none(b, kept_boxes, kept)) {
        kept_boxes.set(kept, b);
        cand[n - 1 - kept++] = c;
      }
    }
    std::reverse(cand + n - kept, cand + n);
    std::move(cand + n - kept, cand + n, cand);
    return kept;
  }

  // True if b overlaps none of the first n kept boxes by more than the threshold:
  // iou(b, kept) of 4 kept boxes at a time, its branches as lane masks. Only the last
  // group of a count that is no multiple of 4 masks its lanes past n (a mask every
  // group was 4 of its ~40 instructions on aarch64).
  bool overlaps_none(const Box& b, const KeptBoxes& kept, size_t n) const {
    const Vec4 x0 = splat4(b.xmin), y0 = splat4(b.ymin), x1 = splat4(b.xmax), y1 = splat4(b.ymax);
    const Vec4 area = splat4(box_area(b)), threshold = splat4(nms_threshold_), zero = splat4(0.f);
    // The lanes of one group that overlap b by at most the threshold (not by more: a
    // NaN overlap suppresses, as in Caffe).
    const auto clear = [&](size_t k) {
      const Vec4 kx0 = load4(kept.xmin + k), ky0 = load4(kept.ymin + k);
      const Vec4 kx1 = load4(kept.xmax + k), ky1 = load4(kept.ymax + k);
      const Mask4 disjoint = (kx0 > x1) | (kx1 < x0) | (ky0 > y1) | (ky1 < y0);
      // std::min(a, b) is (b < a ? b : a), std::max(a, b) (a < b ? b : a): so with NaNs.
      const Vec4 iw = (kx1 < x1 ? kx1 : x1) - (x0 < kx0 ? kx0 : x0);
      const Vec4 ih = (ky1 < y1 ? ky1 : y1) - (y0 < ky0 ? ky0 : y0);
      const Vec4 inter = iw * ih;
      const Vec4 overlap = inter / (area + load4(kept.area + k) - inter);
      const Mask4 none = disjoint | (iw <= zero) | (ih <= zero);
      const Vec4 v = none ? zero : overlap;
      return v <= threshold;
    };
    const size_t whole = n / kVec * kVec;
    for (size_t k = 0; k < whole; k += kVec) {
      if (!all(clear(k))) return false;
    }
    if (whole == n) return true;
    const Mask4 lane = {0, 1, 2, 3};
    return all(clear(whole) | (lane >= static_cast<int>(n - whole)));
  }

  // Whether every lane is set: the two halves as integers (on aarch64 2 moves and an
  // and, where testing the 4 lanes took 8 instructions).
  static bool all(Mask4 m) {
    uint64_t h[2];
    std::memcpy(h, &m, sizeof h);
    return (h[0] & h[1]) == ~uint64_t(0);
  }

  // nms() where no early stop can come (every candidate may be kept): one sort,
  // cheaper than popping a heap, then the same walk; survivors compact in place.
  size_t nms_sorted(Candidate* cand, int n, const Box* boxes, KeptBoxes& kept_boxes) const {
    std::sort(cand, cand + n, kBeforeInClass);
    size_t kept = 0;
    for (int m = 0; m < n; ++m) {
      const Box& b = boxes[cand[m].index];
      if (overlaps_none(b, kept_boxes, kept)) {
        kept_boxes.set(kept, b);
        cand[kept++] = cand[m];
      }
    }
    return kept;
  }

  int num_classes_ = 0, background_ = 0, foreground_ = 0;
  float nms_threshold_ = 0.45f, confidence_threshold_ = 0.f;
  int top_k_ = -1, keep_top_k_ = -1;
  fb::CodeType code_type_ = fb::CodeType::CenterSize;
  bool variance_in_target_ = false;
  int num_priors_ = 0;  // from prepare()
  size_t max_kept_per_class_ = 0, kept_cap_ = 0;  // kept_cap_: its multiple of 4
};

}  // namespace

std::unique_ptr<Layer> create_detectionoutput_layer() { return std::make_unique<DetectionOutput>(); }

}  // namespace kestrel
