#include "kernels/half_kernels.h"

#include "core/half.h"

namespace kestrel::kernels {
namespace {

void to_half_ref(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
}
void to_float_ref(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}
void round_ref(const float* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = half_to_float(float_to_half(src[i]));
}

}  // namespace

const HalfKernel kHalfReference = {"f16_convert_ref", Isa::kRef, to_half_ref, to_float_ref, round_ref, nullptr, nullptr};

const std::vector<const HalfKernel*>& half_kernels() {
  static const std::vector<const HalfKernel*> all = detail::arch_half_kernels();
  return all;
}

const HalfKernel* select_half_kernel(Isa isa) {
  for (const HalfKernel* k : half_kernels()) {
    if (isa_allows(isa, k->isa)) return k;
  }
  return nullptr;
}

const HalfKernel& active_half_kernel() {
  static const HalfKernel* k = select_half_kernel(active_isa());
  return k ? *k : kHalfReference;
}

}  // namespace kestrel::kernels
