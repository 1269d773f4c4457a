#include "kernels/fc_kernels.h"

#include "kernels/reference_loops.h"

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
  fc_reference_loop(g, weight, bias, in, in_cstep, out, num_threads, F32Accumulation{g.act});
}

void fc_reference_halves(const FcGeometry& g, const uint16_t* weight, const float* bias, const float* in,
                         size_t in_cstep, float* out, const KernelContext& ctx) {
  fc_reference_loop(g, HalfRows{weight, &ctx}, bias, in, in_cstep, out, ctx.num_threads, F32Accumulation{g.act});
}

size_t fc_reference_halves_scratch(const FcGeometry& g) { return g.num_input() * sizeof(float); }

}  // namespace kestrel::kernels
