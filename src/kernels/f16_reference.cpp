#include "kernels/f16_reference.h"

#include "kernels/f16_arith.h"
#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel::kernels {

ActivationSpec f16_activation(const ActivationSpec& a) {
  ActivationSpec h = a;
  h.alpha = f16::round(a.alpha);
  h.beta = f16::round(a.beta);
  return h;
}

void conv_reference_f16(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                        size_t in_cstep, float* out, size_t out_cstep, int num_threads) {
  const int in_per_group = g.in_c / g.group, out_per_group = g.out_c / g.group;
  const size_t kernel_size = static_cast<size_t>(g.kh) * g.kw;
  const ActivationSpec act = f16_activation(g.act);
#pragma omp parallel for num_threads(num_threads)
  for (int oc = 0; oc < g.out_c; ++oc) {
    const int first_in = (oc / out_per_group) * in_per_group;
    const float* wk = weight + static_cast<size_t>(oc) * in_per_group * kernel_size;
    float* outp = out + oc * out_cstep;
    for (int oy = 0; oy < g.out_h; ++oy) {
      const int iy0 = oy * g.sh - g.pad_top;
      int ky0, ky1;
      layer_util::valid_taps(iy0, g.in_h, g.kh, g.dh, &ky0, &ky1);
      for (int ox = 0; ox < g.out_w; ++ox) {
        const int ix0 = ox * g.sw - g.pad_left;
        int kx0, kx1;
        layer_util::valid_taps(ix0, g.in_w, g.kw, g.dw, &kx0, &kx1);
        float acc = bias ? bias[oc] : 0.f;
        for (int ic = 0; ic < in_per_group; ++ic) {
          const float* chan = in + (first_in + ic) * in_cstep;
          const float* wp = wk + static_cast<size_t>(ic) * kernel_size;
          for (int ky = ky0; ky < ky1; ++ky) {
            const ptrdiff_t row = static_cast<ptrdiff_t>(iy0 + ky * g.dh) * g.in_w + ix0;
            const float* wrow = wp + static_cast<size_t>(ky) * g.kw;
            for (int kx = kx0; kx < kx1; ++kx) acc = f16::fma(wrow[kx], chan[row + kx * g.dw], acc);
          }
        }
        outp[static_cast<size_t>(oy) * g.out_w + ox] = f16::round(activate(acc, act));
      }
    }
  }
}

void fc_reference_f16(const FcGeometry& g, const float* weight, const float* bias, const float* in, size_t in_cstep,
                      float* out, int num_threads) {
  const size_t num_input = g.num_input();
  const ActivationSpec act = f16_activation(g.act);
#pragma omp parallel for num_threads(num_threads)
  for (int o = 0; o < g.num_output; ++o) {
    const float* w = weight + static_cast<size_t>(o) * num_input;
    float acc = bias ? bias[o] : 0.f;
    for (int q = 0; q < g.in_planes; ++q) {
      const float* x = in + q * in_cstep;
      for (size_t i = 0; i < g.in_plane; ++i) acc = f16::fma(w[i], x[i], acc);
      w += g.in_plane;
    }
    out[o] = f16::round(activate(acc, act));
  }
}

}  // namespace kestrel::kernels
