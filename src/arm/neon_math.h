// Vector math shared by the NEON kernels: exp and erf on 4 floats, and loads/stores
// of a partial vector so that no kernel reads or writes past an array's last value.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstring>

namespace kestrel::kernels::arm {

// exp(x), max relative error about 2 ulp (1.5e-7) wherever the result is a normal
// float. x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2, so r is exact to
// a few ulp), exp(r) by the degree-6 polynomial of Cephes' expf, and 2^n applied as
// 2^(n/2) * 2^(n - n/2) so that both factors stay normal floats: large x overflows
// to +inf and very negative x underflows through the denormals to 0 as std::exp
// does. NaN propagates (FMAX/FMIN and the arithmetic keep it).
// The reduction and polynomial shared by exp_ps and the softmax's exp: n = round(x /
// ln2) and exp(r) - 1 for r = x - n ln2.
struct ExpParts {
  float32x4_t n, em1;
};
inline ExpParts exp_parts_ps(float32x4_t x) {
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  // exp(r) - 1 = r + r^2 p(r), kept apart from the 1 so the small terms keep their bits.
  return ExpParts{n, vfmaq_f32(r, vmulq_f32(r, r), p)};
}

inline float32x4_t exp_ps(float32x4_t x) {
  const ExpParts e = exp_parts_ps(vminq_f32(vmaxq_f32(x, vdupq_n_f32(-104.f)), vdupq_n_f32(89.f)));
  const float32x4_t em1 = e.em1;
  const int32x4_t ni = vcvtq_s32_f32(e.n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  return vmulq_f32(vfmaq_f32(s1, em1, s1), s2);
}

// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), odd-extended.
inline float32x4_t erf_ps(float32x4_t x) {
  const float32x4_t ax = vabsq_f32(x);
  const float32x4_t one = vdupq_n_f32(1.f);
  const float32x4_t t = vdivq_f32(one, vfmaq_f32(one, ax, vdupq_n_f32(0.3275911f)));
  float32x4_t p = vdupq_n_f32(1.061405429f);
  p = vfmaq_f32(vdupq_n_f32(-1.453152027f), p, t);
  p = vfmaq_f32(vdupq_n_f32(1.421413741f), p, t);
  p = vfmaq_f32(vdupq_n_f32(-0.284496736f), p, t);
  p = vfmaq_f32(vdupq_n_f32(0.254829592f), p, t);
  p = vmulq_f32(p, t);
  const float32x4_t e = exp_ps(vnegq_f32(vmulq_f32(ax, ax)));
  const float32x4_t y = vfmsq_f32(one, p, e);
  // Copy the sign of x onto y (erf is odd).
  const uint32x4_t sign = vdupq_n_u32(0x80000000u);
  return vbslq_f32(sign, x, y);
}

// The first n (< 4) floats of p in the low lanes, zeros above: no read past p[n-1].
inline float32x4_t load_partial(const float* p, size_t n) {
  float t[4] = {0.f, 0.f, 0.f, 0.f};
  std::memcpy(t, p, n * sizeof(float));
  return vld1q_f32(t);
}

// Writes the low n (< 4) lanes of v to p.
inline void store_partial(float* p, float32x4_t v, size_t n) {
  float t[4];
  vst1q_f32(t, v);
  std::memcpy(p, t, n * sizeof(float));
}

}  // namespace kestrel::kernels::arm
