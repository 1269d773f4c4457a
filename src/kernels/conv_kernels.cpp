#include "kernels/conv_kernels.h"

#include <algorithm>

#include "kernels/reference_loops.h"

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
    if (k->bf16 && (!g.bf16 || !active_has(Feature::kBf16))) continue;
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

void conv_reference(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                    size_t in_cstep, float* out, size_t out_cstep, int num_threads) {
  conv_reference_loop(g, weight, bias, in, in_cstep, out, out_cstep, num_threads, F32Accumulation{g.act});
}

void conv_reference_halves(const ConvGeometry& g, const uint16_t* weight, const float* bias, const float* in,
                           size_t in_cstep, float* out, size_t out_cstep, const KernelContext& ctx) {
  conv_reference_loop(g, HalfRows{weight, &ctx}, bias, in, in_cstep, out, out_cstep, ctx.num_threads,
                      F32Accumulation{g.act});
}

size_t conv_reference_halves_scratch(const ConvGeometry& g) {
  return static_cast<size_t>(g.in_c / g.group) * g.kh * g.kw * sizeof(float);
}

}  // namespace kestrel::kernels
