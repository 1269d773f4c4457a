// 3x3 depthwise convolution, stride 1 and 2, NEON (Bi et al., Alg. 3): per channel,
// 2 output rows x 8 pixels per step (f32_dwconv3x3_neon.h), bias and ReLU / Clip /
// LeakyReLU fused into the store (other activations run over each channel right
// after it is computed, while it is in cache).
//
// Padding without a scalar path: every output row is cut the same way into
//   [0, xl)      the left edge, read from the left strip,
//   [xl, xr)     8-pixel steps read straight from the input rows,
//   [xr, out_w)  the right edge and the last partial step, read from the right strip.
// A strip is a zero-padded copy of the input columns its outputs read (at most 20
// floats a row), kept for the last 8 input rows in a per-thread ring, so the edge
// steps run the same vector code as the interior; a row above or below the input is a
// row of zeros. Each input row is copied once per channel, and the strips' zeros are
// written once per run: a copy only rewrites the input columns, which are the same for
// every row and channel. The last step of a row computes 8 or 4 lanes and stores its
// 1..8 real pixels; an odd last output row runs the same steps with one output row
// (3 input rows). Small maps are all strip: a 7 x 7 map is one 8-lane step per row
// pair.
#include <omp.h>

#include <algorithm>

#include "arm/f32_dwconv3x3_neon.h"
#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {
namespace {

using dwconv3x3::Act;
using dwconv3x3::Epilogue;
using dwconv3x3::Rows;

constexpr int kPackFloats = 16;  // per channel: 9 taps, the bias, zeros (one 64-byte line)
constexpr int kRing = 8;         // strip rows kept per thread: >= the 5 rows a step reads

int round_up(int x, int m) { return (x + m - 1) / m * m; }

// A strip: outputs [x0, x1) read strip columns (x - x0) * S + 0..2; strip column 0 is
// input column col0. Only input columns [src, src + len) are copied (to strip column
// dst); the others stay zero.
struct Strip {
  int x0 = 0, x1 = 0;
  int width = 0;  // floats per row, 0 when the strip has no outputs
  int col0 = 0, src = 0, len = 0, dst = 0;
};

struct Plan {
  Strip left, right;
  int direct_blocks = 0;  // 8-pixel steps from left.x1 on, read from the input
  int zero_floats = 0;    // the zero row, then kRing rows of left + right strip
  int ring_width = 0;
  size_t floats_per_thread = 0;
};

Strip make_strip(const ConvGeometry& g, int x0, int x1) {
  Strip st;
  st.x0 = x0;
  st.x1 = x1;
  if (x1 <= x0) return st;
  // Steps of 8 (or, last, 4) pixels read 4 * S floats per 4 pixels plus 4 more.
  st.width = round_up(x1 - x0, 4) * g.sw + 4;
  st.col0 = x0 * g.sw - g.pad_left;
  const int lo = std::max(st.col0, 0), hi = std::min(st.col0 + st.width, g.in_w);
  st.src = lo;
  st.len = std::max(hi - lo, 0);
  st.dst = lo - st.col0;
  return st;
}

Plan make_plan(const ConvGeometry& g) {
  const int s = g.sw;
  Plan p;
  const int xl = g.pad_left > 0 ? std::min(8, g.out_w) : 0;
  // Outputs [0, inside) that only read columns of the row: x * s - pad_left + 2 < in_w.
  const int last_inside = g.in_w - 3 + g.pad_left;
  const int inside = last_inside >= 0 ? std::min(g.out_w, last_inside / s + 1) : 0;
  p.direct_blocks = std::max(0, (inside - xl) / 8);
  const int xr = xl + 8 * p.direct_blocks;
  p.left = make_strip(g, 0, xl);
  p.right = make_strip(g, xr, g.out_w);
  // Direct steps read up to 8 * s + 4 floats from column xr * s - pad_left - 8 * s of a
  // zero row (at most in_w + 2); strip steps up to a strip's width.
  p.zero_floats = round_up(std::max({g.in_w + 24, p.left.width, p.right.width}), 16);
  p.ring_width = p.left.width + p.right.width;
  p.floats_per_thread = static_cast<size_t>(p.zero_floats) + static_cast<size_t>(kRing) * p.ring_width;
  return p;
}

inline void copy_floats(const float* src, float* dst, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vld1q_f32(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}

// The outputs [st.x0, st.x1) of kRows rows from a strip: 8-pixel steps, the last one
// 8 or 4 lanes wide storing only its real pixels.
template <int S, int kRows, Epilogue E>
void strip_steps(const Rows& rows, const Strip& st, const float32x4_t w[3], const Act& act, float* const out[2]) {
  for (int x = st.x0; x < st.x1; x += 8) {
    const int n = std::min(8, st.x1 - x);
    const ptrdiff_t col = static_cast<ptrdiff_t>(x - st.x0) * S;
    if (n > 4) {
      dwconv3x3::step<S, kRows, 2, E>(rows, col, w, act, out, x, n);
    } else {
      dwconv3x3::step<S, kRows, 1, E>(rows, col, w, act, out, x, n);
    }
  }
}

struct Channel {
  const float* in;
  float* out;
  const float* zero;
  float* ring;
  int copied;  // input rows [0, copied) are in the ring
};

// Output rows oy .. oy + kRows - 1 of one channel.
template <int S, int kRows, Epilogue E>
void output_rows(const ConvGeometry& g, const Plan& p, const float32x4_t w[3], const Act& act, Channel& ch, int oy) {
  constexpr int kIn = dwconv3x3::input_rows(S, kRows);
  const int iy0 = oy * S - g.pad_top;
  if (p.ring_width > 0) {
    const int end = std::min(iy0 + kIn, g.in_h);
    for (int iy = std::max({ch.copied, iy0, 0}); iy < end; ++iy) {
      const float* src = ch.in + static_cast<size_t>(iy) * g.in_w;
      float* slot = ch.ring + static_cast<size_t>(iy % kRing) * p.ring_width;
      copy_floats(src + p.left.src, slot + p.left.dst, p.left.len);
      copy_floats(src + p.right.src, slot + p.left.width + p.right.dst, p.right.len);
    }
    ch.copied = std::max(ch.copied, end);
  }
  Rows direct{}, left{}, right{};
  for (int r = 0; r < kIn; ++r) {
    const int iy = iy0 + r;
    if (iy >= 0 && iy < g.in_h) {
      const float* slot = ch.ring + static_cast<size_t>(iy % kRing) * p.ring_width;
      direct.p[r] = ch.in + static_cast<size_t>(iy) * g.in_w;
      left.p[r] = slot;
      right.p[r] = slot + p.left.width;
    } else {
      direct.p[r] = left.p[r] = right.p[r] = ch.zero;
    }
  }
  float* const out[2] = {ch.out + static_cast<size_t>(oy) * g.out_w,
                         kRows == 2 ? ch.out + static_cast<size_t>(oy + 1) * g.out_w : nullptr};
  strip_steps<S, kRows, E>(left, p.left, w, act, out);
  dwconv3x3::blocks_8<S, kRows, E>(direct, static_cast<ptrdiff_t>(p.left.x1) * S - g.pad_left, w, act, out,
                                   p.left.x1, p.direct_blocks);
  strip_steps<S, kRows, E>(right, p.right, w, act, out);
}

template <int S, Epilogue E>
void run_channels(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                  size_t out_cstep, const KernelContext& ctx, const Act& act, bool activate_after) {
  const Plan p = make_plan(g);
  const size_t plane = static_cast<size_t>(g.out_h) * g.out_w;
#pragma omp parallel num_threads(ctx.num_threads)
  {
    float* scratch = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    std::fill(scratch, scratch + p.floats_per_thread, 0.f);
#pragma omp for schedule(static)
    for (int c = 0; c < g.in_c; ++c) {
      const float* pk = packed + static_cast<size_t>(c) * kPackFloats;
      const float32x4_t w[3] = {vld1q_f32(pk), vld1q_f32(pk + 4), vld1q_f32(pk + 8)};
      Channel ch{in + c * in_cstep, out + c * out_cstep, scratch, scratch + p.zero_floats, 0};
      int oy = 0;
      for (; oy + 2 <= g.out_h; oy += 2) output_rows<S, 2, E>(g, p, w, act, ch, oy);
      if (oy < g.out_h) output_rows<S, 1, E>(g, p, w, act, ch, oy);
      if (activate_after) activate_inplace(ch.out, plane, g.act);
    }
  }
}

template <int S>
void run_stride(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                size_t out_cstep, const KernelContext& ctx) {
  using fb::ActivationType;
  Act act{vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
  switch (g.act.type) {
    case ActivationType::None:
      return run_channels<S, Epilogue::kLinear>(g, packed, in, in_cstep, out, out_cstep, ctx, act, false);
    case ActivationType::ReLU:
      return run_channels<S, Epilogue::kRelu>(g, packed, in, in_cstep, out, out_cstep, ctx, act, false);
    case ActivationType::Clip:
      act.lo = vdupq_n_f32(g.act.alpha);
      act.hi = vdupq_n_f32(g.act.beta);
      return run_channels<S, Epilogue::kClip>(g, packed, in, in_cstep, out, out_cstep, ctx, act, false);
    case ActivationType::LeakyReLU:
      act.slope = vdupq_n_f32(g.act.alpha);
      return run_channels<S, Epilogue::kLeaky>(g, packed, in, in_cstep, out, out_cstep, ctx, act, false);
    default:
      return run_channels<S, Epilogue::kLinear>(g, packed, in, in_cstep, out, out_cstep, ctx, act, true);
  }
}

// Padding after the last input row/column that out outputs of stride s read.
long long pad_end(int in, int out, int s, int pad_begin) {
  return static_cast<long long>(out - 1) * s + 3 - in - pad_begin;
}

bool supports(const ConvGeometry& g) {
  if (!g.is_depthwise() || g.in_c < 1 || g.kh != 3 || g.kw != 3 || g.dh != 1 || g.dw != 1) return false;
  if (g.sh != g.sw || (g.sh != 1 && g.sh != 2)) return false;
  if (g.in_h < 1 || g.in_w < 1 || g.out_h < 1 || g.out_w < 1) return false;
  if (g.pad_top < 0 || g.pad_top > 2 || g.pad_left < 0 || g.pad_left > 2) return false;
  // Any trailing padding up to 2; negative means trailing input rows no output reads.
  return pad_end(g.in_h, g.out_h, g.sh, g.pad_top) <= 2 && pad_end(g.in_w, g.out_w, g.sw, g.pad_left) <= 2;
}

size_t packed_floats(const ConvGeometry& g) { return static_cast<size_t>(g.out_c) * kPackFloats; }

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  for (int c = 0; c < g.out_c; ++c) {
    float* dst = packed + static_cast<size_t>(c) * kPackFloats;
    std::fill(dst, dst + kPackFloats, 0.f);
    std::copy(weight + static_cast<size_t>(c) * 9, weight + static_cast<size_t>(c) * 9 + 9, dst);
    dst[9] = bias ? bias[c] : 0.f;
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

size_t thread_workspace(const ConvGeometry& g) { return make_plan(g).floats_per_thread * sizeof(float); }

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  if (g.sw == 1) {
    run_stride<1>(g, packed, in, in_cstep, out, out_cstep, ctx);
  } else {
    run_stride<2>(g, packed, in, in_cstep, out, out_cstep, ctx);
  }
}

}  // namespace

const ConvKernel kF32DwConv3x3_Neon = {
    "f32_dwconv3x3_2x8_neon", Isa::kNeon, supports, packed_floats, pack, no_workspace, thread_workspace, 1e-4, run,
};

}  // namespace kestrel::kernels::arm
