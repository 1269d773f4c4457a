// Max and average pooling in fp16 storage (ARMv8.2 FEAT_FP16) on 8-channel blocked maps
// of halves, in and out (ncnn's pack8 fp16 maps): global (MobileNet's pool6) and
// windowed (any window, stride and padding, Caffe's ceil-mode windows, count_include_pad
// both ways). A pixel of a block is one vector of its 8 channels, so a tap is one pixel
// vector: no transposes, no lane shuffles.
//
// The fp16 reference of pooling is pool_reference on the widened halves, rounded once to
// a half (the reference kernel set rounds an fp16 layer's output so). That is why the
// averages accumulate in fp32 rather than in fp16: an fp16 sum would round at every tap
// and overflow past 65504 where the mean does not. Each pixel is widened (FCVTL,
// FCVTL2), summed in fp32 in pool_reference's order (from +0, row by row, left to right,
// skipping the padding), divided in fp32 by the same count and rounded once (FCVTN, to
// nearest even as float_to_half): the same bits. Maxima need no arithmetic: they stay
// halves, which compare as their widened values do.
//
// Max replays pool_reference's m = (isnan(x) || x > m) ? x : m bit for bit: the window's
// first largest value (a -0 before a +0 stays -0), or its last NaN. Per tap,
// m = x > m ? x : m (FCMGT, BIT) passes over NaN, and n = FMAX(x, n), which returns x
// when x is NaN and a NaN n otherwise, ends on the last NaN; the result is n where n is
// NaN. Any NaN result is written as float_to_half writes it: its sign | 0x7e00 (FCVTN
// would keep payload bits). Maps of halves hold quiet NaNs only (every writer's
// arithmetic and FCVTN quiet them): a signalling one would be quieted here before the
// sum, where pool_reference's fp32 add lets it take over an earlier NaN's sign.
//
// Windowed: a work item is one output row of one block. Outputs whose windows lie inside
// the map, for widths 2 and 3 and strides 1 and 2, go in groups of 8 that load each
// pixel of a window row once for all their windows; the others (clipped by the padding,
// or other windows) take their taps one by one. Either way every output sees its taps in
// the reference's order, so neither groups nor thread counts change a bit.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "kernels/pool_kernels.h"

#define KESTREL_POOLH8_INLINE __attribute__((always_inline)) inline

namespace kestrel::kernels::arm {
namespace {

using half = __fp16;

constexpr int kLanes = 8;

// v where n is a number; else float_to_half's NaN of n's sign. kQuiet: a NaN n has its
// quiet bit set already (FCVTN's results), so clearing the payload is enough.
template <bool kQuiet>
KESTREL_POOLH8_INLINE float16x8_t nan_as_reference(float16x8_t n, float16x8_t v) {
  const uint16x8_t number = vceqq_f16(n, n);
  uint16x8_t bits = vreinterpretq_u16_f16(n);
  if (!kQuiet) bits = vorrq_u16(bits, vdupq_n_u16(0x7e00));
  return vbslq_f16(number, v, vreinterpretq_f16_u16(vandq_u16(bits, vdupq_n_u16(0xfe00))));
}

// The two reductions, as operations on one pixel vector (a Tap) at a time.
struct MaxOp {
  // Inside outputs per group: 8 accumulators. Groups of 8 spilled (GCC loads a whole
  // window row ahead), for 2% fewer loads.
  static constexpr int kGroup = 4;
  struct Acc {
    float16x8_t m, n;  // first largest value; last NaN (else some maximum)
  };
  using Tap = float16x8_t;
  static KESTREL_POOLH8_INLINE Tap widen(float16x8_t x) { return x; }
  static KESTREL_POOLH8_INLINE Acc identity() {
    const float16x8_t low = vdupq_n_f16(-INFINITY);
    return {low, low};
  }
  // -inf then x: x (a NaN x makes m NaN, which only a NaN n ever shows).
  static KESTREL_POOLH8_INLINE Acc first(Tap x) { return {x, x}; }
  static KESTREL_POOLH8_INLINE void add(Acc& a, Tap x) {
    a.m = vbslq_f16(vcgtq_f16(x, a.m), x, a.m);
    a.n = vmaxq_f16(x, a.n);
  }
  static KESTREL_POOLH8_INLINE float16x8_t finish(const Acc& a, float /*count*/) {
    return nan_as_reference<false>(a.n, a.m);
  }
};

struct AvgOp {
  static constexpr int kGroup = 4;  // 8 accumulators, and room for the widened pixels
  struct Acc {
    float32x4_t lo, hi;
  };
  using Tap = Acc;
  static KESTREL_POOLH8_INLINE Tap widen(float16x8_t x) {
    return {vcvt_f32_f16(vget_low_f16(x)), vcvt_high_f32_f16(x)};
  }
  static KESTREL_POOLH8_INLINE Acc identity() { return {vdupq_n_f32(0.f), vdupq_n_f32(0.f)}; }
  // The reference's sum starts at +0: 0 + x differs from x for x = -0.
  static KESTREL_POOLH8_INLINE Acc first(Tap x) {
    Acc a = identity();
    add(a, x);
    return a;
  }
  // pool_reference's sum += x is FADD sum, sum, x: of two NaNs the sum's, the first one,
  // wins. GCC may swap vaddq_f32's operands, so the order is written out.
  static KESTREL_POOLH8_INLINE void add(Acc& a, Tap x) {
    asm("fadd %0.4s, %0.4s, %1.4s" : "+w"(a.lo) : "w"(x.lo));
    asm("fadd %0.4s, %0.4s, %1.4s" : "+w"(a.hi) : "w"(x.hi));
  }
  static KESTREL_POOLH8_INLINE float16x8_t finish(const Acc& a, float count) {
    const float32x4_t c = vdupq_n_f32(count);
    const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vdivq_f32(a.lo, c)), vdivq_f32(a.hi, c));
    return nan_as_reference<true>(h, h);
  }
};

