// int8 quantization (issue 27): the scheme, and the exact integer oracle that the int8
// kernels (SDOT, SMLAL, VNNI, vpmaddubsw) are held to bit for bit.
//
// Symmetric, zero point 0, values in [-127, 127] (ncnn's and TensorRT's scheme; -128 is
// never produced, so negating a value or a weight cannot overflow):
// - an activation tensor has one scale, written by kestrel-quantize:
//   q = sat(rne(x * scale)), rne rounding half to even (what cvtps2dq and FCVTNS do in
//   the default rounding mode), NaN to 0;
// - a convolution's weights have one scale per output channel, 127 / max |w| over the
//   channel (1 for a channel of zeros), so each channel uses the whole range;
// - a convolution sums q_in * q_w exactly in int32, then per output channel oc:
//   - an fp32 output: y = float(sum) * dequant[oc] + bias[oc], dequant[oc] = 1 /
//     (in_scale * w_scale[oc]), as a multiply and then an add (two roundings, no fma: the
//     kernels do the same), then its activation in fp32 (activate);
//   - an int8 output (an int8 map, read by a layer whose input scale is out_scale s):
//     requantized in one step, ncnn's way, v = fma(float(sum), dequant[oc] * s,
//     bias[oc] * s) (the two factors rounded to floats first), the activation in that
//     scaled domain (LeakyReLU: v > 0 ? v : v * alpha; ReLU and Clip as the bounds
//     below), q = rne(v) saturated to [lo, hi]: [-127, 127], narrowed by ReLU to 0 and
//     by Clip to rne(alpha * s) and rne(beta * s) (rounding is monotonic, so clamping
//     before or after it is the same). Other activations are not homogeneous: a layer
//     with one writes fp32 (i8_output_activation).
// Sums of up to kMaxProducts products cannot overflow int32 (127 * 127 * 133,144 <
// 2^31); a layer with more input taps per output stays fp32.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/conv_kernels.h"
#include "kernels/kernel_context.h"

namespace kestrel::kernels {

constexpr int kI8Max = 127;
constexpr size_t kMaxProducts = 133144;

// sat(rne(x * scale)).
int8_t quantize_i8(float x, float scale);

// True if an int8 output can follow activation `act` (None, ReLU, Clip, LeakyReLU).
bool i8_output_activation(const ActivationSpec& act);

// The int8 output's bounds [lo, hi] for `act` at out_scale (above).
void i8_output_bounds(const ActivationSpec& act, float out_scale, int* lo, int* hi);

// An int8 output from its int32 sum, m = dequant * out_scale, c = bias * out_scale.
int8_t requantize_i8(int32_t sum, float m, float c, const ActivationSpec& act, int lo, int hi);
// The same from a float x in place of float(sum).
int8_t requantize_i8(float x, float m, float c, const ActivationSpec& act, int lo, int hi);
void quantize_i8(const float* x, int8_t* q, size_t n, float scale);

// Per output channel of `rows` rows of `n` weights: scales[r] = 127 / max |w| (1 for a
// row of zeros) and q = quantize_i8(w, scales[r]).
void quantize_rows_i8(const float* w, size_t rows, size_t n, int8_t* q, float* scales);

// The fp32 weights an I8 weight of a model stands for (kestrel.fbs, Weight.scales):
// w = q / scales[r], for a layer that computes in fp32.
void dequantize_rows_i8(const int8_t* q, const float* scales, size_t rows, size_t n, float* w);

// The int8 convolution oracle on planar operands (channel c at in + c * in_cstep
// bytes), the padding reading zeros; `dequant` has out_c entries, `bias` out_c or
// nullptr. out_scale > 0: int8 outputs (out_i8; g.act one of i8_output_activation's),
// else fp32 outputs (out_f32). Threads split output channels, so the result does not depend on
// num_threads.
void conv_reference_i8(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias,
                       const int8_t* in, size_t in_cstep, float out_scale, int8_t* out_i8, float* out_f32,
                       size_t out_cstep, int num_threads);

// The int8 residual add: BinaryOp Add of two maps of one shape at Precision::kInt8
// (layers/binaryop.cpp), on a row of n values. Each operand is an int8 map's bytes, read
// as float(q) * dequant (dequant = 1 / its scale, > 0), or an fp32 map's floats (dequant
// 0) as they are; y = a + b, one add, so an add of two fp32 maps is the fp32 layer's.
// The output is an fp32 map's activate(y, act), or (out_scale > 0) an int8 map's
// requantize_i8(y, out_scale, 0, act, lo, hi): rne(act(y * out_scale)) within the
// activation's bounds, as a convolution's int8 output (y * s is one rounding, as the
// fma with c = 0). act: one of i8_output_activation's.
struct I8AddRow {
  const void* a = nullptr;
  float a_dequant = 0.f;
  const void* b = nullptr;
  float b_dequant = 0.f;
  void* out = nullptr;
  float out_scale = 0.f;
};

// f(a, b, out) with the row's operands as their types (const float* or const int8_t*;
// float* or int8_t*), so a kernel instantiates its loop once per mix.
template <class F>
inline void with_i8_add_types(const I8AddRow& r, F&& f) {
  auto with_b = [&](const auto* a) {
    auto with_out = [&](const auto* b) {
      if (r.out_scale > 0.f) return f(a, b, static_cast<int8_t*>(r.out));
      f(a, b, static_cast<float*>(r.out));
    };
    if (r.b_dequant > 0.f) return with_out(static_cast<const int8_t*>(r.b));
    with_out(static_cast<const float*>(r.b));
  };
  if (r.a_dequant > 0.f) return with_b(static_cast<const int8_t*>(r.a));
  with_b(static_cast<const float*>(r.a));
}

void i8_add_reference(const I8AddRow& r, size_t n, const ActivationSpec& act);

// The plane reductions of int8 global pooling (layers/pooling.cpp): the exact sum of n
// int8 values (n * 127 < 2^31) and the largest of them (n >= 1).
int32_t i8_sum_reference(const int8_t* q, size_t n);
int8_t i8_max_reference(const int8_t* q, size_t n);

// A global pooling's value from its plane's reduction r (the largest q, or the sum of
// its n values' q) on an int8 map read with `dequant` (1 / its scale): Max y =
// float(r) * dequant, Ave y = float(r) * dequant / float(n) (a multiply, then a divide).
// An fp32 output is y; an int8 output (out_scale > 0) requantize_i8(y, out_scale, 0)
// with no activation: rne(y * out_scale) within [-127, 127].
float i8_global_pool_value(bool max, int32_t r, size_t n, float dequant);
int8_t i8_requantize_plain(float y, float out_scale);

}  // namespace kestrel::kernels
