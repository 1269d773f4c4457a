// The Winograd tile transforms of the pack4 kernel (src/arm/f32_winograd_tiles_neon.h
// with the F(6,3) and F(4,3) line pairs), one tile of 4 channels per loop turn, as the
// kernel runs them on tiles inside the map (no multiply-adds of the convolution: the
// few FMLAs are the transforms' own; reported for their cycles per tile).
#include "arm/f32_winograd43_transforms_neon.h"
#include "arm/f32_winograd63_transforms_neon.h"

namespace wino = kestrel::kernels::arm::wino;

template <class L>
void input_tiles(const float* in, size_t row, float* v, size_t xi_stride, int n) {
  for (int t = 0; t < n; ++t) {
    const float* rows[L::kAlpha];
    for (int r = 0; r < L::kAlpha; ++r) rows[r] = in + r * row + t * 4 * L::kOut;
    wino::input_tile<L>(rows, 0, L::kAlpha, v + 4 * t, xi_stride);
  }
}

template <class L>
void output_tiles(const float* m, size_t xi_stride, float32x4_t bias, float* out, size_t row, int n) {
  for (int t = 0; t < n; ++t) {
    float* o = out + t * 4 * L::kOut;
    wino::output_tile<L>(m + 4 * t, xi_stride, [&](int r, int c, float32x4_t y) {
      vst1q_f32(o + r * row + 4 * c, vmaxq_f32(vaddq_f32(y, bias), vdupq_n_f32(0.f)));
    });
  }
}

extern "C" void mca_winograd63_input(const float* in, size_t row, float* v, size_t xi_stride, int n) {
  input_tiles<kestrel::kernels::arm::wino63::Lines>(in, row, v, xi_stride, n);
}
extern "C" void mca_winograd63_output(const float* m, size_t xi_stride, const float* bias, float* out, size_t row,
                                      int n) {
  output_tiles<kestrel::kernels::arm::wino63::Lines>(m, xi_stride, vld1q_f32(bias), out, row, n);
}
extern "C" void mca_winograd43_input(const float* in, size_t row, float* v, size_t xi_stride, int n) {
  input_tiles<kestrel::kernels::arm::wino43::Lines>(in, row, v, xi_stride, n);
}
extern "C" void mca_winograd43_output(const float* m, size_t xi_stride, const float* bias, float* out, size_t row,
                                      int n) {
  output_tiles<kestrel::kernels::arm::wino43::Lines>(m, xi_stride, vld1q_f32(bias), out, row, n);
}
