#include "kernels/conv_kernels.h"

#include <algorithm>

#include "layers/layers.h"

namespace kestrel::kernels {

double ConvGeometry::flops() const {
  return 2.0 * out_c * out_h * out_w * (static_cast<double>(in_c) / group) * kh * kw;
}

const std::vector<const ConvKernel*>& conv_kernels() {
  static const std::vector<const ConvKernel*> all = detail::arch_conv_kernels();
  return all;
}

const ConvKernel* select_conv_kernel(const ConvGeometry& g, Isa isa) {
  // A blocked geometry goes only to kernels of its lanes (ConvGeometry::in_pack): the
  // planar kernels' supports() look at the shapes alone.
  const int lanes = g.planar() ? 0 : std::max(g.in_pack, g.out_pack);
  for (const ConvKernel* k : conv_kernels()) {
    if (lanes != 0 && k->blocked_lanes != lanes) continue;
    if (k->f16 != g.f16 || (k->f16 && !active_has(Feature::kFp16Arith))) continue;
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

void conv_reference(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                    size_t in_cstep, float* out, size_t out_cstep, int num_threads) {
  const int in_per_group = g.in_c / g.group, out_per_group = g.out_c / g.group;
  const size_t kernel_size = static_cast<size_t>(g.kh) * g.kw;
  const size_t plane = static_cast<size_t>(g.out_h) * g.out_w;
#pragma omp parallel for num_threads(num_threads)
  for (int oc = 0; oc < g.out_c; ++oc) {
    const int first_in = (oc / out_per_group) * in_per_group;
    const float* wk = weight + static_cast<size_t>(oc) * in_per_group * kernel_size;
    const float b = bias ? bias[oc] : 0.f;
    float* outp = out + oc * out_cstep;
    for (int oy = 0; oy < g.out_h; ++oy) {
      const int iy0 = oy * g.sh - g.pad_top;
      int ky0, ky1;
      layer_util::valid_taps(iy0, g.in_h, g.kh, g.dh, &ky0, &ky1);
      for (int ox = 0; ox < g.out_w; ++ox) {
        const int ix0 = ox * g.sw - g.pad_left;
        int kx0, kx1;
        layer_util::valid_taps(ix0, g.in_w, g.kw, g.dw, &kx0, &kx1);
        float sum = 0.f;
        for (int ic = 0; ic < in_per_group; ++ic) {
          const float* chan = in + (first_in + ic) * in_cstep;
          const float* wp = wk + static_cast<size_t>(ic) * kernel_size;
          for (int ky = ky0; ky < ky1; ++ky) {
            // Offsets stay signed: ix0 is negative in the left padding.
            const ptrdiff_t row = static_cast<ptrdiff_t>(iy0 + ky * g.dh) * g.in_w + ix0;
            const float* wrow = wp + static_cast<size_t>(ky) * g.kw;
            for (int kx = kx0; kx < kx1; ++kx) sum += wrow[kx] * chan[row + kx * g.dw];
          }
        }
        outp[static_cast<size_t>(oy) * g.out_w + ox] = sum + b;
      }
    }
    activate_inplace(outp, plane, g.act);
  }
}

}  // namespace kestrel::kernels
