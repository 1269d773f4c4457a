// Helpers of the fp16 kernel suites (test_kernels_f16*.cpp): pack8 maps of halves built
// from planar fp32 values and read back, random values that are halves, pack8 geometries
// of a window, the fp16 kernels of this build, and the comparison the kernels are held to.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/conv_kernels.h"

namespace kt {

// 4-byte units between pack8 blocks of a w x h map of halves, 64-byte aligned.
inline size_t block_units(int w, int h) { return (static_cast<size_t>(w) * h * 8 / 2 + 15) / 16 * 16; }

// Planar halves (bits, NaN payloads kept) -> pack8 halves, blocks `cstep` 4-byte units
// apart; the channel padding and 64 halves past the last block hold `fill`.
inline std::vector<uint16_t> to_pack8_bits(const std::vector<uint16_t>& planar, int c, int plane, size_t cstep,
                                           uint16_t fill = 0) {
  std::vector<uint16_t> out(cstep * 2 * (c / 8) + 64, fill);
  for (int ch = 0; ch < c; ++ch) {
    for (int p = 0; p < plane; ++p) {
      out[(ch / 8) * cstep * 2 + static_cast<size_t>(p) * 8 + ch % 8] = planar[static_cast<size_t>(ch) * plane + p];
    }
  }
  return out;
}

// Planar fp32 values (halves) -> pack8 halves, as to_pack8_bits.
inline std::vector<uint16_t> to_pack8(const std::vector<float>& planar, int c, int plane, size_t cstep,
                                      uint16_t fill = 0) {
  std::vector<uint16_t> bits(planar.size());
  for (size_t i = 0; i < planar.size(); ++i) bits[i] = kestrel::float_to_half(planar[i]);
  return to_pack8_bits(bits, c, plane, cstep, fill);
}

inline std::vector<float> from_pack8(const std::vector<uint16_t>& packed, int c, int plane, size_t cstep) {
  std::vector<float> out(static_cast<size_t>(c) * plane);
  for (int ch = 0; ch < c; ++ch) {
    for (int p = 0; p < plane; ++p) {
      out[static_cast<size_t>(ch) * plane + p] =
          kestrel::half_to_float(packed[(ch / 8) * cstep * 2 + static_cast<size_t>(p) * 8 + ch % 8]);
    }
  }
  return out;
}

// 4-byte units between planar channels of w x h halves, 64-byte aligned (a Mat's cstep).
inline size_t plane_units(int w, int h) { return ((static_cast<size_t>(w) * h + 1) / 2 + 15) / 16 * 16; }

// Planar fp32 values (halves) -> planar halves, channels `cstep` 4-byte units apart; the
// channel padding and 64 halves past the last channel hold `fill`.
inline std::vector<uint16_t> to_planar_halves(const std::vector<float>& planar, int c, int plane, size_t cstep,
                                              uint16_t fill = 0) {
  std::vector<uint16_t> out(cstep * 2 * c + 64, fill);
  for (int ch = 0; ch < c; ++ch) {
    for (int p = 0; p < plane; ++p) {
      out[ch * cstep * 2 + p] = kestrel::float_to_half(planar[static_cast<size_t>(ch) * plane + p]);
    }
  }
  return out;
}

// Planar halves (channels `cstep` 4-byte units apart) -> planar fp32 values.
inline std::vector<float> from_planar_halves(const std::vector<uint16_t>& halves, int c, int plane, size_t cstep) {
  std::vector<float> out(static_cast<size_t>(c) * plane);
  for (int ch = 0; ch < c; ++ch) {
    for (int p = 0; p < plane; ++p) {
      out[static_cast<size_t>(ch) * plane + p] = kestrel::half_to_float(halves[ch * cstep * 2 + p]);
    }
  }
  return out;
}

// Halves of a planar map's buffer outside its c channels of `plane` values (the channel
// padding, the tail) that no longer hold `fill`.
inline size_t planar_padding_changed(const std::vector<uint16_t>& halves, int c, int plane, size_t cstep,
                                     uint16_t fill) {
  size_t changed = 0;
  for (size_t i = 0; i < halves.size(); ++i) {
    const size_t ch = i / (cstep * 2), p = i % (cstep * 2);
    const bool value = ch < static_cast<size_t>(c) && p < static_cast<size_t>(plane);
    changed += !value && halves[i] != fill;
  }
  return changed;
}

// A window: extent, dilation and padding.
struct Window {
  int kh, kw, dh, dw;
  int top, left, bottom, right;  // padding
};

// The pack8 fp16 geometry of `k` at stride s over in_c x h x w, or one with out_h 0
// where the window does not fit the padded map.
inline kestrel::kernels::ConvGeometry conv(int in_c, int out_c, int h, int w, const Window& k, int s) {
  kestrel::kernels::ConvGeometry g;
  g.in_c = in_c;
  g.out_c = out_c;
  g.in_h = h;
  g.in_w = w;
  g.kh = k.kh;
  g.kw = k.kw;
  g.dh = k.dh;
  g.dw = k.dw;
  g.sh = g.sw = s;
  g.pad_top = k.top;
  g.pad_left = k.left;
  const int eh = h + k.top + k.bottom - ((k.kh - 1) * k.dh + 1), ew = w + k.left + k.right - ((k.kw - 1) * k.dw + 1);
  g.out_h = eh < 0 ? 0 : eh / s + 1;
  g.out_w = ew < 0 ? 0 : ew / s + 1;
  g.in_pack = g.out_pack = 8;
  g.f16 = true;
  return g;
}

// A window reaching past the map: a kernel that multiplies zeros where the reference
// skips the tap may change the sign of a zero result (first_difference_but_zero_sign).
inline bool overhangs(const kestrel::kernels::ConvGeometry& g) {
  const int end_h = (g.out_h - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.pad_top;
  const int end_w = (g.out_w - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.pad_left;
  return g.pad_top > 0 || g.pad_left > 0 || end_h > g.in_h || end_w > g.in_w;
}

inline std::vector<float> random_halves(size_t n, float range, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = kestrel::half_to_float(kestrel::float_to_half(d(rng)));
  return v;
}

// What fills a kernel test's input (bits of halves).
enum class Fill { kRandom, kMixed, kZeros, kNan };
constexpr Fill kFills[] = {Fill::kRandom, Fill::kMixed, Fill::kZeros, Fill::kNan};

// A NaN of random sign and payload: quiet, or signalling (a payload bit kept set, or it
// would be an infinity).
inline uint16_t random_nan(std::mt19937& rng, bool quiet) {
  const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
  return static_cast<uint16_t>(sign | 0x7c00 | (quiet ? 0x200 | (rng() & 0x1ff) : 1 + (rng() & 0x1fe)));
}

// n halves as `fill` says: random values within +-4; a mix of those with NaNs, zeros of
// either sign, values beyond 30000, infinities and +-65504; zeros of either sign; NaNs.
// Signalling NaNs only where `signalling` (maps of halves hold quiet ones: a kernel
// that only reads maps need not keep a signalling NaN's bits).
inline std::vector<uint16_t> random_half_fill(Fill fill, size_t n, std::mt19937& rng, bool signalling) {
  const std::vector<float> values = random_halves(n, 4.f, rng);
  std::vector<uint16_t> h(n);
  std::uniform_int_distribution<int> pick(0, 99);
  std::uniform_real_distribution<float> large(30000.f, 65504.f);
  for (size_t i = 0; i < n; ++i) {
    uint16_t v = kestrel::float_to_half(values[i]);
    const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
    if (fill == Fill::kZeros) {
      v = sign;
    } else if (fill == Fill::kNan) {
      v = random_nan(rng, !signalling || pick(rng) < 80);
    } else if (fill == Fill::kMixed) {
      const int r = pick(rng);
      if (r < 7) {
        v = random_nan(rng, !signalling || r < 5);
      } else if (r < 25) {
        v = sign;
      } else if (r < 50) {
        v = static_cast<uint16_t>(sign | kestrel::float_to_half(large(rng)));
      } else if (r < 53) {
        v = static_cast<uint16_t>(sign | 0x7c00);
      } else if (r < 58) {
        v = static_cast<uint16_t>(sign | 0x7bff);  // +-65504
      }
    }
    h[i] = v;
  }
  return h;
}

inline std::vector<const kestrel::kernels::ConvKernel*> f16_kernels() {
  std::vector<const kestrel::kernels::ConvKernel*> ks;
  for (const kestrel::kernels::ConvKernel* k : kestrel::kernels::conv_kernels()) {
    if (k->f16) ks.push_back(k);
  }
  return ks;
}

// Index of the first value whose bits differ, or -1.
inline long first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) return static_cast<long>(i);
  }
  return -1;
}

// Index of the first value whose bits differ, a +0 and a -0 counting as equal (a kernel
// that multiplies zero padding where the reference skips the tap may change the sign of
// a zero sum, nothing else), or -1.
inline long first_difference_but_zero_sign(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    const bool zeros = got[i] == 0.f && want[i] == 0.f;
    if (!zeros && std::memcmp(&got[i], &want[i], sizeof(float)) != 0) return static_cast<long>(i);
  }
  return -1;
}

}  // namespace kt
