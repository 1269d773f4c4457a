// fp16 arithmetic, exactly as an IEEE binary16 unit computes it, in software: the
// reference twin of the fp16 kernels (Option::precision kFp16 on the reference kernel
// set, and the oracle the fast fp16 kernels are tested against). Values travel as
// floats that hold halves exactly.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"

namespace kestrel::kernels::f16 {

// `v` rounded to the nearest half (ties to even), as a float.
inline float round(float v) { return half_to_float(float_to_half(v)); }

// The half nearest to s + e (ties to even), where s + e is exact and |e| is at most half
// an ulp of s (e is TwoSum's error term): rounding s alone could land on a midpoint
// between two halves that the exact value is not on. Works on the double's bits: the
// mantissa bits below a half's precision decide, e breaks an exact tie.
inline float round_sum(double s, double e) {
  if (!std::isfinite(s) || s == 0) return round(static_cast<float>(s));
  uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  const int exp = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // s is normal: |s| >= 2^-48
  // Bits below the half's last mantissa bit: 42 for normal halves (52 - 10), more for
  // subnormal ones (quantum 2^-24).
  const int drop = 42 + std::max(0, -14 - exp);
  if (drop > 53) return s > 0 ? 0.f : -0.f;  // below half the smallest subnormal
  const uint64_t m = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  const uint64_t low = m & ((uint64_t{1} << drop) - 1), tie = uint64_t{1} << (drop - 1);
  uint64_t q = m >> drop;
  const double toward = s > 0 ? e : -e;  // the exact value's excess beyond |s|
  if (low > tie || (low == tie && (toward > 0 || (toward == 0 && (q & 1))))) ++q;
  // q units of 2^(exp - 52 + drop); q may have carried into the next power of two.
  const double r = std::ldexp(static_cast<double>(q), exp - 52 + drop);
  if (r > 65504.0) return s > 0 ? HUGE_VALF : -HUGE_VALF;
  return static_cast<float>(s > 0 ? r : -r);
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
