// The ISA-free parts of the x86 planar 3x3 depthwise convolution (f32_dwconv3x3_x86.h):
// which geometries it claims, the packed weights and the per-thread scratch plan. Built
// without ISA flags and shared by the AVX2 and AVX-512 kernels (and by the flat one).
#include <algorithm>

#include "x86/f32_dwconv3x3_x86.h"

namespace kestrel::kernels::x86::dwconv3x3 {
namespace {

int round_up(int x, int m) { return (x + m - 1) / m * m; }

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

bool supports(const ConvGeometry& g) { return dwconv::supports_window(g, 3); }

size_t packed_floats(const ConvGeometry& g) { return static_cast<size_t>(g.out_c) * kPackFloats; }

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  for (int c = 0; c < g.out_c; ++c) {
    float* dst = packed + static_cast<size_t>(c) * kPackFloats;
    std::fill(dst, dst + kPackFloats, 0.f);
    std::copy(weight + static_cast<size_t>(c) * 9, weight + static_cast<size_t>(c) * 9 + 9, dst);
    dst[9] = bias ? bias[c] : 0.f;
  }
}

size_t thread_workspace(const ConvGeometry& g) { return make_plan(g).floats_per_thread * sizeof(float); }

}  // namespace kestrel::kernels::x86::dwconv3x3
