#include "kernels/softmax_kernels.h"

#include <cmath>

namespace kestrel::kernels {
namespace {

// Subtracting the maximum keeps exp() from overflowing; each input is read before
// the output at the same position is written, so src may equal dst.
void softmax_line(const float* src, size_t istep, float* dst, size_t ostep, int len) {
  float m = src[0];
  for (int i = 1; i < len; ++i) m = std::fmax(m, src[i * istep]);
  float sum = 0.f;
  for (int i = 0; i < len; ++i) {
    const float e = std::exp(src[i * istep] - m);
    dst[i * ostep] = e;
    sum += e;
  }
  for (int i = 0; i < len; ++i) dst[i * ostep] /= sum;
}

// The sum is taken before anything is written, so src may equal dst here too.
void log_softmax_line(const float* src, size_t istep, float* dst, size_t ostep, int len) {
  float m = src[0];
  for (int i = 1; i < len; ++i) m = std::fmax(m, src[i * istep]);
  float sum = 0.f;
  for (int i = 0; i < len; ++i) sum += std::exp(src[i * istep] - m);
  const float shift = m + std::log(sum);
  for (int i = 0; i < len; ++i) dst[i * ostep] = src[i * istep] - shift;
}

}  // namespace

const std::vector<const SoftmaxKernel*>& softmax_kernels() {
  static const std::vector<const SoftmaxKernel*> all = detail::arch_softmax_kernels();
  return all;
}

const SoftmaxKernel* select_softmax_kernel(const SoftmaxGeometry& g, Isa isa) {
  for (const SoftmaxKernel* k : softmax_kernels()) {
    if (isa_allows(isa, k->isa) && k->isa != Isa::kRef && k->supports(g)) return k;
  }
  return nullptr;
}

void softmax_reference(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
                       const SoftmaxStrides& os, int num_threads) {
  const long long lines = static_cast<long long>(g.outer0) * g.outer1 * g.inner;
#pragma omp parallel for num_threads(num_threads)
  for (long long l = 0; l < lines; ++l) {
    const size_t j = static_cast<size_t>(l % g.inner);
    const size_t o1 = static_cast<size_t>(l / g.inner % g.outer1);
    const size_t o0 = static_cast<size_t>(l / g.inner / g.outer1);
    const float* src = in + o0 * is.outer0 + o1 * is.outer1 + j;
    float* dst = out + o0 * os.outer0 + o1 * os.outer1 + j;
    if (g.log) {
      log_softmax_line(src, is.axis, dst, os.axis, g.len);
    } else {
      softmax_line(src, is.axis, dst, os.axis, g.len);
    }
  }
}

}  // namespace kestrel::kernels
