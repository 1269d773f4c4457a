// The convolution kernel family: one registry that the Convolution layer (at Net
// load), the kernel tests and the benchmarks all read. A kernel declares which
// geometries it computes, packs the weights once, and runs; the layer keeps the
// reference loop (conv_reference) for everything no kernel claims.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "layers/activation.h"

namespace kestrel::kernels {

// A convolution fully resolved at prepare(): input and output extents, padding after
// pad_mode, and the fused activation. Weights are [out_c][in_c / group][kh][kw].
struct ConvGeometry {
  int in_c = 0, in_h = 0, in_w = 0;
  int out_c = 0, out_h = 0, out_w = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int pad_top = 0, pad_left = 0;  // the bottom/right padding follows from out_h/out_w
  int group = 1;
  bool bias = false;
  ActivationSpec act;
  // The operands' layouts (see ConvKernel::run): 1 = planar, W = blocked by W channels
  // (ONNX Runtime's NCHWc, ncnn's elempack). Only a kernel whose blocked_lanes is W is
  // ever asked about a blocked geometry.
  int in_pack = 1, out_pack = 1;
  // Operands and weights are halves and the arithmetic is fp16's (Option::precision
  // kFp16 where the CPU has it): only kernels whose ConvKernel::f16 is set claim it.
  bool f16 = false;
  // The weights are IEEE halves exactly (an F16 model's, or rounded for an fp16 layer):
  // a kernel whose ConvKernel::half_weights is set may keep them as halves, half the
  // memory, widening them as it loads them.
  bool half_weights = false;
  // bf16 arithmetic is allowed (Option::precision kBf16): the pointwise layers that
  // bf16_pointwise() names run in it where the CPU has AVX512-BF16 (ConvKernel::bf16).
  bool bf16 = false;

  bool is_depthwise() const { return group == in_c && group == out_c; }
  // 1x1, stride 1, no padding: output pixel p is input pixel p (any group count), so a
  // kernel can read the input's rows in place.
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && pad_top == 0 && pad_left == 0 && out_h == in_h &&
           out_w == in_w;
  }
  bool planar() const { return in_pack == 1 && out_pack == 1; }
  // Each operand planar or blocked by `lanes`.
  bool packs_within(int lanes) const {
    return (in_pack == 1 || in_pack == lanes) && (out_pack == 1 || out_pack == lanes);
  }
  double flops() const;  // 2 * multiply-adds (for benchmarks)
};

// Operands: `in` is in_c channels of in_h x in_w floats, channel c at in + c * in_cstep;
// `out` likewise with out_cstep. Both are kAlignment-aligned per channel, and a
// kernel may read (never write) up to kOverreadBytes past any channel's last value.
// Blocked (pack W, channels a multiple of W; a Mat with elempack W): channels
// [W * j, W * j + W) at in + j * in_cstep, pixel-major: pixel p's W values at + p * W,
// so a block of W channels is one contiguous run of pixel vectors.
struct ConvKernel {
  const char* name;  // what it computes, its tile and ISA: "f32_conv1x1_8x8_neon"
  Isa isa;
  // True if this kernel computes `g` (including its activation) within tolerance.
  bool (*supports)(const ConvGeometry& g);
  // Floats of packed weights (bias included) for `g`.
  size_t (*packed_floats)(const ConvGeometry& g);
  // Writes the packed form of `weight` and `bias` (nullptr when !g.bias) into
  // `packed` (packed_floats(g) floats, kAlignment-aligned).
  void (*pack)(const ConvGeometry& g, const float* weight, const float* bias, float* packed);
  // Shared scratch bytes and per-thread scratch bytes run() needs (may be 0).
  size_t (*workspace_bytes)(const ConvGeometry& g);
  size_t (*workspace_per_thread_bytes)(const ConvGeometry& g);
  // Largest error the tests accept: max |got - ref| <= tolerance * max(1, max |ref|)
  // (1e-4 for direct summation; Winograd transforms round more).
  double tolerance;
  // Computes the whole output. The result must not depend on ctx.num_threads.
  void (*run)(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx);
  // W if run() also takes blocked operands of W lanes (in_pack / out_pack = W, where
  // supports() says so), with the same packed weights and results bit-identical to the
  // planar run; 0: planar only.
  int blocked_lanes = 0;
  // An fp16 kernel (ConvGeometry::f16), run only where the CPU has fp16 arithmetic
  // (kernels/isa.h Feature::kFp16Arith). Its operands are IEEE halves: `in` and `out`
  // point at them, in_cstep / out_cstep still count 4-byte units (a Mat's cstep), and
  // pack() reads fp32 weights that hold halves and writes halves (packed_floats(g)
  // counts 4-byte units). Its results equal conv_reference_f16's bit for bit.
  bool f16 = false;
  // Keeps the weights as IEEE halves (packed_floats(g) counts 4-byte units) and widens
  // them exactly as it loads them: the twin of an fp32 kernel with the same results
  // bit for bit, claiming only geometries with ConvGeometry::half_weights.
  bool half_weights = false;
  // bf16 arithmetic on fp32 operands: inputs and weights rounded to bf16, pairs of
  // products summed in fp32 (vdpbf16ps). Claims only bf16_pointwise() geometries with
  // ConvGeometry::bf16, run only where the CPU has Feature::kBf16; results equal
  // conv_reference_bf16's bit for bit, but for the exp- and erf-based activations, which
  // are the ISA's activation kernel on its sums.
  bool bf16 = false;
};

