// The register-blocked inner loop of the NEON 3x3 depthwise convolution (Bi et al.,
// Alg. 3): one channel, kRows (2 or 1) output rows x 4 * kVecs (8 or 4) output pixels
// per step, from the (kRows - 1) * S + 3 input rows those outputs read; each row is
// loaded once and feeds both output rows. Stride 1 takes the views of a row shifted by
// 0, 1 and 2 columns as three (unaligned) loads; stride 2 de-interleaves even and odd
// columns with vld2q_f32 (the taps at columns 2x and 2x + 1) and shifts the even
// vector by one column with vextq_f32 (the tap at 2x + 2). Self-contained (only
// <arm_neon.h> and the standard library) so bench scripts can compile it alone and
// mark the loop for llvm-mca.
//
// The paper builds the stride-1 views with vextq_f32; loads are used here because EXT
// issues on the FP/ASIMD pipes that the 36 FMLAs of a step already saturate, while the
// extra loads go to the load pipe. llvm-mca, 2 x 8 step of the GCC 12 build: 42.6
// instead of 50.0 cycles a step on the Cortex-A72 model (85% instead of 72% of FMA
// peak). Not modelled there: a load that crosses a 64-byte line (up to a quarter of
// the shifted ones) costs real cores an extra cycle.
//
// Operands (written by f32_dwconv3x3_neon.cpp):
//   weights  w[0..2]: taps 0..8 (ky * 3 + kx) in lanes of three vectors, lane 1 of
//            w[2] is the bias (the packed per-channel block, loaded as is).
//   rows     Rows::p[r]: input row r of the step (r = 0 holds the top tap of output
//            row 0), each pointing at the leftmost input column of the first output.
//            A step reads 4 * kVecs + 2 floats of every row (stride 1, exactly the
//            columns it uses) or 8 * kVecs + 4 (stride 2, 3 past the last one used).
// Every output value is bias + the 9 taps, fused in the order ky = 0..2, kx = 0..2,
// whatever the step's shape, so results do not depend on how a row is tiled.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <utility>

// Clang does not inline the larger unrolled lambdas on its own, which would leave
// the accumulators in memory.
#define KESTREL_DW3X3_INLINE __attribute__((always_inline))

namespace kestrel::kernels::arm::dwconv3x3 {

// Activations fused into the store; anything else is stored linear and activated
// afterwards by the caller.
enum class Epilogue { kLinear, kRelu, kClip, kLeaky };

struct Act {
  float32x4_t lo;     // kRelu: 0; kClip: alpha
  float32x4_t hi;     // kClip: beta
  float32x4_t slope;  // kLeaky: alpha
};

template <Epilogue E>
inline float32x4_t activate(float32x4_t x, const Act& a) {
  if constexpr (E == Epilogue::kRelu) {
    return vmaxq_f32(x, a.lo);
  } else if constexpr (E == Epilogue::kClip) {
    return vminq_f32(vmaxq_f32(x, a.lo), a.hi);
  } else if constexpr (E == Epilogue::kLeaky) {
    return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(0.f)), x, vmulq_f32(x, a.slope));
  } else {
    return x;
  }
}

