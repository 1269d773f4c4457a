// The inner-product (fully connected) kernel family: y = act(W x + b), a GEMV. One
// registry that the InnerProduct layer (at Net load), the kernel tests and the
// benchmarks read; the layer keeps fc_reference for everything no kernel claims.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "layers/activation.h"

namespace kestrel::kernels {

// The input is read in logical order as in_planes runs of in_plane contiguous
// floats (a 3-D or 4-D blob's channels, cstep apart; one run for 1-D and 2-D
// blobs). Weights are [num_output][num_input()], row-major.
struct FcGeometry {
  int in_planes = 1;
  size_t in_plane = 0;
  int num_output = 0;
  bool bias = false;
  ActivationSpec act;
  // The weights are IEEE halves exactly: a kernel with FcKernel::half_weights may keep
  // them so (ConvGeometry::half_weights).
  bool half_weights = false;

  size_t num_input() const { return static_cast<size_t>(in_planes) * in_plane; }
  double flops() const { return 2.0 * num_output * static_cast<double>(num_input()); }
};

struct FcKernel {
  const char* name;  // "f32_gemv_8x4_neon"
  Isa isa;
  bool (*supports)(const FcGeometry& g);
  // Floats of packed weights (bias included) for `g`.
  size_t (*packed_floats)(const FcGeometry& g);
  // Writes the packed form of `weight` and `bias` (nullptr when !g.bias) into
  // `packed` (packed_floats(g) floats, kAlignment-aligned).
  void (*pack)(const FcGeometry& g, const float* weight, const float* bias, float* packed);
  size_t (*workspace_bytes)(const FcGeometry& g);
  size_t (*workspace_per_thread_bytes)(const FcGeometry& g);
  // max |got - ref| <= tolerance * max(1, max |ref|).
  double tolerance;
  // out[o] for o < num_output from the input planes at in + p * in_cstep. The result
  // must not depend on ctx.num_threads.
  void (*run)(const FcGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              const KernelContext& ctx);
  // Keeps the weights as IEEE halves and widens them exactly as it loads them: results
  // equal to its fp32 twin's bit for bit, on geometries with FcGeometry::half_weights.
  bool half_weights = false;
};

// Every inner-product kernel compiled into this binary, in priority order.
const std::vector<const FcKernel*>& fc_kernels();

// The kernel the fast path uses for `g` under `isa`, or nullptr (reference code).
const FcKernel* select_fc_kernel(const FcGeometry& g, Isa isa);

// The reference: unpacked weights, one dot product per output in input order, then
// bias and activation; one output per OpenMP iteration.
void fc_reference(const FcGeometry& g, const float* weight, const float* bias, const float* in, size_t in_cstep,
                  float* out, int num_threads);

// fc_reference on weights kept as IEEE halves: each output's row widened into the
// thread's scratch (fc_reference_halves_scratch bytes per thread) first; the same bits.
void fc_reference_halves(const FcGeometry& g, const uint16_t* weight, const float* bias, const float* in,
                         size_t in_cstep, float* out, const KernelContext& ctx);
size_t fc_reference_halves_scratch(const FcGeometry& g);

namespace detail {
// Defined once per architecture (src/arm/registry_arm.cpp, src/x86/registry_x86.cpp,
// src/kernels/registry_generic.cpp): that architecture's kernels in priority order.
std::vector<const FcKernel*> arch_fc_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
