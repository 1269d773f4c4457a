// Interp's taps, registry and reference loops.
//
// The fp16 twin (interp_reference_f16) computes in binary16 as the NEON kernel does,
// one rounding per operation, the weights rounded to halves (wx of the column, wy of the
// row); ncnn's fp16 interp computes in fp16 too, with two weights per axis (other
// roundings). Per output pixel, in this order:
//   top    = fma(wx, sub(r0[hi_x], r0[lo_x]), r0[lo_x])   (FSUB, then FMLA into r0[lo_x])
//   bottom = fma(wx, sub(r1[hi_x], r1[lo_x]), r1[lo_x])
//   out    = fma(wy, sub(bottom, top), top)
// where r0 = input row rows[y].lo, r1 = rows[y].hi, sub(a, b) = a - b and fma(w, d, c) =
// w * d + c. Every output computes all three, whatever its weights (a weight of 0 still
// multiplies: inf and NaN reach it as they reach the NEON kernel). A difference may
// overflow to inf where the fp32 interp's does not (60000 - -60000): that is binary16's
// answer, and the kernel's.
//
// NaN results follow an fp16 unit with default-NaN mode off (Linux's FPCR.DN = 0; ARM's
// FPProcessNaNs): the first signalling NaN operand, else the first quiet one (sub: a,
// then b; fma: the addend c, then d; the weight is never NaN), quieted, payload kept;
// an invalid operation (inf - inf, 0 * inf, inf + -inf) gives the default NaN +0x7e00,
// as does a quiet NaN addend with a 0 * inf product. With quiet NaNs (every map's) a
// NaN output is top's NaN if top is one, else bottom's; top's is r0[lo_x]'s, else
// r0[hi_x]'s, else the default NaN (bottom's likewise).
// Nearest copies the tap, NaN payloads included.
#include "kernels/interp_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "core/half.h"
#include "kernels/f16_arith.h"

namespace kestrel::kernels {
namespace {

// A half's quiet bit, in the float that holds it (half_to_float keeps NaN payloads).
constexpr uint32_t kQuietBit = 0x00400000u;

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

float from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

bool is_quiet_nan(float v) { return std::isnan(v) && (bits_of(v) & kQuietBit) != 0; }

float default_nan() { return half_to_float(0x7e00); }

// The NaN an fp16 unit returns when an operand is one, or false.
bool nan_operand(std::initializer_list<float> operands, float* r) {
  for (float v : operands) {
    if (std::isnan(v) && !is_quiet_nan(v)) {
      *r = from_bits(bits_of(v) | kQuietBit);
      return true;
    }
  }
  for (float v : operands) {
    if (std::isnan(v)) {
      *r = v;
      return true;
    }
  }
  return false;
}

// a - b on halves, rounded once (FSUB .8h).
float sub16(float a, float b) {
  float r;
  if (nan_operand({a, b}, &r)) return r;
  if (std::isinf(a) && std::isinf(b) && std::signbit(a) == std::signbit(b)) return default_nan();
  // -b is exact: a + (-b) with one rounding, the zero signs of a subtraction included.
  return f16::fma(-1.f, b, a);
}

// w * d + c on halves, rounded once (FMLA .8h into c).
float fma16(float w, float d, float c) {
  const bool zero_times_inf = (w == 0.f && std::isinf(d)) || (std::isinf(w) && d == 0.f);
  float r;
  if (nan_operand({c, d, w}, &r)) return zero_times_inf && is_quiet_nan(c) ? default_nan() : r;
  if (zero_times_inf) return default_nan();
  const bool product_inf = std::isinf(w) || std::isinf(d);
  if (product_inf && std::isinf(c) && (std::signbit(w) != std::signbit(d)) != std::signbit(c)) return default_nan();
  return f16::fma(w, d, c);
}

}  // namespace

InterpTap interp_tap(fb::InterpMode mode, bool align_corners, fb::InterpCoords coords, int i, int in, int out) {
  InterpTap t;
  if (mode == fb::InterpMode::Nearest) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    const float at = coords == fb::InterpCoords::HalfPixel ? static_cast<float>(i) + 0.5f : static_cast<float>(i);
    t.lo = t.hi = std::min(static_cast<int>(std::floor(at * scale)), in - 1);
    return t;
  }
  float src = 0.f;
  if (align_corners) {
    const float scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
    src = scale * static_cast<float>(i);
  } else if (coords == fb::InterpCoords::Asymmetric) {
    src = static_cast<float>(in) / static_cast<float>(out) * static_cast<float>(i);
  } else {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    src = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.f);
  }
  t.lo = std::min(static_cast<int>(src), in - 1);
  t.hi = std::min(t.lo + 1, in - 1);
  t.weight_hi = t.hi > t.lo ? src - static_cast<float>(t.lo) : 0.f;
  return t;
}

const std::vector<const InterpKernel*>& interp_kernels() {
  static const std::vector<const InterpKernel*> all = detail::arch_interp_kernels();
  return all;
}

const InterpKernel* select_interp_kernel(const InterpGeometry& g, Isa isa) {
  const int lanes = g.planar() ? 0 : std::max(g.in_pack, g.out_pack);
  for (const InterpKernel* k : interp_kernels()) {
    if (lanes != 0 && k->blocked_lanes != lanes) continue;
    if (k->f16 != g.f16 || (k->f16 && !active_has(Feature::kFp16Arith))) continue;
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

void interp_reference(const InterpGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                      int num_threads) {
#pragma omp parallel for num_threads(num_threads)
  for (int q = 0; q < g.channels; ++q) {
    const float* src = in + q * in_cstep;
    float* dst = out + q * out_cstep;
    for (int y = 0; y < g.out_h; ++y) {
      const float* r0 = src + static_cast<size_t>(g.rows[y].lo) * g.in_w;
      const float* r1 = src + static_cast<size_t>(g.rows[y].hi) * g.in_w;
      const float wy = g.rows[y].weight_hi;
      float* d = dst + static_cast<size_t>(y) * g.out_w;
      for (int x = 0; x < g.out_w; ++x) {
        const InterpTap& t = g.columns[x];
        const float top = r0[t.lo] + t.weight_hi * (r0[t.hi] - r0[t.lo]);
        const float bottom = r1[t.lo] + t.weight_hi * (r1[t.hi] - r1[t.lo]);
        d[x] = top + wy * (bottom - top);
      }
    }
  }
}

void interp_reference_f16(const InterpGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                          int num_threads) {
#pragma omp parallel for num_threads(num_threads)
  for (int q = 0; q < g.channels; ++q) {
    const float* src = in + q * in_cstep;
    float* dst = out + q * out_cstep;
    for (int y = 0; y < g.out_h; ++y) {
      const float* r0 = src + static_cast<size_t>(g.rows[y].lo) * g.in_w;
      const float* r1 = src + static_cast<size_t>(g.rows[y].hi) * g.in_w;
      const float wy = f16::round(g.rows[y].weight_hi);
      float* d = dst + static_cast<size_t>(y) * g.out_w;
      for (int x = 0; x < g.out_w; ++x) {
        const InterpTap& t = g.columns[x];
        if (!g.bilinear) {
          d[x] = r0[t.lo];
          continue;
        }
        const float wx = f16::round(t.weight_hi);
        const float top = fma16(wx, sub16(r0[t.hi], r0[t.lo]), r0[t.lo]);
        const float bottom = fma16(wx, sub16(r1[t.hi], r1[t.lo]), r1[t.lo]);
        d[x] = fma16(wy, sub16(bottom, top), top);
      }
    }
  }
}

}  // namespace kestrel::kernels