size_t no_workspace(const PoolGeometry&) { return 0; }

bool blocks_of_halves(const PoolGeometry& g) {
  return g.f16 && g.in_pack == kLanes && g.out_pack == kLanes && g.channels >= kLanes && g.channels % kLanes == 0 &&
         g.in_h >= 1 && g.in_w >= 1;
}

// ---- Global ----

bool supports_global(const PoolGeometry& g) { return blocks_of_halves(g) && g.global; }

// One block's n pixels at p, in order; 4 pixel vectors per load.
template <class Op>
KESTREL_POOLH8_INLINE float16x8_t reduce_plane(const half* p, size_t n, float count) {
  typename Op::Acc a = Op::first(Op::widen(vld1q_f16(p)));
  size_t i = 1;
  for (; i + 4 <= n; i += 4) {
    const float16x8x4_t v = vld1q_f16_x4(p + i * kLanes);
    Op::add(a, Op::widen(v.val[0]));
    Op::add(a, Op::widen(v.val[1]));
    Op::add(a, Op::widen(v.val[2]));
    Op::add(a, Op::widen(v.val[3]));
  }
  for (; i < n; ++i) Op::add(a, Op::widen(vld1q_f16(p + i * kLanes)));
  return Op::finish(a, count);
}

template <class Op>
void global_blocks(const PoolGeometry& g, const half* src, size_t in_cstep, half* dst, size_t out_cstep,
                   int threads) {
  const size_t n = static_cast<size_t>(g.in_h) * g.in_w;
  const float count = static_cast<float>(n);
  parallel_for(threads, g.channels / kLanes, [=](int q) {
    vst1q_f16(dst + 2 * q * out_cstep, reduce_plane<Op>(src + 2 * q * in_cstep, n, count));
  });
}

void run_global(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                const KernelContext& ctx) {
  const half* src = reinterpret_cast<const half*>(in);
  half* dst = reinterpret_cast<half*>(out);
  if (g.pool == fb::PoolType::Average) {
    global_blocks<AvgOp>(g, src, in_cstep, dst, out_cstep, ctx.num_threads);
  } else {
    global_blocks<MaxOp>(g, src, in_cstep, dst, out_cstep, ctx.num_threads);
  }
}

// ---- Windowed ----

bool supports_windowed(const PoolGeometry& g) {
  return blocks_of_halves(g) && !g.global && g.kh >= 1 && g.kw >= 1 && g.sh >= 1 && g.sw >= 1 && g.pad_top >= 0 &&
         g.pad_left >= 0 && g.pad_bottom >= 0 && g.pad_right >= 0 && g.out_h >= 1 && g.out_w >= 1;
}

// One window row of G inside outputs, KW wide and SW apart, the first starting at p:
// each pixel loaded once, then given to the outputs whose windows hold it, in order.
template <class Op, int KW, int SW, int G, bool kFirstRow>
KESTREL_POOLH8_INLINE void group_row(const half* p, typename Op::Acc* acc) {
  constexpr int kColumns = (G - 1) * SW + KW;
#pragma GCC unroll 64
  for (int c = 0; c < kColumns; ++c) {
    const typename Op::Tap x = Op::widen(vld1q_f16(p + c * kLanes));
#pragma GCC unroll 16
    for (int o = 0; o < G; ++o) {
      const int t = c - o * SW;
      if (t < 0 || t >= KW) continue;
      if (kFirstRow && t == 0) {
        acc[o] = Op::first(x);
      } else {
        Op::add(acc[o], x);
      }
    }
  }
}

template <class Op, int KW, int SW, int G>
KESTREL_POOLH8_INLINE void group(const half* p, ptrdiff_t row, int rows, float count, half* out) {
  typename Op::Acc acc[G];
  group_row<Op, KW, SW, G, true>(p, acc);
  for (int r = 1; r < rows; ++r) group_row<Op, KW, SW, G, false>(p + r * row, acc);
#pragma GCC unroll 16
  for (int o = 0; o < G; ++o) vst1q_f16(out + o * kLanes, Op::finish(acc[o], count));
}

