// The ISA-free parts of the x86 depthwise kernels (f32_dwconv_x86.h) and of the K x K
// channel-vector kernel (f32_dwconv_cvec_x86.h): which geometries they claim, the packed
// weights, the per-thread scratch plan and the activations that are not fused into the
// store. Built without ISA flags and shared by the AVX2 and AVX-512 kernels.
#include <algorithm>

#include "x86/f32_dwconv_cvec_x86.h"

namespace kestrel::kernels::x86::dwconv {
namespace {

int round_up(int x, int m) { return (x + m - 1) / m * m; }

// Padding after the last input row/column that `out` outputs of stride s read.
long long pad_end(int in, int out, int s, int k, int pad_begin) {
  return static_cast<long long>(out - 1) * s + k - in - pad_begin;
}

}  // namespace

bool supports_window(const ConvGeometry& g, int k) {
  if (!g.is_depthwise() || g.in_c < 1 || g.kh != k || g.kw != k || g.dh != 1 || g.dw != 1) return false;
  if (g.sh != g.sw || (g.sh != 1 && g.sh != 2)) return false;
  if (g.in_h < 1 || g.in_w < 1 || g.out_h < 1 || g.out_w < 1) return false;
  if (g.pad_top < 0 || g.pad_top > k - 1 || g.pad_left < 0 || g.pad_left > k - 1) return false;
  // Any trailing padding up to k - 1; negative means trailing input rows no output reads.
  return pad_end(g.in_h, g.out_h, g.sh, k, g.pad_top) <= k - 1 && pad_end(g.in_w, g.out_w, g.sw, k, g.pad_left) <= k - 1;
}

size_t no_workspace(const ConvGeometry&) { return 0; }

void activate_channel(float* p, size_t n, const ActivationSpec& act) { activate_inplace(p, n, act); }

CvecPlan make_cvec_plan(const ConvGeometry& g, int lanes) {
  CvecPlan p;
  p.k = g.kh;
  p.lanes = lanes;
  p.groups = (g.in_c + lanes - 1) / lanes;
  // Whole chunks of `lanes` output pixels are computed (the stores keep the real ones).
  p.row_px = (round_up(g.out_w, lanes) - 1) * g.sw + p.k;
  p.used_w = std::min(g.in_w, (g.out_w - 1) * g.sw + p.k - g.pad_left);
  p.slot = static_cast<size_t>(p.row_px) * lanes;
  p.stage_floats = static_cast<size_t>(round_up(g.out_w, lanes)) * lanes;
  p.floats_per_thread = p.slot * (1 + cvec_slots(p.k)) + kCvecMaxRows * p.stage_floats;
  return p;
}

// The 3x3 claim leaves maps to the planar and flat kernels where those were faster;
// the other windows have no other kernel than the im2col SGEMM, which ran 5x5 layers
// at 2-5 GFLOP/s, so they claim every map.
bool supports_cvec(const ConvGeometry& g, int lanes, int k) {
  if (!supports_window(g, k)) return false;
  if (!g.planar() && (!g.packs_within(lanes) || g.in_c % lanes != 0)) return false;
  if (k != 3) return true;
  // Where it beat the planar and flat kernels (kestrel-microbench with
  // KESTREL_BENCH_KERNEL, 1 thread, AMD EPYC 2026-11-25), ms cvec / planar / flat:
  //   16 lanes: s2 to 7x7 0.025 / 0.066, to 14x14 0.034 / 0.066, to 28x28 0.065 / 0.091,
  //             to 56x56 0.134 / 0.135; s1 14x14 0.040 / 0.066 / 0.051, 28x28 0.082 / 0.092,
  //             56x56 0.152 / 0.150, 7x7 0.036 / 0.064 / 0.030;
  //    8 lanes: s2 0.033-0.114 / 0.113-0.159 at every size; s1 28x28 0.107 / 0.142,
  //             56x56 0.137 / 0.146, 112x112 0.133 / 0.131, 14x14 0.079 / 0.097 / 0.069.
  // The stride-1 maps the flat kernel computes stay with it. On an Intel Xeon (full
  // width AVX-512, 2026-11-25), 16 lanes at 56x56x128 stride 1: 0.146 / 0.148 ms at 1
  // thread, 0.069 / 0.121 at 2 (the planar kernel's row bands scale poorly there), but
  // the planar kernel kept 112-pixel rows: 0.117 / 0.165 (s1) and 0.151 / 0.171 (s2 to
  // 56) at 1 thread.
  // A blocked input is read in place and a blocked output written in place, with no
  // transposes: then the kernel takes 7x7 maps, and stride 2 up to 64 output pixels.
  const bool flat_map = g.sw == 1 && g.out_w <= (lanes == 16 ? 8 : 16) && g.planar();
  // Rows wider than 64 only between blocked maps (MobileNet v1's 112x112 layer: 0.073 ms
  // blocked against 0.136 planar, kestrel-microbench, 1 thread). Read blocked and written
  // planar (0.102 ms), MobileNet v2's 112x112 layer ran no faster in the network, and
  // the 1x1 layer after it slower at 2 threads (AMD EPYC, 2026-11-26).
  const int widest = g.sw == 1 && g.in_pack != 1 && g.out_pack != 1 ? 128
                     : lanes == 16 && g.sw == 2 && g.out_pack == 1 ? 32
                                                                   : 64;
  return !flat_map && g.out_w <= widest;
}

InPlaceCols in_place_cols(const ConvGeometry& g, const CvecPlan& p) {
  InPlaceCols c;
  const int s = g.sw, k = p.k;
  c.x_lo = (g.pad_left + s - 1) / s;
  c.x_hi = std::min(g.out_w, g.in_w + g.pad_left >= k ? (g.in_w + g.pad_left - k) / s + 1 : 0);
  if (c.x_lo >= c.x_hi) {  // no pixel in place: all from the ring
    c.x_lo = c.x_hi = 0;
    c.copy_lo = c.copy_hi = p.used_w;
    return c;
  }
  c.copy_lo = c.x_lo > 0 ? std::min(p.used_w, (c.x_lo - 1) * s + k - g.pad_left) : 0;
  c.copy_hi = c.x_hi < g.out_w ? std::max(0, c.x_hi * s - g.pad_left) : p.used_w;
  return c;
}

size_t cvec_packed_floats(const ConvGeometry& g, int lanes) {
  return static_cast<size_t>((g.out_c + lanes - 1) / lanes) * (g.kh * g.kw + 1) * lanes;
}

void pack_cvec(const ConvGeometry& g, int lanes, const float* weight, const float* bias, float* packed) {
  const int taps = g.kh * g.kw;
  std::fill(packed, packed + cvec_packed_floats(g, lanes), 0.f);
  for (int c = 0; c < g.out_c; ++c) {
    float* dst = packed + static_cast<size_t>(c / lanes) * (taps + 1) * lanes + c % lanes;
    for (int k = 0; k < taps; ++k) dst[k * lanes] = weight[static_cast<size_t>(c) * taps + k];
    dst[taps * lanes] = bias ? bias[c] : 0.f;
  }
}

size_t cvec_thread_workspace(const ConvGeometry& g, int lanes) {
  return make_cvec_plan(g, lanes).floats_per_thread * sizeof(float);
}

}  // namespace kestrel::kernels::x86::dwconv
