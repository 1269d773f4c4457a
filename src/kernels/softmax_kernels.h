// The softmax kernel family (Softmax and LogSoftmax along one axis): one registry
// that the Softmax layer (at Net load), the kernel tests and the benchmarks read;
// softmax_reference is the layer's fallback and the tests' oracle.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_context.h"

namespace kestrel::kernels {

// A blob seen as [outer0][outer1][len][inner]: `len` values along the softmax axis,
// `inner` contiguous values after it (1 when the axis is the innermost), and up to
// two levels of independent lines before it. Every blob layout reduces to this: the
// axes inside a channel are dense and coalesce, and only the channel axis has its
// own stride.
struct SoftmaxGeometry {
  int outer0 = 1, outer1 = 1, len = 1, inner = 1;
  bool log = false;  // LogSoftmax
};

// Strides in floats of the outer levels and of the softmax axis (the inner axis
// has stride 1); they hold the Mats' cstep, so they are given at run time.
struct SoftmaxStrides {
  size_t outer0 = 0, outer1 = 0, axis = 1;
};

struct SoftmaxKernel {
  const char* name;  // "f32_softmax_neon"
  Isa isa;
  bool (*supports)(const SoftmaxGeometry& g);
  // max |got - ref| <= tolerance * max(1, max |ref|).
  double tolerance;
  // The whole output; in may equal out (same strides). The result must not depend
  // on ctx.num_threads.
  void (*run)(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
              const SoftmaxStrides& os, const KernelContext& ctx);
};

const std::vector<const SoftmaxKernel*>& softmax_kernels();
const SoftmaxKernel* select_softmax_kernel(const SoftmaxGeometry& g, Isa isa);

// The reference: one line per OpenMP iteration; subtracts the line's maximum (fmax,
// ignoring NaN) before exp, sums in order and divides (LogSoftmax: x - max - log sum).
void softmax_reference(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
                       const SoftmaxStrides& os, int num_threads);

namespace detail {
// Defined once per architecture (src/arm/registry_arm.cpp, src/x86/registry_x86.cpp,
// src/kernels/registry_generic.cpp): that architecture's kernels in priority order.
std::vector<const SoftmaxKernel*> arch_softmax_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
