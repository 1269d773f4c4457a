// Max and average pooling with windows of any height and width 2 or 3 (unrolled
// templates) or up to kMaxKw (run-time width), horizontal stride 1 or 2, any
// vertical stride and any padding, ceil mode and count_include_pad included.
// Threads take (channel, output row) pairs; each output is computed the same way
// whatever the partition.
#include <algorithm>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "arm/f32_pool2d_neon.h"
#include "kernels/pool_kernels.h"

namespace kestrel::kernels::arm {
namespace {

// Outputs per horizontal strip: the row buffer lives on the stack, so the kernel
// needs no workspace, and a strip's buffer stays in L1.
constexpr int kStrip = 128;
constexpr int kMaxKw = 64;
// Buffer floats a strip reads: stride * (outputs rounded up to 4) + window + the
// 4 floats a stride-2 load reads past the last window, + the 3 lanes the vertical
// pass's last vector may write past its columns.
constexpr int kBuffer = 2 * kStrip + kMaxKw + 4 + 4;

size_t round_up4(int n) { return static_cast<size_t>((n + 3) / 4 * 4); }

// 1 / divisor for outputs ox .. ox+3 of a row whose vertical window spans `cy` cells
// (padded or valid, as the mode counts).
float32x4_t inverse_counts(const PoolGeometry& g, int ox, int n_left, long long cy, float interior) {
  const long long first = static_cast<long long>(ox) * g.sw - g.pad_left;
  const long long last = static_cast<long long>(ox + 3) * g.sw - g.pad_left + g.kw;
  if (first >= 0 && last <= g.in_w) return vdupq_n_f32(interior);
  float inv[4];
  for (int l = 0; l < 4; ++l) {
    if (l >= n_left) {
      inv[l] = 1.f;
      continue;
    }
    const PoolWindow wx = pool_window(ox + l, g.sw, g.kw, g.pad_left, g.pad_right, g.in_w);
    const long long cx = g.count_include_pad ? wx.padded : static_cast<long long>(wx.end - wx.begin);
    inv[l] = 1.f / static_cast<float>(cy * cx);
  }
  return vld1q_f32(inv);
}

template <class Op, int KW, int SW>
void pool_row(const PoolGeometry& g, const float* plane, float* dst, int oy) {
  constexpr bool kAverage = std::is_same_v<Op, SumPoolQ>;
  alignas(16) float buf[kBuffer];
  const PoolWindow wy = pool_window(oy, g.sh, g.kh, g.pad_top, g.pad_bottom, g.in_h);
  const int rows = wy.end - wy.begin;
  const float* src = plane + static_cast<size_t>(wy.begin) * g.in_w;
  const long long cy = g.count_include_pad ? wy.padded : rows;
  const float interior = 1.f / static_cast<float>(cy * g.kw);
  for (int ox0 = 0; ox0 < g.out_w; ox0 += kStrip) {
    const int n = std::min(kStrip, g.out_w - ox0);
    const int len = SW * static_cast<int>(round_up4(n)) + g.kw + 4;
    // buf[j] is input column x_first + j; columns outside [0, in_w) are padding.
    const long long x_first = static_cast<long long>(ox0) * SW - g.pad_left;
    const int j0 = static_cast<int>(std::clamp<long long>(-x_first, 0, len));
    const int j1 = static_cast<int>(std::clamp<long long>(g.in_w - x_first, j0, len));
    pool_vertical_q<Op>(src + (x_first + j0), g.in_w, rows, buf + j0, j1 - j0);
    std::fill(buf, buf + j0, Op::kIdentity);
    std::fill(buf + j1, buf + len, Op::kIdentity);
    float* out = dst + ox0;
    for (int j = 0; j < n; j += 4) {
      float32x4_t v = pool_horizontal4_q<Op, KW, SW>(buf + j * SW, g.kw);
      if constexpr (kAverage) v = vmulq_f32(v, inverse_counts(g, ox0 + j, n - j, cy, interior));
      if (n - j >= 4) vst1q_f32(out + j, v);
      else store_partial(out + j, v, static_cast<size_t>(n - j));
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

bool supports(const PoolGeometry& g) {
  return g.planar() && !g.global && (g.sw == 1 || g.sw == 2) && g.kw >= 1 && g.kw <= kMaxKw && g.kh >= 1 &&
         g.sh >= 1 && g.pad_left >= 0 && g.pad_top >= 0 && g.out_w >= 1 && g.out_h >= 1;
}

size_t no_workspace(const PoolGeometry&) { return 0; }

void run(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const RowFn row = g.pool == fb::PoolType::Average ? row_for<SumPoolQ>(g) : row_for<MaxPoolQ>(g);
  const long long items = static_cast<long long>(g.channels) * g.out_h;
  const size_t out_plane_row = static_cast<size_t>(g.out_w);
#pragma omp parallel for num_threads(ctx.num_threads) schedule(static)
  for (long long it = 0; it < items; ++it) {
    const int q = static_cast<int>(it / g.out_h), oy = static_cast<int>(it % g.out_h);
    row(g, in + q * in_cstep, out + q * out_cstep + oy * out_plane_row, oy);
  }
}

}  // namespace

const PoolKernel kF32Pool2d_Neon = {
    "f32_pool2d_neon", Isa::kNeon, supports, no_workspace, no_workspace, 1e-4, run,
};

}  // namespace kestrel::kernels::arm
