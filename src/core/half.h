// IEEE 754 binary16 <-> binary32, in software (the loader widens F16 weights once, the
// converters check that a value survives the round trip before storing it as F16).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kestrel {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // 112 = 127 - 15
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalize into a float's exponent range.
    uint32_t e = 113;
    while (!(mant & 0x400u)) mant <<= 1, --e;
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even; overflow becomes infinity, NaN stays NaN.
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds above 65504
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): shift the implicit-1 mantissa into place.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 113 - e + 13
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((abs - 0x38000000u) >> 13);  // rebias 127 -> 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

// True when f is exactly a binary16 value (NaN counts: its payload is not kept).
inline bool is_exact_half(float f) {
  const float back = half_to_float(float_to_half(f));
  return back == f || (back != back && f != f);
}

// The 4-byte units that n halves take in a packing of floats, padded to a 64-byte line
// so that what follows them (a kernel's bias floats) starts on one.
inline size_t half_units(size_t n) { return (n * sizeof(uint16_t) + 63) / 64 * (64 / sizeof(float)); }

}  // namespace kestrel
