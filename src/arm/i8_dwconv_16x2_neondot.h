// The SDOT register step of the int8 depthwise kernels (i8_dwconv_16x2_neondot.cpp): 16
// output pixels of two output rows at stride 1, of one at stride 2, from a zero-padded
// byte plane; each pixel's four window-row bytes gathered by TBL, three (3x3) or six
// (5x5) SDOTs by element per four pixels; stored as floats or requantized into bytes.
// In a header so that bench/arm/loops measures the loop the library runs. Needs ARMv8.2
// dotprod.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "arm/i8_neon.h"

namespace kestrel::kernels::arm::i8dwdot {

using i8::unroll;

constexpr int kLanes = 4, NV = 4, kStep = NV * kLanes;

// Output rows a step computes at stride S.
template <int S>
constexpr int kRows = S == 1 ? 2 : 1;
// Quads (dwords) per window row, and weight vectors per channel.
template <int K>
constexpr int kQuads = (K + 3) / 4;
template <int K>
constexpr int kWeightVectors = (K * kQuads<K> + kLanes - 1) / kLanes;
// Vectors of a row a step's TBLs read: up to byte S * 15 + 4 (kQuads - 1) + 3.
template <int S>
constexpr int kTableVectors = S == 1 ? 2 : 3;
// TBL indices of vector v, quad t: lane p's four bytes S (4v + p) + 4t + j.
template <int S, int K>
struct Indices {
  int8x16_t idx[NV][kQuads<K>];
  Indices() {
    for (int v = 0; v < NV; ++v) {
      for (int t = 0; t < kQuads<K>; ++t) {
        int8_t b[16];
        for (int q = 0; q < kLanes; ++q) {
          for (int j = 0; j < 4; ++j) b[4 * q + j] = static_cast<int8_t>(S * (4 * v + q) + 4 * t + j);
        }
        idx[v][t] = vld1q_s8(b);
      }
    }
  }
};

// A row's bytes the step's TBLs read, loaded as the TBL's register list (consecutive
// registers: an array of vectors copied into one is spilled by GCC).
template <int S>
using Table = std::conditional_t<S == 1, int8x16x2_t, int8x16x3_t>;
KESTREL_I8_NEON_INLINE void load_table(const int8_t* p, int8x16x2_t* t) { *t = vld1q_s8_x2(p); }
KESTREL_I8_NEON_INLINE void load_table(const int8_t* p, int8x16x3_t* t) { *t = vld1q_s8_x3(p); }
KESTREL_I8_NEON_INLINE int8x16_t lookup(const int8x16x2_t& t, int8x16_t idx) {
  return vqtbl2q_s8(t, vreinterpretq_u8_s8(idx));
}
KESTREL_I8_NEON_INLINE int8x16_t lookup(const int8x16x3_t& t, int8x16_t idx) {
  return vqtbl3q_s8(t, vreinterpretq_u8_s8(idx));
}

// A channel's output factors: fp32, float(sum) * dq + b and the activation; int8, the
// requantization fma(float(sum), m, c) and its bounds.
struct Factors {
  float32x4_t dq, b, m, c;
  int8x16_t lo, hi;
};

// A short last step's first n (< 16) floats, out of line (inlined, GCC keeps the step's
// accumulators in memory). Internal linkage: GCC then knows which registers the call
// clobbers (-fipa-ra) and keeps the caller's live ones in registers across it.
static inline __attribute__((noinline)) void store_short(float* d, const float32x4_t* y, int n) {
  int v = 0;
  for (; n >= kLanes; n -= kLanes, d += kLanes) vst1q_f32(d, y[v++]);
  if (n == 0) return;
  float32x4_t last = y[v];
  if (n >= 2) {
    vst1_f32(d, vget_low_f32(last));
    last = vextq_f32(last, last, 2);
    d += 2;
    n -= 2;
  }
  if (n) vst1q_lane_f32(d, last, 0);
}

template <int K, class Out, class Epi, bool kAct>
KESTREL_I8_NEON_INLINE void store(Out* d, const int32x4_t (&acc)[NV], const Factors& f, int n, const Epi& epi) {
  if constexpr (std::is_same_v<Out, int8_t>) {
    int32x4_t q[NV];
    unroll<NV>([&](auto v) KESTREL_I8_LAMBDA { q[v] = i8::requantize<kAct>(vcvtq_f32_s32(acc[v]), f.m, f.c, epi); });
    i8::store_bytes(d, vminq_s8(vmaxq_s8(i8::narrow<NV>(q), f.lo), f.hi), n);
  } else {
    float32x4_t y[NV];
    unroll<NV>([&](auto v) KESTREL_I8_LAMBDA { y[v] = epi(vaddq_f32(vmulq_f32(vcvtq_f32_s32(acc[v]), f.dq), f.b)); });
    if (n == kStep) {
      unroll<NV>([&](auto v) KESTREL_I8_LAMBDA { vst1q_f32(d + v * kLanes, y[v]); });
    } else {
      store_short(d, y, n);
    }
  }
}

// One step: 16 outputs of each of R rows from column x (plane columns S x on), the first
// n stored. rows: the kIn plane rows; dst: the output rows (nullptr past the map).
template <int K, int S, class Out, class Epi, bool kAct>
KESTREL_I8_NEON_INLINE void step(const int8_t* const* rows, Out* const* dst, int x, const int8x16_t* w,
                                 const Indices<S, K>& ix, const Factors& f, int n, const Epi& epi) {
  constexpr int R = kRows<S>, kIn = K + R - 1;
  int32x4_t acc[R][NV];
  unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
    unroll<NV>([&](auto v) KESTREL_I8_LAMBDA { acc[rr][v] = vdupq_n_s32(0); });
  });
  // Input row i feeds output row rr through window row i - rr.
  unroll<kIn>([&](auto i) KESTREL_I8_LAMBDA {
    Table<S> tab;
    load_table(rows[i] + S * x, &tab);
    unroll<kQuads<K>>([&](auto t) KESTREL_I8_LAMBDA {
      unroll<NV>([&](auto v) KESTREL_I8_LAMBDA {
        const int8x16_t quads = lookup(tab, ix.idx[v][t]);
        unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
          constexpr int ky = i - rr;
          if constexpr (ky >= 0 && ky < K) {
            constexpr int j = ky * kQuads<K> + t;
            acc[rr][v] = vdotq_laneq_s32(acc[rr][v], quads, w[j / kLanes], j % kLanes);
          }
        });
      });
    });
  });
  unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
    if (dst[rr]) store<K, Out, Epi, kAct>(dst[rr] + x, acc[rr], f, n, epi);
  });
}

}  // namespace kestrel::kernels::arm::i8dwdot
