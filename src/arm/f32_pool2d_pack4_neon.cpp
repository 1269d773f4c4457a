// Max and average pooling on pack4 maps (ncnn's pack4: 4 channels per pixel vector),
// pack4 in and out: the windows, strides and padding of f32_pool2d_neon, bit-identical
// to it. Each lane goes through the planar kernel's operations in its order: the
// vertical pass reduces the window's rows from the identity (sums start at +0, so a
// window of -0 gives +0 as there), the horizontal pass reduces the window's columns left
// to right with the padding columns as the identity, and an average is multiplied by
// the same float reciprocal of the same count. Here a column is one pixel vector, so
// both passes run on whole vectors: no transposes, no lane shuffles, any channel count
// that is a multiple of 4. Threads take (4-channel block, output row) pairs.
#include <algorithm>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "arm/f32_pool2d_neon.h"
#include "kernels/pool_kernels.h"

namespace kestrel::kernels::arm {
namespace {

constexpr int kLanes = 4;
// Outputs per horizontal strip: the column buffer lives on the stack (no workspace)
// and stays in L1 (6 KB).
constexpr int kStrip = 64;
constexpr int kMaxKw = 64;
// Column vectors a strip reads: stride 2 x outputs rounded up to 4 (the horizontal
// pass reads whole groups of 4 outputs) + the window.
constexpr int kBufferColumns = 2 * kStrip + kMaxKw;

bool supports_geometry(const PoolGeometry& g) {
  return !g.global && g.in_pack == kLanes && g.out_pack == kLanes && g.channels >= kLanes &&
         g.channels % kLanes == 0 && (g.sw == 1 || g.sw == 2) && g.kw >= 1 && g.kw <= kMaxKw && g.kh >= 1 &&
         g.sh >= 1 && g.pad_left >= 0 && g.pad_top >= 0 && g.out_w >= 1 && g.out_h >= 1 && g.in_w >= 1 &&
         g.in_h >= 1;
}

// The planar kernel's 1 / divisor of output column ox (inverse_counts there): the
// interior value where the window lies inside the input, else from the clipped window.
float inverse_count(const PoolGeometry& g, int ox, long long cy, float interior) {
  const long long first = static_cast<long long>(ox) * g.sw - g.pad_left;
  if (first >= 0 && first + g.kw <= g.in_w) return interior;
  const PoolWindow wx = pool_window(ox, g.sw, g.kw, g.pad_left, g.pad_right, g.in_w);
  const long long cx = g.count_include_pad ? wx.padded : static_cast<long long>(wx.end - wx.begin);
  return 1.f / static_cast<float>(cy * cx);
}

// Outputs o..o+3 of a strip from the column vectors at col (output o's first column):
// Op over each window's columns, left to right. KW == 0 takes the width at run time.
template <class Op, int KW, int SW>
inline void horizontal4(const float* col, int kw, float32x4_t* v) {
  if constexpr (KW > 0) {
    // The 3 * SW + KW columns of the four windows loaded once.
    constexpr int kCols = 3 * SW + KW;
    float32x4_t c[kCols];
    for (int i = 0; i < kCols; ++i) c[i] = vld1q_f32(col + kLanes * i);
    for (int o = 0; o < 4; ++o) {
      float32x4_t acc = c[o * SW];
      for (int t = 1; t < KW; ++t) acc = Op::apply(acc, c[o * SW + t]);
      v[o] = acc;
    }
  } else {
    for (int o = 0; o < 4; ++o) {
      const float* p = col + kLanes * o * SW;
      float32x4_t acc = vld1q_f32(p);
      for (int t = 1; t < kw; ++t) acc = Op::apply(acc, vld1q_f32(p + kLanes * t));
      v[o] = acc;
    }
  }
}

template <class Op, int KW, int SW>
void pool_row(const PoolGeometry& g, const float* block, float* dst, int oy) {
  constexpr bool kAverage = std::is_same_v<Op, SumPoolQ>;
  alignas(16) float buf[kBufferColumns * kLanes];
  const PoolWindow wy = pool_window(oy, g.sh, g.kh, g.pad_top, g.pad_bottom, g.in_h);
  const int rows = wy.end - wy.begin;
  const size_t row_floats = static_cast<size_t>(g.in_w) * kLanes;
  const float* src = block + static_cast<size_t>(wy.begin) * row_floats;
  const long long cy = g.count_include_pad ? wy.padded : rows;
  const float interior = 1.f / static_cast<float>(cy * g.kw);
  const float32x4_t id = vdupq_n_f32(Op::kIdentity);
  for (int ox0 = 0; ox0 < g.out_w; ox0 += kStrip) {
    const int n = std::min(kStrip, g.out_w - ox0);
    const int len = SW * ((n + 3) / 4 * 4) + g.kw;
    // Column j of buf is input column x_first + j; those outside [0, in_w) are padding.
    const long long x_first = static_cast<long long>(ox0) * SW - g.pad_left;
    const int j0 = static_cast<int>(std::clamp<long long>(-x_first, 0, len));
    const int j1 = static_cast<int>(std::clamp<long long>(g.in_w - x_first, j0, len));
    // A pixel row is one run of floats: the planar vertical pass over it reduces whole
    // pixel vectors.
    pool_vertical_q<Op>(src + (x_first + j0) * kLanes, row_floats, rows, buf + j0 * kLanes, (j1 - j0) * kLanes);
    for (int j = 0; j < j0; ++j) vst1q_f32(buf + j * kLanes, id);
    for (int j = j1; j < len; ++j) vst1q_f32(buf + j * kLanes, id);
    float* out = dst + static_cast<size_t>(ox0) * kLanes;
    for (int o = 0; o < n; o += 4) {
      float32x4_t v[4];
      horizontal4<Op, KW, SW>(buf + o * SW * kLanes, g.kw, v);
      const int m = std::min(4, n - o);
      if constexpr (kAverage) {
        for (int i = 0; i < m; ++i) v[i] = vmulq_n_f32(v[i], inverse_count(g, ox0 + o + i, cy, interior));
      }
      // m of the 4 outputs, a store each (GCC turned a loop of these into a memcpy call).
      float* p = out + o * kLanes;
      vst1q_f32(p, v[0]);
      if (m > 1) vst1q_f32(p + kLanes, v[1]);
      if (m > 2) vst1q_f32(p + 2 * kLanes, v[2]);
      if (m > 3) vst1q_f32(p + 3 * kLanes, v[3]);
    }
  }
}

using RowFn = void (*)(const PoolGeometry&, const float*, float*, int);

template <class Op, int SW>
RowFn row_for_width(int kw) {
  switch (kw) {
    case 2: return pool_row<Op, 2, SW>;
    case 3: return pool_row<Op, 3, SW>;
    default: return pool_row<Op, 0, SW>;
  }
}

template <class Op>
RowFn row_for(const PoolGeometry& g) {
  return g.sw == 1 ? row_for_width<Op, 1>(g.kw) : row_for_width<Op, 2>(g.kw);
}

size_t no_workspace(const PoolGeometry&) { return 0; }

void run(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const RowFn row = g.pool == fb::PoolType::Average ? row_for<SumPoolQ>(g) : row_for<MaxPoolQ>(g);
  const long long items = static_cast<long long>(g.channels / kLanes) * g.out_h;
  const size_t out_row = static_cast<size_t>(g.out_w) * kLanes;
#pragma omp parallel for num_threads(ctx.num_threads) schedule(static)
  for (long long it = 0; it < items; ++it) {
    const int q = static_cast<int>(it / g.out_h), oy = static_cast<int>(it % g.out_h);
    row(g, in + q * in_cstep, out + q * out_cstep + oy * out_row, oy);
  }
}

}  // namespace

const PoolKernel kF32Pool2dPack4_Neon = {
    "f32_pool2d_pack4_neon", Isa::kNeon, supports_geometry, no_workspace, no_workspace, 1e-4, run, kLanes,
};

}  // namespace kestrel::kernels::arm
