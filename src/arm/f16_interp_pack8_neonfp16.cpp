// Bilinear and nearest resize in fp16 arithmetic (ARMv8.2 FEAT_FP16) on 8-channel
// blocked maps of halves, in and out (ncnn's pack8 fp16 maps): MoveNet's FPN upsampling.
// A pixel of a block is one vector of its 8 channels, so a tap is one pixel vector and
// a blend is FSUB + FMLA .8h by the broadcast weight: no transposes, no lane shuffles.
//
// Bilinear computes interp_reference_f16's three operations per output pixel in its
// order (interp_kernels.cpp): top = r0[lo] + wx * (r0[hi] - r0[lo]), bottom likewise on
// r1, out = top + wy * (bottom - top), each FMLA accumulating into the value the
// difference is taken from. The weights are the taps' rounded to halves (FCVT, to
// nearest even as float_to_half). FSUB and FMLA propagate NaNs as the twin says (the
// addend's first), so NaN results match it bit for bit too.
//
// A work item is one output row of one block: the thread count only splits the items.
#include <arm_neon.h>

#include <cstddef>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "kernels/interp_kernels.h"

namespace kestrel::kernels::arm {
namespace {

using half = __fp16;

constexpr int kLanes = 8;

bool supports(const InterpGeometry& g) {
  return g.f16 && g.in_pack == kLanes && g.out_pack == kLanes && g.channels >= kLanes && g.channels % kLanes == 0 &&
         g.in_h >= 1 && g.in_w >= 1 && g.out_h >= 1 && g.out_w >= 1 && g.rows != nullptr && g.columns != nullptr;
}

// r0 + w * (r1 - r0) of two pixel vectors: FSUB, then FMLA into r0 (the twin's order,
// r0 the addend: its NaN first).
inline float16x8_t blend(float16x8_t r0, float16x8_t r1, half w) { return vfmaq_n_f16(r0, vsubq_f16(r1, r0), w); }

// The output pixel of column tap t, from rows r0 and r1.
inline float16x8_t pixel(const InterpTap& t, const half* r0, const half* r1, half wy) {
  const ptrdiff_t lo = static_cast<ptrdiff_t>(t.lo) * kLanes, hi = static_cast<ptrdiff_t>(t.hi) * kLanes;
  const half wx = static_cast<half>(t.weight_hi);
  const float16x8_t top = blend(vld1q_f16(r0 + lo), vld1q_f16(r0 + hi), wx);
  const float16x8_t bottom = blend(vld1q_f16(r1 + lo), vld1q_f16(r1 + hi), wx);
  return blend(top, bottom, wy);
}

// Output row `y` of one block: out_w pixel vectors from rows r0 and r1 of the input.
// Two pixels a step: their chains of four dependent operations interleave (an in-order
// core such as the A55 would otherwise wait out each one's latencies).
void bilinear_row(const InterpGeometry& g, const half* r0, const half* r1, half wy, half* out) {
  const InterpTap* tx = g.columns;
  // A local bound: the stores might otherwise alias g and reload it every pixel.
  const int n = g.out_w;
  int x = 0;
  for (; x + 2 <= n; x += 2) {
    const float16x8_t a = pixel(tx[x], r0, r1, wy), b = pixel(tx[x + 1], r0, r1, wy);
    vst1q_f16(out + static_cast<ptrdiff_t>(x) * kLanes, a);
    vst1q_f16(out + static_cast<ptrdiff_t>(x + 1) * kLanes, b);
  }
  if (x < n) vst1q_f16(out + static_cast<ptrdiff_t>(x) * kLanes, pixel(tx[x], r0, r1, wy));
}

void nearest_row(const InterpGeometry& g, const half* r0, half* out) {
  const InterpTap* tx = g.columns;
  const int n = g.out_w;
  for (int x = 0; x < n; ++x) {
    vst1q_f16(out + static_cast<ptrdiff_t>(x) * kLanes, vld1q_f16(r0 + static_cast<ptrdiff_t>(tx[x].lo) * kLanes));
  }
}

void run(const InterpGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const half* src = reinterpret_cast<const half*>(in);
  half* dst = reinterpret_cast<half*>(out);
  const size_t in_row = static_cast<size_t>(g.in_w) * kLanes, out_row = static_cast<size_t>(g.out_w) * kLanes;
  const long long items = static_cast<long long>(g.channels / kLanes) * g.out_h;
  parallel_for(ctx.num_threads, items, [&](long long it) {
    const size_t q = static_cast<size_t>(it / g.out_h);
    const int y = static_cast<int>(it % g.out_h);
    const InterpTap& ty = g.rows[y];
    // A Mat's cstep counts 4-byte units: two halves each.
    const half* block = src + 2 * q * in_cstep;
    half* row = dst + 2 * q * out_cstep + y * out_row;
    if (g.bilinear) {
      bilinear_row(g, block + ty.lo * in_row, block + ty.hi * in_row, static_cast<half>(ty.weight_hi), row);
    } else {
      nearest_row(g, block + ty.lo * in_row, row);
    }
  });
}

}  // namespace

const InterpKernel kF16InterpPack8_Neon = {
    "f16_interp_pack8_neonfp16", Isa::kNeon, supports, run, kLanes, true,
};

}  // namespace kestrel::kernels::arm