// Calls f(std::integral_constant<int, i>) for i = 0..N-1, so lane and tap indices are
// constants (vextq_f32 and vfmaq_laneq_f32 need immediates) at any optimisation level.
template <class F, int... I>
inline KESTREL_DW3X3_INLINE void unroll_seq(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline KESTREL_DW3X3_INLINE void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

constexpr int input_rows(int stride, int out_rows) { return (out_rows - 1) * stride + 3; }

struct Rows {
  const float* p[5];
};

// The three tap views (kx = 0, 1, 2) of kVecs groups of 4 outputs from one input row.
template <int S, int kVecs>
inline void load_views(const float* p, float32x4_t v[kVecs][3]) {
  if constexpr (S == 1) {
    unroll<kVecs>([&](auto i) KESTREL_DW3X3_INLINE {
      unroll<3>([&](auto kx) KESTREL_DW3X3_INLINE { v[i][kx] = vld1q_f32(p + 4 * i + kx); });
    });
  } else {
    float32x4x2_t d[kVecs];
    unroll<kVecs>([&](auto i) KESTREL_DW3X3_INLINE { d[i] = vld2q_f32(p + 8 * i); });
    // Only lane 0 (column 8 * kVecs) of the tail is used.
    const float32x4_t tail = vld1q_f32(p + 8 * kVecs);
    unroll<kVecs>([&](auto i) KESTREL_DW3X3_INLINE {
      constexpr int k = decltype(i)::value;
      v[k][0] = d[k].val[0];
      v[k][1] = d[k].val[1];
      if constexpr (k + 1 < kVecs) {
        v[k][2] = vextq_f32(d[k].val[0], d[k + 1].val[0], 1);
      } else {
        v[k][2] = vextq_f32(d[k].val[0], tail, 1);
      }
    });
  }
}

// acc[o][v] = bias + sum of the 9 taps for output row o, pixels 4v..4v+3 of the step
// whose leftmost input column is `col` in every row.
template <int S, int kRows, int kVecs>
inline void compute(const Rows& rows, ptrdiff_t col, const float32x4_t w[3], float32x4_t acc[kRows][kVecs]) {
  const float32x4_t bias = vdupq_laneq_f32(w[2], 1);
  unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE { unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE { acc[o][v] = bias; }); });
  unroll<input_rows(S, kRows)>([&](auto r) KESTREL_DW3X3_INLINE {
    float32x4_t views[kVecs][3];
    load_views<S, kVecs>(rows.p[r] + col, views);
    unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE {
      constexpr int ky = decltype(r)::value - decltype(o)::value * S;
      if constexpr (ky >= 0 && ky < 3) {
        unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE {
          unroll<3>([&](auto kx) KESTREL_DW3X3_INLINE {
            constexpr int tap = ky * 3 + decltype(kx)::value;
            acc[o][v] = vfmaq_laneq_f32(acc[o][v], views[v][kx], w[tap / 4], tap % 4);
          });
        });
      }
    });
  });
}

// The first n (1 <= n <= 4 * kVecs) values of a step's output row: whole vectors,
// then the last 1..3 lanes.
template <int kVecs>
inline void store_partial(float* out, const float32x4_t acc[kVecs], int n) {
  float32x4_t v = acc[0];
  if constexpr (kVecs == 2) {
    if (n >= 4) {
      vst1q_f32(out, acc[0]);
      if (n == 4) return;
      out += 4;
      n -= 4;
      v = acc[1];
    }
  }
  if (n == 4) {
    vst1q_f32(out, v);
  } else {
    if (n >= 2) vst1_f32(out, vget_low_f32(v));
    if (n == 3) vst1q_lane_f32(out + 2, v, 2);
    if (n == 1) vst1q_lane_f32(out, v, 0);
  }
}

// One step, storing the first n pixels of each output row (n = 4 * kVecs: all).
template <int S, int kRows, int kVecs, Epilogue E>
inline void step(const Rows& rows, ptrdiff_t col, const float32x4_t w[3], const Act& act, float* const out[2],
                 ptrdiff_t x, int n) {
  float32x4_t acc[kRows][kVecs];
  compute<S, kRows, kVecs>(rows, col, w, acc);
  unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE {
    unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE { acc[o][v] = activate<E>(acc[o][v], act); });
    if (n == 4 * kVecs) {
      unroll<kVecs>([&](auto v) KESTREL_DW3X3_INLINE { vst1q_f32(out[o] + x + 4 * v, acc[o][v]); });
    } else {
      store_partial<kVecs>(out[o] + x, acc[o], n);
    }
  });
}

// The interior loop: `blocks` full steps of 8 pixels, outputs x0, x0 + 8, ..., reading
// input columns from col0 on, 8 * S further per step. Operands are copied to locals
// first: the stores may alias anything reached through a pointer, and would otherwise
// make the compiler reload weights and row pointers every step.
template <int S, int kRows, Epilogue E>
inline void blocks_8(const Rows& rows_in, ptrdiff_t col0, const float32x4_t w_in[3], const Act& act_in,
                     float* const out_in[2], ptrdiff_t x0, int blocks) {
  const Rows rows = rows_in;
  const float32x4_t w[3] = {w_in[0], w_in[1], w_in[2]};
  const Act act = act_in;
  float* const out[2] = {out_in[0] + x0, kRows == 2 ? out_in[1] + x0 : nullptr};
  for (int b = 0; b < blocks; ++b) {
    float32x4_t acc[kRows][2];
    compute<S, kRows, 2>(rows, col0 + static_cast<ptrdiff_t>(b) * 8 * S, w, acc);
    unroll<kRows>([&](auto o) KESTREL_DW3X3_INLINE {
      unroll<2>([&](auto v) KESTREL_DW3X3_INLINE { vst1q_f32(out[o] + 8 * b + 4 * v, activate<E>(acc[o][v], act)); });
    });
  }
}

}  // namespace kestrel::kernels::arm::dwconv3x3

#undef KESTREL_DW3X3_INLINE
