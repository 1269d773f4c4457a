// DetectionOutput: SSD box decoding, per-class NMS and the final top-k, following
// Caffe-SSD's DetectionOutputLayer (with shared locations).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "layers/layers.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#elif defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace kestrel {
namespace {

using layer_util::corrupt;

struct Box {
  float xmin, ymin, xmax, ymax;
};

// A candidate as one integer whose ascending order is Caffe's: higher score first;
// ties (Caffe sorts stably in prior order and keeps each class's NMS output in that
// order) to the lower label, then the lower prior. The score's bits mapped to an
// unsigned order, best first, above `pos`: the prior while in its class's bucket,
// slot * num_priors + prior once the classes merge (slot: the label less the
// background's place). As integers, sorting and selecting take a fraction of the
// instructions of a two-field comparison.
using Key = uint64_t;

Key make_key(float score, uint32_t pos) {
  uint32_t u;
  std::memcpy(&u, &score, sizeof u);
  // Positive: the larger, the lower. Negative scores (only above a threshold below 0)
  // the other way round, after every positive one; -0 ties +0.
  uint32_t order = u ^ 0x7fffffffu;
  if (__builtin_expect(static_cast<int32_t>(u) < 0, 0)) order = u == 0x80000000u ? 0x7fffffffu : u;
  return Key(order) << 32 | pos;
}
uint32_t key_pos(Key k) { return static_cast<uint32_t>(k); }

// Caffe's BBoxSize for normalized boxes: an inverted box has no area.
float box_area(const Box& b) {
  if (b.xmax < b.xmin || b.ymax < b.ymin) return 0.f;
  return (b.xmax - b.xmin) * (b.ymax - b.ymin);
}

// NMS tests a candidate against the boxes its class kept so far, 4 at a time: the
// kept boxes side by side in groups of 4 (KeptBoxes), Caffe's JaccardOverlap (normalized)
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

// Per ISA: min4/max4 of two NaN-free vectors: fmin/fmax (minps/maxps) differ from the
// ternaries std::min/std::max lower to (2 instructions a vector on aarch64) only in the
// sign of a zero when the two compare equal, which overlaps_none() shows never matters
// there. lane_or: the OR of the lanes (addv on aarch64, where the lanes it is given hold
// disjoint bits). all_set: whether every lane of a mask (lanes 0 or ~0) is set.
// either_le_zero: (a <= 0) | (b <= 0), NaN lanes false (fminnm gives the number where
// one of the two is NaN).
#if defined(__aarch64__)
Vec4 min4(Vec4 a, Vec4 b) { return vminq_f32(a, b); }
Vec4 max4(Vec4 a, Vec4 b) { return vmaxq_f32(a, b); }
uint32_t lane_or(Mask4 m) { return vaddvq_u32(vreinterpretq_u32_s32(m)); }
bool all_set(Mask4 m) { return vminvq_u32(vreinterpretq_u32_s32(m)) != 0; }
Mask4 either_le_zero(Vec4 a, Vec4 b) {
  const Vec4 m = vminnmq_f32(a, b);
  return m <= splat4(0.f);
}
#else
#if defined(__SSE__)
Vec4 min4(Vec4 a, Vec4 b) { return _mm_min_ps(a, b); }
Vec4 max4(Vec4 a, Vec4 b) { return _mm_max_ps(a, b); }
#else
Vec4 min4(Vec4 a, Vec4 b) { return b < a ? b : a; }
Vec4 max4(Vec4 a, Vec4 b) { return a < b ? b : a; }
#endif
uint32_t lane_or(Mask4 m) { return static_cast<uint32_t>(m[0] | m[1] | m[2] | m[3]); }
// The two halves as integers (testing the 4 lanes one by one is twice the instructions).
bool all_set(Mask4 m) {
  uint64_t h[2];
  std::memcpy(h, &m, sizeof h);
  return (h[0] & h[1]) == ~uint64_t(0);
}
Mask4 either_le_zero(Vec4 a, Vec4 b) { return (a <= splat4(0.f)) | (b <= splat4(0.f)); }
#endif

// The kept boxes of one class, `cap` of them (a multiple of 4), 4 to a group of 5
// vectors: the 4 boxes' xmin, ymin, xmax, ymax and area. One pointer walks the groups
// with the loads at fixed offsets (5 columns took a pointer each, or an index).
struct KeptBoxes {
  static constexpr size_t kGroup = 5 * kVec;  // floats
  float* groups;
  static size_t floats(size_t cap) { return 5 * cap; }
  const float* group(size_t g) const { return groups + g * kGroup; }
  void set(size_t k, const Box& b, float b_area) {
    float* g = groups + k / kVec * kGroup + k % kVec;
    g[0] = b.xmin, g[kVec] = b.ymin, g[2 * kVec] = b.xmax, g[3 * kVec] = b.ymax, g[4 * kVec] = b_area;
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
    // Workspace: the boxes by prior, the end of each class's bucket of candidates, the
    // buckets, the boxes a class kept, and a decoded flag per prior; each part starts on
    // kAlignment (64-bit keys after 4-byte pointers fault on 32-bit ARM).
    size_t max_dets = 0, box_bytes = 0, cand_bytes = 0, ends_bytes = sizeof(Key*) * size_t(num_classes_);
    // Where the part after `bytes` from `offset` starts; false on overflow.
    const auto next = [](size_t offset, size_t bytes, size_t* end) {
      size_t e = 0;
      if (!checked_add(offset, bytes, &e) || !checked_add(e, kAlignment - 1, &e)) return false;
      *end = e / kAlignment * kAlignment;
      return true;
    };
    if (!checked_mul({size_t(num_priors_), size_t(foreground_)}, &max_dets) ||
        !checked_mul({size_t(num_priors_), sizeof(Box)}, &box_bytes) ||
        (static_cast<uint64_t>(max_dets) >> 32) != 0 ||  // a Key's pos: slot * num_priors + prior
        !checked_mul({max_dets, sizeof(Key)}, &cand_bytes) || !next(0, box_bytes, &ends_at_) ||
        !next(ends_at_, ends_bytes, &dets_at_) || !next(dets_at_, cand_bytes, &kept_at_) ||
        !next(kept_at_, KeptBoxes::floats(kept_cap_) * sizeof(float), &decoded_at_) ||
        !checked_add(decoded_at_, size_t(num_priors_), &workspace_bytes)) {
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
    char* ws = static_cast<char*>(ctx.workspace);
    Box* boxes = reinterpret_cast<Box*>(ws);
    Key** ends = reinterpret_cast<Key**>(ws + ends_at_);
    Key* dets = reinterpret_cast<Key*>(ws + dets_at_);
    float* kept_groups = reinterpret_cast<float*>(ws + kept_at_);
    KeptBoxes kept_boxes{kept_groups};
    unsigned char* decoded = reinterpret_cast<unsigned char*>(ws + decoded_at_);

    // Each class's candidates (its top_k best above the threshold) in a bucket of its
    // own, [bucket(c), ends[c]).
    for (int c = 0; c < num_classes_; ++c) ends[c] = bucket(dets, c);
    collect(conf, ends);
    for (int c = 0; c < num_classes_; ++c) {
      Key* cand = bucket(dets, c);
      // Only the top_k best take part, picked in linear time.
      if (c != background_ && top_k_ > 0 && ends[c] - cand > top_k_) {
        std::nth_element(cand, cand + top_k_, ends[c]);
        ends[c] = cand + top_k_;
      }
    }
    // Only the boxes of those candidates are decoded, each once. probe sums their
    // coordinates: NaN if any is NaN (or, harmlessly, where infinities cancel).
    std::memset(decoded, 0, np);
    Vec4 probe = splat4(0.f);
    const float *prior_box = priors.row(0), *prior_var = priors.row(1);
    for (int c = 0; c < num_classes_; ++c) {
      if (c == background_) continue;
      for (const Key* d = bucket(dets, c); d != ends[c]; ++d) {
        const size_t i = key_pos(*d);
        if (decoded[i]) continue;
        decoded[i] = 1;
        boxes[i] = decode(loc + 4 * i, prior_box + 4 * i, prior_var + 4 * i);
        probe += load4(&boxes[i].xmin);
      }
    }
    const bool nan_free = !std::isnan(probe[0] + probe[1] + probe[2] + probe[3]);

    // NMS compacts each class's survivors in its bucket, then after those kept so far
    // (never past the bucket: each holds at most num_priors), their label now in pos.
    size_t kept = 0;
    for (int c = 0; c < num_classes_; ++c) {
      if (c == background_) continue;
      Key* cand = bucket(dets, c);
      const int n = static_cast<int>(ends[c] - cand);
      const size_t k = nan_free ? nms<true>(cand, n, boxes, kept_boxes) : nms<false>(cand, n, boxes, kept_boxes);
      const Key offset = static_cast<Key>(cand - dets);  // slot * num_priors
      for (size_t j = 0; j < k; ++j) dets[kept + j] = cand[j] + offset;
      kept += k;
    }
    if (keep_top_k_ > 0 && kept > size_t(keep_top_k_)) {
      // Select, then sort the few: half the instructions of partial_sort's heap.
      std::nth_element(dets, dets + keep_top_k_, dets + kept);
      std::sort(dets, dets + keep_top_k_);
      kept = size_t(keep_top_k_);
    } else {
      std::sort(dets, dets + kept);
    }

    Mat& out = outputs[0];
    const size_t nc = static_cast<size_t>(num_classes_);
    for (size_t i = 0; i < kept; ++i) {
      const size_t slot = key_pos(dets[i]) / np, index = key_pos(dets[i]) % np;
      const size_t label = background_ >= 0 && slot >= size_t(background_) ? slot + 1 : slot;
      const Box& b = boxes[index];
      float* row = out.data + i * 6;
      row[0] = static_cast<float>(label);
      row[1] = conf[index * nc + label];
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
  // The bucket of class c's candidates: num_priors slots (the background's is unused).
  Key* bucket(Key* dets, int c) const {
    const int slot = background_ >= 0 && c > background_ ? c - 1 : c;
    return dets + static_cast<size_t>(slot) * static_cast<size_t>(num_priors_);
  }

  // Appends every foreground candidate (score above the threshold) to its class's
  // bucket at ends[c], so each bucket in prior order. Prior by prior: a prior's scores
  // lie side by side, so up to 32 classes take a few vector compares and a bit mask,
  // and only those above are looked at (class by class, a stride of num_classes apart,
  // it took ~4 instructions per score). A background first or last is left out of the
  // range (SSD's 20 classes after it take 5 vectors, not 6).
  void collect(const float* conf, Key** ends) const {
    const int nc = num_classes_;
    const int lo = background_ == 0 ? 1 : 0, hi = background_ == nc - 1 ? nc - 1 : nc;
    if (hi < kVec) return collect_classes<0>(conf, lo, hi - lo, ends);
    for (int first = lo; first < hi; first += 32) {
      const int count = std::min(32, hi - first);
      switch ((count + kVec - 1) / kVec) {
        case 1: collect_classes<1>(conf, first, count, ends); break;
        case 2: collect_classes<2>(conf, first, count, ends); break;
        case 3: collect_classes<3>(conf, first, count, ends); break;
        case 4: collect_classes<4>(conf, first, count, ends); break;
        case 5: collect_classes<5>(conf, first, count, ends); break;
        case 6: collect_classes<6>(conf, first, count, ends); break;
        case 7: collect_classes<7>(conf, first, count, ends); break;
        default: collect_classes<8>(conf, first, count, ends); break;
      }
    }
  }

  // collect() for the classes [first, first + count) (count <= 32) with K vector
  // compares a prior, the last at first + count - 4 where count is no multiple of 4
  // (first + count >= 4), its lanes below first or that an earlier one covers
  // weighing 0. K = 0: one class at a time (fewer than 4 classes in all).
  template <int K>
  void collect_classes(const float* conf, int first, int count, Key** ends) const {
    const size_t nc = static_cast<size_t>(num_classes_);
    const float t = confidence_threshold_;
    int offset[K > 0 ? K : 1] = {};
    Mask4 weight[K > 0 ? K : 1] = {};
    for (int j = 0; j < K; ++j) {
      offset[j] = first + std::min(kVec * j, count - kVec);
      for (int l = 0; l < kVec; ++l) {
        const int bit = offset[j] - first + l;
        const bool counted = bit >= kVec * j && first + bit != background_;
        weight[j][l] = counted ? static_cast<int>(uint32_t(1) << bit) : 0;
      }
    }
    const Vec4 tv = splat4(t);
    const float* row = conf;
    for (int i = 0; i < num_priors_; ++i, row += nc) {
      uint32_t bits = 0;
      if constexpr (K > 0) {
        Mask4 m = (load4(row + offset[0]) > tv) & weight[0];
        for (int j = 1; j < K; ++j) m |= (load4(row + offset[j]) > tv) & weight[j];
        bits = lane_or(m);
      } else {
        for (int j = 0; j < count; ++j) bits |= row[first + j] > t && first + j != background_ ? uint32_t(1) << j : 0;
      }
      while (bits) {
        const size_t c = static_cast<size_t>(first) + static_cast<size_t>(__builtin_ctz(bits));
        bits &= bits - 1;
        *ends[c]++ = make_key(row[c], static_cast<uint32_t>(i));
      }
    }
  }

  // Caffe's DecodeBBox without clipping of one prior. With variance_encoded_in_target
  // the offsets already include the variances.
  Box decode(const float* l, const float* p, const float* var) const {
    // A pointer to the variances or to ones: a local copy of the 4 took ~12 moves.
    static constexpr float kOnes[4] = {1.f, 1.f, 1.f, 1.f};
    const float* v = variance_in_target_ ? kOnes : var;
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
  template <bool kNanFree>
  size_t nms(Key* cand, int n, const Box* boxes, KeptBoxes& kept_boxes) const {
    if (static_cast<size_t>(n) <= max_kept_per_class_) return nms_sorted<kNanFree>(cand, n, boxes, kept_boxes);
    const auto after = [](Key a, Key b) { return a > b; };
    std::make_heap(cand, cand + n, after);
    const float threshold = nms_threshold_;  // a local: the kept boxes' stores may alias a member
    // Kept ones collect at the end, best last: cand[n - 1 - k] is the k-th kept, a
    // slot the heap has already left (k < the number popped).
    size_t kept = 0;
    for (int m = n; m > 0 && kept < max_kept_per_class_; --m) {
      std::pop_heap(cand, cand + m, after);
      const Key c = cand[m - 1];
      const Box& b = boxes[key_pos(c)];
      const float area = box_area(b);
      if (overlaps_none<kNanFree>(b, area, threshold, kept_boxes, kept)) {
        kept_boxes.set(kept, b, area);
        cand[n - 1 - kept++] = c;
      }
    }
    std::reverse(cand + n - kept, cand + n);
    std::move(cand + n - kept, cand + n, cand);
    return kept;
  }

  // True if b (of area b_area) overlaps none of the first n kept boxes by more than
  // the threshold: iou(b, kept) of 4 kept boxes at a time, its branches as lane masks.
  // Only the last group of a count that is no multiple of 4 masks its lanes past n (a
  // mask every group was 4 of its ~40 instructions on aarch64).
  //
  // kNanFree: no coordinate of b or of the kept boxes is NaN. Then Caffe's disjoint
  // test is implied by iw <= 0 || ih <= 0 and needs no instructions: kx0 > x1 gives
  // max(x0, kx0) >= kx0 > x1 >= min(x1, kx1), so iw is a difference a - b of a < b,
  // which rounds to a negative number or -inf (a nonzero exact difference never rounds
  // to 0; an infinite operand gives -inf, and inf - inf needs a == b), and the same for
  // the other three tests. And min/max may be fmin/fmax (min4, max4): without NaNs they
  // differ from the ternaries only where the two compare equal, that is +0 against -0,
  // and only in the sign of that zero. A signed zero changes no difference with a
  // nonzero operand (x - 0 = x, 0 - x = -x, exactly), and where both operands of
  // min - max are zeros iw is a zero, which is <= 0 either way: the lane is "none"
  // and its overlap unused. So iw and ih, and so every decision, are the same bits. Inf
  // operands (inf - inf = NaN in iw, inf / inf in the overlap) take the same IEEE
  // steps in both variants.
  template <bool kNanFree>
  static bool overlaps_none(const Box& b, float b_area, float nms_threshold, const KeptBoxes& kept, size_t n) {
    const Vec4 x0 = splat4(b.xmin), y0 = splat4(b.ymin), x1 = splat4(b.xmax), y1 = splat4(b.ymax);
    const Vec4 area = splat4(b_area), threshold = splat4(nms_threshold), zero = splat4(0.f);
    // The lanes of group g that overlap b by at most the threshold (not by more: a
    // NaN overlap suppresses, as in Caffe).
    const auto clear = [&](const float* g) {
      const Vec4 kx0 = load4(g), ky0 = load4(g + kVec), kx1 = load4(g + 2 * kVec), ky1 = load4(g + 3 * kVec);
      Vec4 iw, ih;
      Mask4 none;
      if constexpr (kNanFree) {
        iw = min4(kx1, x1) - max4(x0, kx0);
        ih = min4(ky1, y1) - max4(y0, ky0);
        none = either_le_zero(iw, ih);
      } else {
        // std::min(a, b) is (b < a ? b : a), std::max(a, b) (a < b ? b : a): so with NaNs.
        iw = (kx1 < x1 ? kx1 : x1) - (x0 < kx0 ? kx0 : x0);
        ih = (ky1 < y1 ? ky1 : y1) - (y0 < ky0 ? ky0 : y0);
        none = (kx0 > x1) | (kx1 < x0) | (ky0 > y1) | (ky1 < y0) | either_le_zero(iw, ih);
      }
      const Vec4 inter = iw * ih;
      const Vec4 overlap = inter / (area + load4(g + 4 * kVec) - inter);
      const Vec4 v = none ? zero : overlap;
      return v <= threshold;
    };
    const float* const end = kept.group(n / kVec);
    for (const float* g = kept.groups; g != end; g += KeptBoxes::kGroup) {
      if (!all_set(clear(g))) return false;
    }
    const int rest = static_cast<int>(n % kVec);
    if (rest == 0) return true;
    const Mask4 lane = {0, 1, 2, 3};
    return all_set(clear(end) | (lane >= rest));
  }

  // nms() where no early stop can come (every candidate may be kept): one sort,
  // cheaper than popping a heap, then the same walk; survivors compact in place.
  template <bool kNanFree>
  size_t nms_sorted(Key* cand, int n, const Box* boxes, KeptBoxes& kept_boxes) const {
    std::sort(cand, cand + n);
    const float threshold = nms_threshold_;  // a local: the kept boxes' stores may alias a member
    size_t kept = 0;
    for (int m = 0; m < n; ++m) {
      const Box& b = boxes[key_pos(cand[m])];
      const float area = box_area(b);
      if (overlaps_none<kNanFree>(b, area, threshold, kept_boxes, kept)) {
        kept_boxes.set(kept, b, area);
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
  size_t ends_at_ = 0, dets_at_ = 0, kept_at_ = 0, decoded_at_ = 0;  // workspace offsets
};

}  // namespace

std::unique_ptr<Layer> create_detectionoutput_layer() { return std::make_unique<DetectionOutput>(); }

}  // namespace kestrel
