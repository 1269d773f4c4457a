// fp32 <-> fp16 arrays with F16C (vcvtps2ph / vcvtph2ps), written once over the vector
// width: 8 lanes (AVX2 TUs) or 16 (AVX-512). Tails go through the scalar conversions of
// the same instructions.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace kestrel::kernels::x86::f16c {

inline uint16_t to_half1(float v) { return static_cast<uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT)); }
inline float to_float1(uint16_t h) { return _cvtsh_ss(h); }

template <class Lanes>
void to_half(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + Lanes::kWidth <= n; i += Lanes::kWidth) Lanes::store_half(dst + i, Lanes::load(src + i));
  for (; i < n; ++i) dst[i] = to_half1(src[i]);
}

template <class Lanes>
void to_float(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + Lanes::kWidth <= n; i += Lanes::kWidth) Lanes::store(dst + i, Lanes::load_half(src + i));
  for (; i < n; ++i) dst[i] = to_float1(src[i]);
}

template <class Lanes>
void round(const float* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + Lanes::kWidth <= n; i += Lanes::kWidth) Lanes::store(dst + i, Lanes::round_trip(Lanes::load(src + i)));
  for (; i < n; ++i) dst[i] = to_float1(to_half1(src[i]));
}

}  // namespace kestrel::kernels::x86::f16c
