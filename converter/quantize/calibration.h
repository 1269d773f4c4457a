// Activation calibration for int8 (issue 27): a per-tensor clipping threshold T for each
// blob from the values it takes over calibration images; the blob's int8 scale is then
// 127 / T (symmetric, as ncnn's and TensorRT's activations).
//
//   AbsHistogram h;
//   for (image : images) h.observe_max(values, n);  // pass 1: the range
//   h.freeze();
//   for (image : images) h.add(values, n);          // pass 2: the distribution
//   float t = threshold(h, Method::kKl);            // 0 when every value was 0
//
// Methods (kestrel-quantize --method):
// - kMinMax: the largest |x| seen. Nothing is clipped; one outlier spreads the levels.
// - kPercentile: the |x| below which `percentile` percent of the values lie.
// - kKl: the threshold whose clipped distribution loses the least information when
//   quantized to 128 levels, as Kullback-Leibler divergence (NVIDIA's entropy
//   calibration, "8-bit Inference with TensorRT", GTC 2017; ncnn2table's kl).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::quantize {

enum class Method { kMinMax, kKl, kPercentile };

// "minmax", "kl", "percentile"; parse_method returns false for anything else.
const char* method_name(Method m);
bool parse_method(const std::string& name, Method* m);

// |x| in kBins equal bins from 0 to the largest |x| of the first pass.
class AbsHistogram {
 public:
  static constexpr int kBins = 2048;

  // Pass 1: widens the range to the values' largest |x|. NaN is ignored; an infinity
  // makes the range infinite (then no threshold exists).
  void observe_max(const float* x, size_t n);
  // Ends pass 1: the bins now span [0, max_abs()].
  void freeze();
  // Pass 2: counts each |x| in its bin; values beyond the range (a pass-2 image larger
  // than any of pass 1) go to the last bin. NaN and infinities are skipped.
  void add(const float* x, size_t n);

  float max_abs() const { return max_abs_; }
  bool frozen() const { return frozen_; }
  double bin_width() const { return static_cast<double>(max_abs_) / kBins; }
  const std::vector<double>& bins() const { return bins_; }
  uint64_t values() const { return values_; }
  uint64_t nan_count() const { return nan_; }
  uint64_t inf_count() const { return inf_; }
  // Values exactly 0 (in bin 0): a ReLU's output is mostly these.
  uint64_t zero_count() const { return zeros_; }

 private:
  float max_abs_ = 0.f;
  bool frozen_ = false;
  std::vector<double> bins_ = std::vector<double>(kBins, 0.0);
  uint64_t values_ = 0, nan_ = 0, inf_ = 0, zeros_ = 0;
};

// The clipping threshold of `h` (frozen, pass 2 done) by method m; percentile in
// (0, 100] for kPercentile. 0 when the histogram holds no value above zero (a blob that
// is always 0: no scale exists for it). A threshold is a bin's upper edge, never above
// max_abs().
float threshold(const AbsHistogram& h, Method m, double percentile = 99.99);

// The KL divergence of each candidate threshold, for reports and tests: entry i is that
// of clipping after bin kLevels + i (the first candidate keeps kLevels bins).
constexpr int kLevels = 128;
std::vector<double> kl_divergences(const std::vector<double>& bins);

}  // namespace kestrel::quantize
