// The Interp (resize) kernel family: one registry that the Interp layer (at Net load),
// the kernel tests and the benchmarks read. The layer keeps the reference loops
// (interp_reference, and interp_reference_f16 at Precision::kFp16 on the reference
// kernel set) for everything no kernel claims.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "kestrel_generated.h"

namespace kestrel::kernels {

// Where output position i reads along one axis: a blend of in[lo] and in[hi], weight_hi
// on in[hi]. Nearest sets lo == hi and weight_hi = 0.
struct InterpTap {
  int lo = 0, hi = 0;
  float weight_hi = 0.f;
};

// PyTorch's F.interpolate index arithmetic for output position i of an axis resized
// from `in` to `out` (kestrel.fbs InterpParam says which mapping each option means), in
// float as PyTorch's CPU kernels compute it, so that nearest picks the same pixel where
// i * in / out lands on an integer.
InterpTap interp_tap(fb::InterpMode mode, bool align_corners, fb::InterpCoords coords, int i, int in, int out);

// A resize fully resolved at prepare(): extents and the taps of every output row and
// column (owned by the layer; they outlive the geometry's use).
struct InterpGeometry {
  int channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  bool bilinear = false;                // else nearest: out = in[rows[y].lo][columns[x].lo]
  const InterpTap* rows = nullptr;     // out_h taps: output row y reads input rows lo, hi
  const InterpTap* columns = nullptr;  // out_w taps: output column x reads columns lo, hi
  // The operands' layouts, as PoolGeometry's: 1 = planar, W = blocked by W channels.
  int in_pack = 1, out_pack = 1;
  // Operands are IEEE halves (maps of halves between fp16 layers): only kernels whose
  // InterpKernel::f16 is set claim it.
  bool f16 = false;

  bool planar() const { return in_pack == 1 && out_pack == 1; }
};

// Operands: channels planes of in_h x in_w at in + c * in_cstep, out_h x out_w at out +
// c * out_cstep; blocked (pack W): channels [W * j, W * j + W) at in + j * in_cstep,
// pixel p's W values at + p * W (conv_kernels.h's layout). cstep counts 4-byte units.
struct InterpKernel {
  const char* name;  // "f16_interp_pack8_neonfp16"
  Isa isa;
  bool (*supports)(const InterpGeometry& g);
  // Computes the whole output. The result must not depend on ctx.num_threads.
  void (*run)(const InterpGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
              const KernelContext& ctx);
  // W if run() takes blocked operands of W lanes (in_pack = out_pack = W); 0: planar.
  int blocked_lanes = 0;
  // A kernel for halves (InterpGeometry::f16), run only where the CPU has fp16
  // arithmetic (Feature::kFp16Arith): `in` and `out` point at IEEE halves, the csteps
  // still count 4-byte units. Its results are interp_reference_f16's, bit for bit.
  bool f16 = false;
};

// Every Interp kernel compiled into this binary, in priority order.
const std::vector<const InterpKernel*>& interp_kernels();

// The kernel the fast path uses for `g` under `isa` (for a blocked `g`, one whose
// blocked_lanes are its packs), or nullptr (reference code).
const InterpKernel* select_interp_kernel(const InterpGeometry& g, Isa isa);

// The fp32 reference, planar: top = r0[lo] + wx * (r0[hi] - r0[lo]), bottom likewise
// on row hi, out = top + wy * (bottom - top), for nearest taps too. One channel per
// OpenMP iteration.
void interp_reference(const InterpGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                      int num_threads);

// Its fp16 twin, planar, on halves held in floats: binary16 arithmetic, each operation
// rounded once, the weights rounded to halves (interp_kernels.cpp gives the order and
// the NaN rules). Nearest copies. The oracle of the fp16 Interp kernels.
void interp_reference_f16(const InterpGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                          int num_threads);

namespace detail {
// The architecture's Interp kernels in priority order (src/arm/registry_arm.cpp; none
// elsewhere, interp_kernels.cpp).
std::vector<const InterpKernel*> arch_interp_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