// An output whose window the padding clips (or any window): from the identity, each
// input cell of wy x wx in order.
template <class Op>
void clipped(const half* block, ptrdiff_t row, const PoolWindow& wy, const PoolWindow& wx, float count, half* out) {
  typename Op::Acc a = Op::identity();
  for (int y = wy.begin; y < wy.end; ++y) {
    const half* p = block + y * row;
    for (int x = wx.begin; x < wx.end; ++x) Op::add(a, Op::widen(vld1q_f16(p + x * kLanes)));
  }
  vst1q_f16(out, Op::finish(a, count));
}

// Output row oy of one block. KW > 0: the window's width, SW its stride, and the
// outputs whose windows lie inside the map go by groups; KW == 0: all one by one.
template <class Op, int KW, int SW>
void pool_row(const PoolGeometry& g, const half* block, half* out, int oy) {
  const PoolWindow wy = pool_window(oy, g.sh, g.kh, g.pad_top, g.pad_bottom, g.in_h);
  const int rows = wy.end - wy.begin;
  const long long cy = g.count_include_pad ? wy.padded : rows;
  const ptrdiff_t row = static_cast<ptrdiff_t>(g.in_w) * kLanes;
  // Inside outputs [lo, hi): 0 <= ox * SW - pad_left and ox * SW - pad_left + KW <= in_w.
  int lo = 0, hi = 0;
  if (KW > 0 && rows > 0) {
    const long long last = static_cast<long long>(g.in_w) + g.pad_left - KW;
    lo = std::min(g.out_w, (g.pad_left + SW - 1) / SW);
    hi = last < 0 ? lo : static_cast<int>(std::clamp<long long>(last / SW + 1, lo, g.out_w));
  }
  const auto one = [&](int ox) {
    const PoolWindow wx = pool_window(ox, g.sw, g.kw, g.pad_left, g.pad_right, g.in_w);
    const long long count =
        g.count_include_pad ? wy.padded * wx.padded : static_cast<long long>(rows) * (wx.end - wx.begin);
    clipped<Op>(block, row, wy, wx, static_cast<float>(count), out + static_cast<ptrdiff_t>(ox) * kLanes);
  };
  for (int ox = 0; ox < lo; ++ox) one(ox);
  if constexpr (KW > 0) {
    const half* top = block + wy.begin * row;
    const auto window = [&](int ox) { return top + static_cast<ptrdiff_t>(ox * SW - g.pad_left) * kLanes; };
    const float count = static_cast<float>(cy * KW);
    int ox = lo;
    for (; ox + Op::kGroup <= hi; ox += Op::kGroup) {
      group<Op, KW, SW, Op::kGroup>(window(ox), row, rows, count, out + ox * kLanes);
    }
    for (; ox < hi; ++ox) group<Op, KW, SW, 1>(window(ox), row, rows, count, out + ox * kLanes);
  }
  for (int ox = hi; ox < g.out_w; ++ox) one(ox);
}

using RowFn = void (*)(const PoolGeometry&, const half*, half*, int);

template <class Op, int SW>
RowFn row_for_width(int kw) {
  switch (kw) {
    case 2: return pool_row<Op, 2, SW>;
    case 3: return pool_row<Op, 3, SW>;
    default: return pool_row<Op, 0, 1>;
  }
}

template <class Op>
RowFn row_for(const PoolGeometry& g) {
  if (g.sw == 1) return row_for_width<Op, 1>(g.kw);
  if (g.sw == 2) return row_for_width<Op, 2>(g.kw);
  return pool_row<Op, 0, 1>;
}

void run_windowed(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                  const KernelContext& ctx) {
  const RowFn row = g.pool == fb::PoolType::Average ? row_for<AvgOp>(g) : row_for<MaxOp>(g);
  const half* src = reinterpret_cast<const half*>(in);
  half* dst = reinterpret_cast<half*>(out);
  const size_t out_row = static_cast<size_t>(g.out_w) * kLanes;
  const long long items = static_cast<long long>(g.channels / kLanes) * g.out_h;
  parallel_for(ctx.num_threads, items, [&](long long it) {
    const long long q = it / g.out_h;
    const int oy = static_cast<int>(it % g.out_h);
    row(g, src + 2 * q * in_cstep, dst + 2 * q * out_cstep + oy * out_row, oy);
  });
}

}  // namespace

const PoolKernel kF16PoolGlobalPack8_Neon = {
    "f16_pool_global_pack8_neonfp16", Isa::kNeon, supports_global, no_workspace, no_workspace, 0.0, run_global,
    kLanes, true,
};

const PoolKernel kF16Pool2dPack8_Neon = {
    "f16_pool2d_pack8_neonfp16", Isa::kNeon, supports_windowed, no_workspace, no_workspace, 0.0, run_windowed,
    kLanes, true,
};

}  // namespace kestrel::kernels::arm
