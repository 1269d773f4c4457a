// The pooling kernel family: one registry that the Pooling layer (at Net load), the
// kernel tests and the benchmarks read. The layer keeps the reference loops
// (pool_reference) for everything no kernel claims and for the reference kernel set.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "layers/activation.h"

namespace kestrel::kernels {

// A pooling fully resolved at prepare(): extents, and the padding after pad_mode.
// Windows follow Caffe: window o of an axis starts at o * stride - pad_begin and is
// clipped to the padded input [-pad_begin, in + pad_end) (in ceil mode the last one
// may reach past it); an average divides by the clipped window's size when
// count_include_pad, else by the number of input cells it covers.
struct PoolGeometry {
  int channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  fb::PoolType pool = fb::PoolType::Max;
  bool count_include_pad = true;
  // One window over each whole plane: kh = in_h, kw = in_w, stride 1, no padding,
  // a 1x1 output.
  bool global = false;
  // The operands' layouts (see PoolKernel::run), as ConvGeometry's: 1 = planar, W =
  // blocked by W channels (ncnn's elempack). Only a kernel whose blocked_lanes is W is
  // ever asked about a blocked geometry.
  int in_pack = 1, out_pack = 1;
  // Operands are IEEE halves (Option::precision kFp16 where the CPU has fp16
  // arithmetic, maps of halves between such layers): only kernels whose PoolKernel::f16
  // is set claim it.
  bool f16 = false;

  bool planar() const { return in_pack == 1 && out_pack == 1; }
};

// Operands: channels planes of in_h x in_w floats at in + c * in_cstep, and of
// out_h x out_w at out + c * out_cstep. Blocked (pack W, channels a multiple of W; a
// Mat with elempack W): channels [W * j, W * j + W) at in + j * in_cstep, pixel-major,
// pixel p's W values at + p * W (conv_kernels.h's layout).
struct PoolKernel {
  const char* name;  // "f32_pool2d_neon"
  Isa isa;
  bool (*supports)(const PoolGeometry& g);
  size_t (*workspace_bytes)(const PoolGeometry& g);
  size_t (*workspace_per_thread_bytes)(const PoolGeometry& g);
  // max |got - ref| <= tolerance * max(1, max |ref|): maxima are exact, averages
  // sum in another order.
  double tolerance;
  // Computes the whole output. The result must not depend on ctx.num_threads.
  void (*run)(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
              const KernelContext& ctx);
  // W if run() takes blocked operands of W lanes (in_pack / out_pack = W, where
  // supports() says so) with results bit-identical to those of the planar kernel that
  // select_pool_kernel picks for the same geometry made planar; 0: planar only (and
  // supports() refuses blocked geometries).
  int blocked_lanes = 0;
  // A kernel for halves (PoolGeometry::f16), run only where the CPU has fp16 arithmetic
  // (kernels/isa.h Feature::kFp16Arith): `in` and `out` point at IEEE halves, in_cstep /
  // out_cstep still count 4-byte units (a Mat's cstep). Its results are pool_reference's
  // on the widened halves, rounded to halves (core/half.h float_to_half), bit for bit.
  bool f16 = false;
};

// Every pooling kernel compiled into this binary, in priority order.
const std::vector<const PoolKernel*>& pool_kernels();

// The kernel the fast path uses for `g` under `isa` (for a blocked `g`, one whose
// blocked_lanes are its packs), or nullptr (reference code).
const PoolKernel* select_pool_kernel(const PoolGeometry& g, Isa isa);

// The reference: any geometry, plain loops, one channel per OpenMP iteration. Max
// propagates NaN (the window's last one; else its first largest value, from -inf);
// average sums row by row from +0 and divides.
void pool_reference(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
                    int num_threads);

// One axis of one window: input cells [begin, end) and the size of the window
// clipped to the padded input (the count_include_pad divisor).
struct PoolWindow {
  int begin, end;
  long long padded;
};
PoolWindow pool_window(int o, int stride, int kernel, int pad_begin, int pad_end, int in);

namespace detail {
// Defined once per architecture (src/arm/registry_arm.cpp, src/x86/registry_x86.cpp,
// src/kernels/registry_generic.cpp): that architecture's kernels in priority order.
std::vector<const PoolKernel*> arch_pool_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