// Every convolution kernel compiled into this binary, in priority order (the first
// that supports a geometry wins).
const std::vector<const ConvKernel*>& conv_kernels();

// The kernel the fast path uses for `g` under `isa` (for a blocked `g`, one whose
// blocked_lanes are its packs), or nullptr (reference code).
const ConvKernel* select_conv_kernel(const ConvGeometry& g, Isa isa);

// The convolutions that bf16 arithmetic takes at kBf16: 1x1, stride 1, unpadded, one
// group, with at least kBf16MinInputs input channels and kBf16MinOutputs outputs. Below
// those the fp32 kernels were as fast or faster (bench/bf16/RESULTS.md): MobileNet v1's
// 32- and 64-channel inputs ran 0.8x as fast in bf16; the bf16 kernel's 32-channel panel
// wastes most of itself on fewer outputs (CenterNet's 4-channel head ran 3x slower,
// MobileNet v2's 24-channel projections even). Decided by the geometry alone, so the
// reference set's bf16 oracle takes the same layers on every CPU.
constexpr int kBf16MinInputs = 128;
constexpr int kBf16MinOutputs = 32;
bool bf16_pointwise(const ConvGeometry& g);

// The bf16 oracle of those layers: each input and weight rounded to bf16 (round to
// nearest even, subnormals to zero: vcvtne2ps2bf16), then per output the bias followed by
// the products of input channels (2q + 1, 2q) added one at a time in fp32 for q = 0, 1,
// ... (vdpbf16ps's order; an odd count's last pair has a zero), the activation last.
void conv_reference_bf16(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                         size_t in_cstep, float* out, size_t out_cstep, int num_threads);
// x rounded to bf16 as vcvtne2ps2bf16 does, as the 16 high bits of a float.
uint16_t to_bf16(float x);
float from_bf16(uint16_t h);

// The reference: any geometry, unpacked weights, plain loops; one output channel per
// OpenMP iteration so the result does not depend on num_threads. The oracle that the
// tests compare every kernel with, and the layer's fallback.
void conv_reference(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                    size_t in_cstep, float* out, size_t out_cstep, int num_threads);

// conv_reference on weights kept as IEEE halves (an F16 model's where no kernel takes
// the layer: armv7, the reference kernel set): each output channel's weights widened
// into the thread's scratch (ctx, conv_reference_halves_scratch bytes per thread) before
// its loop. The same bits as conv_reference on the widened weights.
void conv_reference_halves(const ConvGeometry& g, const uint16_t* weight, const float* bias, const float* in,
                           size_t in_cstep, float* out, size_t out_cstep, const KernelContext& ctx);
size_t conv_reference_halves_scratch(const ConvGeometry& g);

namespace detail {
// Defined once per architecture (src/arm/registry_arm.cpp, src/x86/registry_x86.cpp,
// src/kernels/registry_generic.cpp): that architecture's kernels in priority order.
std::vector<const ConvKernel*> arch_conv_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
