// fp16 arithmetic, exactly as an IEEE binary16 unit computes it, in software: the
// reference twin of the fp16 kernels (Option::precision kFp16 on the reference kernel
// set, and the oracle the fast fp16 kernels are tested against). Values travel as
// floats that hold halves exactly.
#pragma once
#include <algorithm>
#include <cmath>

#include "core/half.h"

namespace kestrel::kernels::f16 {

// `v` rounded to the nearest half (ties to even), as a float.
inline float round(float v) { return half_to_float(float_to_half(v)); }

// The half nearest to s + e (ties to even), where s + e is exact and |e| is at most half
// an ulp of s (e is TwoSum's error term): rounding s alone could land on a midpoint
// between two halves that the exact value is not on.
inline float round_sum(double s, double e) {
  if (!std::isfinite(s)) return round(static_cast<float>(s));
  const double mag = std::fabs(s);
  if (mag == 0) return static_cast<float>(s);
  int exp;
  std::frexp(mag, &exp);  // mag in [2^(exp-1), 2^exp)
  // A half's quantum: 2^(exp - 1 - 10) for normal halves, 2^-24 for subnormal ones.
  const int qexp = std::max(exp - 11, -24);
  const double t = std::ldexp(mag, -qexp);  // exact: a power-of-two scale, below 2^11
  const double whole = std::floor(t), frac = t - whole;
  const double toward = s > 0 ? e : -e;  // the exact value's excess beyond |s|
  bool up = frac > 0.5;
  if (frac == 0.5) up = toward > 0 || (toward == 0 && std::fmod(whole, 2.0) != 0);
  const double r = std::ldexp(whole + (up ? 1 : 0), qexp);
  // Above 65504 + half its ulp rounds to infinity, which float_to_half gives for r.
  return round(static_cast<float>(s > 0 ? r : -r));
}

// a * b + c on halves with one rounding (a fused multiply-add, FMLA .8h). The product
// of two halves is exact in a double; TwoSum gives the addition's exact error.
inline float fma(float a, float b, float c) {
  const double p = static_cast<double>(a) * b;
  const double s = p + c;
  if (!std::isfinite(s)) return round(static_cast<float>(s));
  const double bp = s - p;
  const double e = (p - (s - bp)) + (static_cast<double>(c) - bp);
  return round_sum(s, e);
}

}  // namespace kestrel::kernels::f16
