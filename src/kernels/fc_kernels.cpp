#include "kernels/fc_kernels.h"

namespace kestrel::kernels {

const std::vector<const FcKernel*>& fc_kernels() {
  static const std::vector<const FcKernel*> all = detail::arch_fc_kernels();
  return all;
}

const FcKernel* select_fc_kernel(const FcGeometry& g, Isa isa) {
  for (const FcKernel* k : fc_kernels()) {
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

void fc_reference(const FcGeometry& g, const float* weight, const float* bias, const float* in, size_t in_cstep,
                  float* out, int num_threads) {
  const size_t num_input = g.num_input();
#pragma omp parallel for num_threads(num_threads)
  for (int o = 0; o < g.num_output; ++o) {
    const float* w = weight + static_cast<size_t>(o) * num_input;
    float sum = 0.f;
    for (int q = 0; q < g.in_planes; ++q) {
      const float* x = in + q * in_cstep;
      for (size_t i = 0; i < g.in_plane; ++i) sum += w[i] * x[i];
      w += g.in_plane;
    }
    out[o] = activate(bias ? sum + bias[o] : sum, g.act);
  }
}

}  // namespace kestrel::kernels
