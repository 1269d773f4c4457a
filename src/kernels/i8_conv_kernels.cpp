#include "kernels/i8_conv_kernels.h"

namespace kestrel::kernels {

const std::vector<const I8ConvKernel*>& i8_conv_kernels() {
  static const std::vector<const I8ConvKernel*> all = detail::arch_i8_conv_kernels();
  return all;
}

bool i8_kernel_runs(const I8ConvKernel& k) {
  return (!(k.needs & kI8NeedsDot8) || active_has(Feature::kDot8, k.isa)) &&
         (!(k.needs & kI8NeedsVbmi) || active_has(Feature::kVbmi, k.isa));
}

const I8ConvKernel* select_i8_conv_kernel(const ConvGeometry& g, Isa isa) {
  for (const I8ConvKernel* k : i8_conv_kernels()) {
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && i8_kernel_runs(*k) && k->supports(g)) return k;
  }
  return nullptr;
}

namespace {

void quantize_reference(const float* src, float* dst, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(quantize_i8(src[i], scale));
}

void dequantize_reference(const float* src, float* dst, size_t n, float a, float b, const ActivationSpec& act) {
  for (size_t i = 0; i < n; ++i) {
    const float scaled = src[i] * a;
    dst[i] = activate(scaled + b, act);
  }
}

const I8MapKernel kI8MapReference = {"i8_map_reference", Isa::kRef, quantize_reference, dequantize_reference,
                                     i8_add_reference, i8_sum_reference, i8_max_reference};

}  // namespace

const I8MapKernel& i8_map_kernel() {
  static const I8MapKernel* chosen = [] {
    for (const I8MapKernel* k : detail::arch_i8_map_kernels()) {
      if (isa_allows(active_isa(), k->isa)) return k;
    }
    return &kI8MapReference;
  }();
  return *chosen;
}

}  // namespace kestrel::kernels
