// The register step of the int8 depthwise kernels (i8_dwconv_8x2_neon.cpp): 8 output
// pixels (two vectors) of two output rows at stride 1, of one at stride 2, as sums of
// quantized values held as floats, dequantized and stored as floats, or quantized and
// stored as bytes (an int8 map); in a header so that bench/arm/loops measures the loop
// the library runs.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "arm/i8_neon.h"

namespace kestrel::kernels::arm::i8dw {

using i8::unroll;

constexpr int kLanes = 4, NV = 2, kStep = NV * kLanes;

// Output rows a step computes at stride S.
template <int S>
constexpr int kRows = S == 1 ? 2 : 1;

// acc + x * weight i (lane i % 4 of vector i / 4).
template <int I>
KESTREL_I8_NEON_INLINE float32x4_t fma_tap(float32x4_t acc, float32x4_t x, const float32x4_t* w) {
  return vfmaq_laneq_f32(acc, x, w[I / kLanes], I % kLanes);
}

// The input rows a step reads, and the output rows it writes (floats, or bytes),
// walked along the row: every tap a load at a constant offset.
template <int K, int S, class Out = float>
struct Walk {
  static constexpr int R = kRows<S>, kIn = K + R - 1;
  const float* even[kIn];  // stride 2: the rows' even halves; stride 1: the rows
  const float* odd[kIn];   // stride 2: their odd halves
  Out* dst[R];             // nullptr past the map's last row

  KESTREL_I8_NEON_INLINE void advance() {
    unroll<kIn>([&](auto i) KESTREL_I8_LAMBDA {
      even[i] += kStep;
      if constexpr (S == 2) odd[i] += kStep;
    });
    unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
      if (dst[rr]) dst[rr] += kStep;
    });
  }
};

// A short last step's first n (< 8) outputs, out of line: inlined, GCC keeps the
// step's accumulators in memory.
inline __attribute__((noinline)) void store_short(float* d, float32x4_t y0, float32x4_t y1, int n) {
  if (n >= kLanes) {
    vst1q_f32(d, y0);
    y0 = y1;
    d += kLanes;
    n -= kLanes;
  }
  if (n >= 2) {
    vst1_f32(d, vget_low_f32(y0));
    y0 = vextq_f32(y0, y0, 2);
    d += 2;
    n -= 2;
  }
  if (n) vst1q_lane_f32(d, y0, 0);
}

// A channel's output factors: fp32, float(sum) * dq + b and the activation; int8, the
// requantization fma(float(sum), m, c) and its bounds (i8_epilogue_neon.h).
struct Factors {
  float32x4_t dq, b, m, c;
  int8x16_t lo, hi;
};

// One step: 8 outputs of each row, the first n (<= 8) stored; kAct as i8::requantize's.
template <int K, int S, class Out, class Epi, bool kAct = false>
KESTREL_I8_NEON_INLINE void step(const Walk<K, S, Out>& w, const float32x4_t* wv, const Factors& f, int n,
                                 const Epi& epi) {
  constexpr int R = Walk<K, S, Out>::R;
  float32x4_t acc[R][NV];
  unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
    unroll<NV>([&](auto v) KESTREL_I8_LAMBDA { acc[rr][v] = vdupq_n_f32(0.f); });
  });
  // Input row i feeds output row rr through window row i - rr.
  unroll<Walk<K, S, Out>::kIn>([&](auto i) KESTREL_I8_LAMBDA {
    unroll<K>([&](auto kx) KESTREL_I8_LAMBDA {
      const float* t = S == 1 ? w.even[i] + kx : (kx % 2 ? w.odd[i] : w.even[i]) + kx / 2;
      const float32x4_t x0 = vld1q_f32(t), x1 = vld1q_f32(t + kLanes);
      unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
        constexpr int ky = i - rr;
        if constexpr (ky >= 0 && ky < K) {
          acc[rr][0] = fma_tap<ky * K + kx>(acc[rr][0], x0, wv);
          acc[rr][1] = fma_tap<ky * K + kx>(acc[rr][1], x1, wv);
        }
      });
    });
  });
  unroll<R>([&](auto rr) KESTREL_I8_LAMBDA {
    Out* d = w.dst[rr];
    if (R > 1 && !d) return;
    if constexpr (std::is_same_v<Out, int8_t>) {
      const int32x4_t q[NV] = {i8::requantize<kAct>(acc[rr][0], f.m, f.c, epi),
                               i8::requantize<kAct>(acc[rr][1], f.m, f.c, epi)};
      i8::store_bytes(d, vminq_s8(vmaxq_s8(i8::narrow<NV>(q), f.lo), f.hi), n);
    } else {
      float32x4_t y[NV];
      unroll<NV>([&](auto v) KESTREL_I8_LAMBDA { y[v] = epi(vaddq_f32(vmulq_f32(acc[rr][v], f.dq), f.b)); });
      if (n == kStep) {
        vst1q_f32(d, y[0]);
        vst1q_f32(d + kLanes, y[1]);
      } else {
        store_short(d, y[0], y[1], n);
      }
    }
  });
}

}  // namespace kestrel::kernels::arm::i8dw
