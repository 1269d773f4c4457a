#include "kernels/pool_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kestrel::kernels {
namespace {

float window_max(const float* src, int iw, const PoolWindow& wy, const PoolWindow& wx) {
  float m = -std::numeric_limits<float>::infinity();
  for (int y = wy.begin; y < wy.end; ++y) {
    const float* row = src + static_cast<size_t>(y) * iw;
    // NaN propagates (as in PyTorch): a NaN input must not turn into a plausible value.
    for (int x = wx.begin; x < wx.end; ++x) m = (std::isnan(row[x]) || row[x] > m) ? row[x] : m;
  }
  return m;
}

float window_average(const float* src, int iw, const PoolWindow& wy, const PoolWindow& wx, bool include_pad) {
  float sum = 0.f;
  for (int y = wy.begin; y < wy.end; ++y) {
    const float* row = src + static_cast<size_t>(y) * iw;
    for (int x = wx.begin; x < wx.end; ++x) sum += row[x];
  }
  const long long count =
      include_pad ? wy.padded * wx.padded : static_cast<long long>(wy.end - wy.begin) * (wx.end - wx.begin);
  return sum / static_cast<float>(count);
}

}  // namespace

PoolWindow pool_window(int o, int stride, int kernel, int pad_begin, int pad_end, int in) {
  const long long start = static_cast<long long>(o) * stride - pad_begin;
  // Caffe clips the window to the padded input: in ceil mode the last one may
  // reach past the end padding, and those cells do not count even as padding.
  const long long padded_end = std::min(start + kernel, static_cast<long long>(in) + pad_end);
  PoolWindow w;
  w.padded = padded_end - start;
  w.begin = static_cast<int>(std::max(start, 0LL));
  w.end = static_cast<int>(std::min(padded_end, static_cast<long long>(in)));
  return w;
}

const std::vector<const PoolKernel*>& pool_kernels() {
  static const std::vector<const PoolKernel*> all = detail::arch_pool_kernels();
  return all;
}

const PoolKernel* select_pool_kernel(const PoolGeometry& g, Isa isa) {
  // A blocked geometry goes only to kernels of its lanes, as convolutions do.
  const int lanes = g.planar() ? 0 : std::max(g.in_pack, g.out_pack);
  for (const PoolKernel* k : pool_kernels()) {
    if (lanes != 0 && k->blocked_lanes != lanes) continue;
    if (k->f16 != g.f16 || (k->f16 && !active_has(Feature::kFp16Arith))) continue;
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

void pool_reference(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                    int num_threads) {
  const bool avg = g.pool == fb::PoolType::Average;
#pragma omp parallel for num_threads(num_threads)
  for (int q = 0; q < g.channels; ++q) {
    const float* src = in + q * in_cstep;
    float* dst = out + q * out_cstep;
    for (int oy = 0; oy < g.out_h; ++oy) {
      const PoolWindow wy = pool_window(oy, g.sh, g.kh, g.pad_top, g.pad_bottom, g.in_h);
      for (int ox = 0; ox < g.out_w; ++ox) {
        const PoolWindow wx = pool_window(ox, g.sw, g.kw, g.pad_left, g.pad_right, g.in_w);
        dst[static_cast<size_t>(oy) * g.out_w + ox] =
            avg ? window_average(src, g.in_w, wy, wx, g.count_include_pad) : window_max(src, g.in_w, wy, wx);
      }
    }
  }
}

}  // namespace kestrel::kernels
