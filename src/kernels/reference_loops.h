// The loops of the reference convolution and InnerProduct, written once over how an
// output accumulates (Acc): start(b) is its first value, add(acc, w, x) takes one
// product, in the order input channel, kernel row, kernel column (input order for
// InnerProduct), and finish(acc, b, o) gives the stored value of output channel o,
// activation included. b points at the output's bias; the convolution passes a zero
// where it has none (its fp32 reference has always added one: a -0 sum stores +0),
// InnerProduct nullptr. Inputs, weights and outputs are floats, or the int8 oracle's
// types (i8_reference.h: int8_t operands, int32 sums, int8_t or float outputs).
// conv_reference / fc_reference accumulate in fp32 and add the bias last;
// conv_reference_f16 / fc_reference_f16 accumulate in fp16 from the bias. One output
// channel (output) per OpenMP iteration, so results do not depend on the thread count.
//
// Weights come as floats, or as IEEE halves (HalfRows: an F16 model's, which the layer
// then never widens whole): an output's row of them widened into the thread's scratch
// before its loop, the same values in the same order, so the same bits.
#pragma once
#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "core/half.h"
#include "kernels/conv_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/kernel_context.h"
#include "layers/activation.h"
#include "layers/layers.h"

namespace kestrel::kernels {

// Halves, [rows][n]; thread t widens a row into ctx.scratch_of(t) (n floats).
struct HalfRows {
  const uint16_t* halves;
  const KernelContext* ctx;
};

// Row r of n weights (floats, or int8 for the int8 oracle).
template <class T>
inline const T* weight_row(const T* w, size_t r, size_t n) {
  return w + r * n;
}
inline const float* weight_row(const HalfRows& w, size_t r, size_t n) {
  float* dst = static_cast<float*>(w.ctx->scratch_of(omp_get_thread_num()));
  const uint16_t* src = w.halves + r * n;
  for (size_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
  return dst;
}

template <class Acc, class W = const float*, class In = float, class Out = float>
void conv_reference_loop(const ConvGeometry& g, const W& weight, const float* bias, const In* in,
                         size_t in_cstep, Out* out, size_t out_cstep, int num_threads, const Acc& acc) {
  const int in_per_group = g.in_c / g.group, out_per_group = g.out_c / g.group;
  const size_t kernel_size = static_cast<size_t>(g.kh) * g.kw;
#pragma omp parallel for num_threads(num_threads)
  for (int oc = 0; oc < g.out_c; ++oc) {
    const int first_in = (oc / out_per_group) * in_per_group;
    const auto* wk = weight_row(weight, static_cast<size_t>(oc), in_per_group * kernel_size);
    static constexpr float kNoBias = 0.f;
    const float* b = bias ? bias + oc : &kNoBias;
    Out* outp = out + oc * out_cstep;
    for (int oy = 0; oy < g.out_h; ++oy) {
      const int iy0 = oy * g.sh - g.pad_top;
      int ky0, ky1;
      layer_util::valid_taps(iy0, g.in_h, g.kh, g.dh, &ky0, &ky1);
      for (int ox = 0; ox < g.out_w; ++ox) {
        const int ix0 = ox * g.sw - g.pad_left;
        int kx0, kx1;
        layer_util::valid_taps(ix0, g.in_w, g.kw, g.dw, &kx0, &kx1);
        auto sum = acc.start(b);
        for (int ic = 0; ic < in_per_group; ++ic) {
          const In* chan = in + (first_in + ic) * in_cstep;
          const auto* wp = wk + static_cast<size_t>(ic) * kernel_size;
          for (int ky = ky0; ky < ky1; ++ky) {
            // Offsets stay signed: ix0 is negative in the left padding.
            const ptrdiff_t row = static_cast<ptrdiff_t>(iy0 + ky * g.dh) * g.in_w + ix0;
            const auto* wrow = wp + static_cast<size_t>(ky) * g.kw;
            for (int kx = kx0; kx < kx1; ++kx) sum = acc.add(sum, wrow[kx], chan[row + kx * g.dw]);
          }
        }
        outp[static_cast<size_t>(oy) * g.out_w + ox] = acc.finish(sum, b, oc);
      }
    }
  }
}

template <class Acc, class W = const float*>
void fc_reference_loop(const FcGeometry& g, const W& weight, const float* bias, const float* in, size_t in_cstep,
                       float* out, int num_threads, const Acc& acc) {
  const size_t num_input = g.num_input();
#pragma omp parallel for num_threads(num_threads)
  for (int o = 0; o < g.num_output; ++o) {
    const float* w = weight_row(weight, static_cast<size_t>(o), num_input);
    const float* b = bias ? bias + o : nullptr;
    float sum = acc.start(b);
    for (int q = 0; q < g.in_planes; ++q) {
      const float* x = in + q * in_cstep;
      for (size_t i = 0; i < g.in_plane; ++i) sum = acc.add(sum, w[i], x[i]);
      w += g.in_plane;
    }
    out[o] = acc.finish(sum, b, o);
  }
}

// fp32: the sum of the products, then the bias, then the activation.
struct F32Accumulation {
  const ActivationSpec& act;
  float start(const float*) const { return 0.f; }
  float add(float sum, float w, float x) const { return sum + w * x; }
  float finish(float sum, const float* b, int) const { return activate(b ? sum + *b : sum, act); }
};

}  // namespace kestrel::kernels
