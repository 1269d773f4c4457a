// The ISA-free parts of the x86 3x3 depthwise convolution (f32_dwconv3x3_x86.h):
// which geometries it claims, the packed weights, the per-thread scratch plan and the
// activations that are not fused into the store. Built without ISA flags and shared
// by the AVX2 and AVX-512 kernels.
#include <algorithm>

#include "x86/f32_dwconv3x3_cvec_x86.h"

namespace kestrel::kernels::x86::dwconv3x3 {
namespace {

int round_up(int x, int m) { return (x + m - 1) / m * m; }

// Padding after the last input row/column that `out` outputs of stride s read.
long long pad_end(int in, int out, int s, int pad_begin) {
  return static_cast<long long>(out - 1) * s + 3 - in - pad_begin;
}

}  // namespace

Plan make_plan(const ConvGeometry& g) {
  Plan p;
  p.stride = g.sw;
  // A step reads whole vectors (up to 16 lanes) from x < round_up(out_w, 16), plus
  // kx / S <= 2 columns: one more line of 16 covers it.
  p.plane = round_up(g.out_w, 16) + 16;
  p.slot = p.plane * g.sw;
  p.used_w = std::min(g.in_w, (g.out_w - 1) * g.sw + 3 - g.pad_left);
  p.floats_per_thread = static_cast<size_t>(p.slot) * (1 + kRing);
  return p;
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

void activate_channel(float* p, size_t n, const ActivationSpec& act) { activate_inplace(p, n, act); }

CvecPlan make_cvec_plan(const ConvGeometry& g, int lanes) {
  CvecPlan p;
  p.lanes = lanes;
  p.groups = (g.in_c + lanes - 1) / lanes;
  // Whole chunks of `lanes` output pixels are computed (the stores keep the real ones).
  p.row_px = (round_up(g.out_w, lanes) - 1) * g.sw + 3;
  p.used_w = std::min(g.in_w, (g.out_w - 1) * g.sw + 3 - g.pad_left);
  p.slot = static_cast<size_t>(p.row_px) * lanes;
  p.stage_floats = static_cast<size_t>(round_up(g.out_w, lanes)) * lanes;
  p.floats_per_thread = p.slot * (1 + kCvecSlots) + kCvecMaxRows * p.stage_floats;
  return p;
}

bool supports_cvec(const ConvGeometry& g, int lanes) {
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
  if (!supports(g)) return false;
  if (!g.planar() && (!g.packs_within(lanes) || g.in_c % lanes != 0)) return false;
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

size_t cvec_packed_floats(const ConvGeometry& g, int lanes) {
  return static_cast<size_t>((g.out_c + lanes - 1) / lanes) * 10 * lanes;
}

void pack_cvec(const ConvGeometry& g, int lanes, const float* weight, const float* bias, float* packed) {
  std::fill(packed, packed + cvec_packed_floats(g, lanes), 0.f);
  for (int c = 0; c < g.out_c; ++c) {
    float* dst = packed + static_cast<size_t>(c / lanes) * 10 * lanes + c % lanes;
    for (int k = 0; k < 9; ++k) dst[k * lanes] = weight[static_cast<size_t>(c) * 9 + k];
    dst[9 * lanes] = bias ? bias[c] : 0.f;
  }
}

size_t cvec_thread_workspace(const ConvGeometry& g, int lanes) {
  return make_cvec_plan(g, lanes).floats_per_thread * sizeof(float);
}

}  // namespace kestrel::kernels::x86::dwconv3x3
