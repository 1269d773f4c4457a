// The int8 convolution kernel family (Precision::kInt8): one registry that the
// Convolution layer, the kernel tests and the benchmarks read, as conv_kernels.h is for
// fp32. Each kernel's results equal conv_reference_i8's bit for bit (i8_reference.h) on
// the same int8 operands; a geometry no kernel claims runs that oracle.
//
// A kernel reads the fp32 input map and quantizes it with the layer's input scale as it
// packs it (quantize_i8's rounding and saturation), so an int8 layer after an fp32 one
// costs no separate pass over its input. Kernels with run_maps also read and write int8
// maps (Shape::i8), which flow between consecutive int8 layers (core/net_int8.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/conv_kernels.h"
#include "kernels/i8_reference.h"
#include "kernels/isa.h"
#include "kernels/kernel_context.h"

namespace kestrel::kernels {

// Operands of I8ConvKernel::run_maps, planar (channel c at in + c * in_cstep elements:
// floats, or bytes where the map is int8):
// - the input: fp32, quantized with in_scale as it is read; or an int8 map (in_i8),
//   quantize_i8's values at in_scale already;
// - the output: fp32; or, where out_scale > 0 (the reading layer's input scale), an int8
//   map: the sums requantized in one step (conv_reference_i8's int8 outputs; g.act one of
//   i8_output_activation's).
struct I8Operands {
  const void* in = nullptr;
  size_t in_cstep = 0;
  bool in_i8 = false;
  float in_scale = 0.f;
  void* out = nullptr;
  size_t out_cstep = 0;
  float out_scale = 0.f;
};

// f(in, out) with run_maps' operands as their types: const float* or const int8_t* in,
// float* or int8_t* out, so a kernel instantiates its loops once per mix.
template <class F>
inline void with_i8_operands(const I8Operands& io, F&& f) {
  if (io.in_i8) {
    const int8_t* in = static_cast<const int8_t*>(io.in);
    if (io.out_scale > 0.f) return f(in, static_cast<int8_t*>(io.out));
    return f(in, static_cast<float*>(io.out));
  }
  const float* in = static_cast<const float*>(io.in);
  if (io.out_scale > 0.f) return f(in, static_cast<int8_t*>(io.out));
  f(in, static_cast<float*>(io.out));
}

// The extensions beyond its level that an int8 kernel needs (I8ConvKernel::needs).
enum I8Needs : unsigned {
  kI8NeedsNothing = 0,
  kI8NeedsDot8 = 1u << 0,  // Feature::kDot8 at the kernel's level: AVX512-VNNI, AVX-VNNI, SDOT
  kI8NeedsVbmi = 1u << 1,  // Feature::kVbmi
};

struct I8ConvKernel {
  const char* name;  // what it computes, its tile and ISA: "i8_conv1x1_32x12_avx512vnni"
  Isa isa;
  // I8Needs bits: it runs only where the CPU has those extensions (i8_kernel_runs).
  unsigned needs;
  // True if this kernel computes `g` (planar operands; its activation included).
  bool (*supports)(const ConvGeometry& g);
  // Bytes of packed weights for `g`.
  size_t (*packed_bytes)(const ConvGeometry& g);
  // Packs `weight` ([out_c][taps], quantized per output channel: quantize_rows_i8),
  // dequant[out_c] (1 / (input scale * weight scale)) and `bias` (out_c floats, or
  // nullptr) into `packed` (packed_bytes(g) bytes, kAlignment-aligned).
  void (*pack)(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias,
               void* packed);
  // Shared and per-thread scratch bytes run() needs (may be 0).
  size_t (*workspace_bytes)(const ConvGeometry& g);
  size_t (*workspace_per_thread_bytes)(const ConvGeometry& g);
  // The whole fp32 output from the fp32 input quantized with in_scale; operands as
  // ConvKernel::run's (planar, channels cstep floats apart). The result must not depend
  // on ctx.num_threads.
  void (*run)(const ConvGeometry& g, const void* packed, const float* in, size_t in_cstep, float in_scale,
              float* out, size_t out_cstep, const KernelContext& ctx);
  // As run, on any mix of fp32 and int8 maps; nullptr where the kernel takes fp32 maps
  // only.
  void (*run_maps)(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx);
};

// I8ConvKernel::run of a kernel whose run_maps takes every mix of maps: its fp32 case.
template <void (*RunMaps)(const ConvGeometry&, const void*, const I8Operands&, const KernelContext&)>
void run_on_floats(const ConvGeometry& g, const void* packed, const float* in, size_t in_cstep, float in_scale,
                   float* out, size_t out_cstep, const KernelContext& ctx) {
  I8Operands io;
  io.in = in;
  io.in_cstep = in_cstep;
  io.in_scale = in_scale;
  io.out = out;
  io.out_cstep = out_cstep;
  RunMaps(g, packed, io, ctx);
}

// The geometries the one-pass int8 depthwise kernels take (x86 i8_dwconv_16_avx512,
// NEON i8_dwconv_8x2_neon): planar, K x K, stride 1 or 2 alike in both directions, no
// dilation, padding before of less than K.
inline bool i8_dwconv_window(const ConvGeometry& g, int k) {
  return g.planar() && g.is_depthwise() && g.kh == k && g.kw == k && g.sh == g.sw && (g.sh == 1 || g.sh == 2) &&
         g.dh == 1 && g.dw == 1 && g.pad_top >= 0 && g.pad_top < k && g.pad_left >= 0 && g.pad_left < k &&
         g.out_h > 0 && g.out_w > 0;
}

// True if the active features at k's level include every extension `k` needs (the
// level itself: see isa_allows).
bool i8_kernel_runs(const I8ConvKernel& k);

// Every int8 convolution kernel compiled into this binary, in priority order.
const std::vector<const I8ConvKernel*>& i8_conv_kernels();

// The kernel for `g` under `isa` with the active CPU features, or nullptr (the oracle).
const I8ConvKernel* select_i8_conv_kernel(const ConvGeometry& g, Isa isa);

// int8 layers no int8 kernel takes, on fp32 kernels: an int8 product is exact in fp32,
// and so is any sum of at most kExactFloatTaps of them (|sum| <= 127 * 127 * taps <
// 2^24), in any order. So a direct-summation fp32 kernel (ConvKernel::tolerance <= 1e-4:
// no Winograd) run on the quantized values held as floats, with no bias and no
// activation, writes conv_reference_i8's int32 sums exactly; the layer then applies the
// dequantization, the bias and the activation (I8MapKernel::dequantize). Depthwise
// layers (9 or 25 taps) and stems (27) qualify.
constexpr size_t kExactFloatTaps = (size_t(1) << 24) / (kI8Max * kI8Max);

// The passes over such maps, by the active ISA (the scalar reference elsewhere).
struct I8MapKernel {
  const char* name;
  Isa isa;
  // dst[i] = float(quantize_i8(src[i], scale)).
  void (*quantize)(const float* src, float* dst, size_t n, float scale);
  // dst[i] = act(src[i] * a + b): a multiply, then an add, as conv_reference_i8 does.
  // ReLU, Clip and LeakyReLU as the oracle's activate(); the others by the ISA's
  // activation kernel (the fast convolution kernels' epilogue contract).
  void (*dequantize)(const float* src, float* dst, size_t n, float a, float b, const ActivationSpec& act);
  // The int8 residual add on a row (i8_add_reference's results, bit for bit).
  void (*add)(const I8AddRow& row, size_t n, const ActivationSpec& act);
  // A plane's reductions for int8 global pooling (i8_sum_reference, i8_max_reference).
  int32_t (*sum)(const int8_t* q, size_t n);
  int8_t (*max)(const int8_t* q, size_t n);
};

// The active ISA's map kernel, or the scalar reference's.
const I8MapKernel& i8_map_kernel();

namespace detail {
// Defined once per architecture, beside arch_conv_kernels().
std::vector<const I8ConvKernel*> arch_i8_conv_kernels();
std::vector<const I8MapKernel*> arch_i8_map_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
