#include "quantize/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kestrel::quantize {

const char* method_name(Method m) {
  switch (m) {
    case Method::kMinMax:
      return "minmax";
    case Method::kKl:
      return "kl";
    case Method::kPercentile:
      return "percentile";
  }
  return "?";
}

bool parse_method(const std::string& name, Method* m) {
  for (Method c : {Method::kMinMax, Method::kKl, Method::kPercentile}) {
    if (name == method_name(c)) {
      *m = c;
      return true;
    }
  }
  return false;
}

void AbsHistogram::observe_max(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(a)) continue;
    max_abs_ = std::max(max_abs_, a);
  }
}

void AbsHistogram::freeze() { frozen_ = true; }

void AbsHistogram::add(const float* x, size_t n) {
  frozen_ = true;
  // The bin of |x| is floor(|x| / width), computed in double so that max_abs itself
  // lands in the last bin and not one past it.
  const double width = bin_width();
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(a)) {
      ++nan_;
      continue;
    }
    if (std::isinf(a)) {
      ++inf_;
      continue;
    }
    int b = 0;
    if (width > 0.0) b = static_cast<int>(std::min<double>(kBins - 1, std::floor(a / width)));
    bins_[b] += 1.0;
    ++values_;
    zeros_ += a == 0.f ? 1 : 0;
  }
}

namespace {

// KL(P || Q) of two distributions given as unnormalised masses over the same bins. A
// bin P has and Q lacks (the clipped mass falling into a bin that was empty) counts as
// if Q held 1e-9 of its mass: heavily penalised, but finite, so that a histogram with
// gaps still picks a threshold.
double kl(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0.0, sq = 0.0;
  for (double v : p) sp += v;
  for (double v : q) sq += v;
  if (sp <= 0.0 || sq <= 0.0) return std::numeric_limits<double>::infinity();
  constexpr double kFloor = 1e-9;
  double d = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0.0) continue;
    const double pi = p[i] / sp;
    const double qi = std::max(q[i] / sq, kFloor);
    d += pi * std::log(pi / qi);
  }
  return d;
}

}  // namespace

std::vector<double> kl_divergences(const std::vector<double>& bins) {
  const int n = static_cast<int>(bins.size());
  std::vector<double> out;
  if (n < kLevels) return out;
  // suffix[i]: the mass of bins i and beyond (what clipping after bin i - 1 moves into it).
  std::vector<double> suffix(n + 1, 0.0);
  for (int i = n - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + bins[i];
  std::vector<double> p, q;
  for (int kept = kLevels; kept <= n; ++kept) {
    p.assign(bins.begin(), bins.begin() + kept);
    p[kept - 1] += suffix[kept];
    // Q: the kept bins (without the clipped mass) merged into kLevels groups of nearly
    // equal width (group g holds bins [g * kept / kLevels, (g + 1) * kept / kLevels)),
    // each group's mass spread evenly over its bins that were not empty.
    q.assign(kept, 0.0);
    for (int g = 0; g < kLevels; ++g) {
      const int lo = static_cast<int>(static_cast<int64_t>(g) * kept / kLevels);
      const int hi = static_cast<int>(static_cast<int64_t>(g + 1) * kept / kLevels);
      double mass = 0.0;
      int nonzero = 0;
      for (int j = lo; j < hi; ++j) {
        mass += bins[j];
        nonzero += bins[j] > 0.0 ? 1 : 0;
      }
      if (nonzero == 0) continue;
      for (int j = lo; j < hi; ++j) q[j] = bins[j] > 0.0 ? mass / nonzero : 0.0;
    }
    out.push_back(kl(p, q));
  }
  return out;
}

float threshold(const AbsHistogram& h, Method m, double percentile) {
  const std::vector<double>& bins = h.bins();
  double total = 0.0;
  for (double v : bins) total += v;
  // Nothing above zero: every value fell in bin 0 of a zero-width histogram.
  if (total <= 0.0 || !(h.max_abs() > 0.f) || !std::isfinite(h.max_abs())) return 0.f;
  const double width = h.bin_width();
  switch (m) {
    case Method::kMinMax:
      return h.max_abs();
    case Method::kPercentile: {
      const double want = total * std::min(100.0, std::max(0.0, percentile)) / 100.0;
      double cum = 0.0;
      for (int i = 0; i < AbsHistogram::kBins; ++i) {
        cum += bins[i];
        if (cum >= want) return static_cast<float>(std::min<double>(h.max_abs(), (i + 1) * width));
      }
      return h.max_abs();
    }
    case Method::kKl: {
      // Without the exact zeros: any scale represents them exactly, so they say nothing
      // about where to clip, yet as most of a ReLU's output they made the divergence
      // favour thresholds near max / 8 (Fashion-MNIST lost 71 points: bench/precision/
      // RESULTS_INT8.md).
      std::vector<double> nonzero = bins;
      nonzero[0] -= static_cast<double>(h.zero_count());
      const std::vector<double> d = kl_divergences(nonzero);
      int best = 0;
      for (int i = 1; i < static_cast<int>(d.size()); ++i) {
        if (d[i] < d[best]) best = i;
      }
      return static_cast<float>(std::min<double>(h.max_abs(), (kLevels + best) * width));
    }
  }
  return 0.f;
}

}  // namespace kestrel::quantize
