// int8 depthwise K x K convolution (K = 3, 5; stride 1 or 2) on NEON, planar, in one
// pass over each channel, as on x86 (i8_dwconv_16_avx512.cpp):
// 1. the channel's input rows are quantized (quantize_i8, i8_neon.h) into the thread's
//    scratch as integer-valued floats, inside padding zeroed once per thread;
// 2. the sums by fp32 FMLAs: an int8 product is exact in fp32 and so is any sum of up to
//    kExactFloatTaps of them, in any order (i8_conv_kernels.h), so conv_reference_i8's
//    sums come out whatever the order;
// 3. float(sum) * dequant + bias (a multiply, then an add), the activation, the store.
// An int8 input map (I8Operands) is widened into the plane instead of quantized; an int8
// output is requantized in registers (i8_reference.h: one fma, the bounds).
// A step is 8 output pixels (two vectors) of two output rows at stride 1, which share
// K - 1 of their K + 1 input rows, or of one row at stride 2, whose rows are stored
// split into even and odd columns as they are quantized (LD2), so that every tap is a
// plain load. Each tap is two loads at constant offsets, its weight a lane (FMLA by
// element).
// Needs no dotprod: the A53 and A72 run it too. Threads split the channels.
//
// Packed per channel: its dequant factor and bias, then its K * K weights as floats
// (exact: they are int8), padded to whole vectors.
#include <arm_neon.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/i8_dwconv_8x2_neon.h"
#include "arm/i8_epilogue_neon.h"
#include "arm/i8_neon.h"
#include "core/parallel.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_dwconv_plane.h"
#include "kernels/i8_reference.h"

namespace kestrel::kernels::arm {
namespace {

using i8::unroll;
using namespace i8dw;


template <int K>
bool supports(const ConvGeometry& g) {
  return i8_dwconv_window(g, K);
}

// Floats a channel's packing takes: dequant, bias, padding to a vector, the weights.
template <int K>
constexpr size_t kWeightVectors = (K * K + kLanes - 1) / kLanes;
template <int K>
constexpr size_t kChannelFloats = kLanes * (1 + kWeightVectors<K>);

template <int K>
size_t packed_bytes(const ConvGeometry& g) {
  return static_cast<size_t>(g.out_c) * kChannelFloats<K> * sizeof(float);
}

template <int K>
void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  float* p = static_cast<float*>(packed);
  for (int c = 0; c < g.out_c; ++c, p += kChannelFloats<K>) {
    std::fill(p, p + kChannelFloats<K>, 0.f);
    p[0] = dequant[c];
    p[1] = bias ? bias[c] : 0.f;
    for (int i = 0; i < K * K; ++i) p[kLanes + i] = weight[static_cast<size_t>(c) * K * K + i];
  }
}

// The padded plane (kernels/i8_dwconv_plane.h): a step reads 8 pixels' taps and one
// vector more, of two rows at stride 1; fill() writes up to 2 steps and a column past
// the input.
using Plane = I8DwPlane;
Plane plane_of(const ConvGeometry& g, int k) {
  return i8_dwconv_plane(g, k, kStep, g.sh == 1 ? 2 : 1, kStep, 2 * kStep + 2);
}

size_t no_workspace(const ConvGeometry&) { return 0; }

template <int K>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plane p = plane_of(g, K);
  return static_cast<size_t>(p.rows) * p.cols * sizeof(float);
}

// Eight input values as integer-valued floats: an fp32 map's quantized, an int8 map's
// widened. At stride 2, four of the even columns and four of the odd from 8 values.
KESTREL_I8_NEON_INLINE float32x4x2_t load8(const float* in, float32x4_t s) {
  return {{i8::quantize4(vld1q_f32(in), s), i8::quantize4(vld1q_f32(in + kLanes), s)}};
}
KESTREL_I8_NEON_INLINE float32x4x2_t load8(const int8_t* in, float32x4_t) { return i8::widen8(vld1_s8(in)); }
KESTREL_I8_NEON_INLINE float32x4x2_t load8_split(const float* in, float32x4_t s) {
  const float32x4x2_t v = vld2q_f32(in);
  return {{i8::quantize4(v.val[0], s), i8::quantize4(v.val[1], s)}};
}
KESTREL_I8_NEON_INLINE float32x4x2_t load8_split(const int8_t* in, float32x4_t) {
  const int8x8x2_t v = vld2_s8(in);  // 16 bytes, the last 8 unused: within the over-read
  return {{i8::widen8(v.val[0]).val[0], i8::widen8(v.val[1]).val[0]}};
}

// Channel `src` (in_h x in_w) into the padded plane `dst`, whose padding the caller has
// zeroed: it is the same for every channel, so only the input's place is written. Rows
// go 8 values at a time, the last step reading past the row (at most 7 floats, or 15
// bytes, within kOverreadBytes past the channel) and writing past it into the right
// padding, which is then zeroed again: no scalar tail.
template <int S, class In>
void fill(const ConvGeometry& g, const Plane& p, const In* src, float scale, float* dst) {
  const float32x4_t s = vdupq_n_f32(scale), zero = vdupq_n_f32(0.f);
  const int in_w = g.in_w, cols = p.cols, pad_left = g.pad_left;
  const int r1 = std::min(p.rows, g.pad_top + g.in_h);
  // The first padded column past the input, and in each half at stride 2 the first
  // entry past it (the even half's entry c0 / 2 is column c0 - 1 where c0 is odd).
  const int c0 = pad_left + in_w;
  const bool even_left = pad_left % 2 == 0;
  const int pe_off = (even_left ? 0 : p.half) + pad_left / 2, po_off = (even_left ? p.half : 0) + (pad_left + 1) / 2;
  for (int r = g.pad_top; r < r1; ++r) {
    const In* in = src + static_cast<size_t>(r - g.pad_top) * in_w;
    float* row = dst + static_cast<size_t>(r) * cols;
    if constexpr (S == 1) {
      float* out = row + pad_left;
      for (int x = 0; x < in_w; x += 2 * kLanes) {
        const float32x4x2_t v = load8(in + x, s);
        vst1q_f32(out + x, v.val[0]);
        vst1q_f32(out + x + kLanes, v.val[1]);
      }
      vst1q_f32(row + c0, zero);
      vst1q_f32(row + c0 + kLanes, zero);
    } else {
      // Input column x is padded column pad_left + x: the input's even columns go to the
      // even half where pad_left is even, else to the odd one, and its odd ones to the
      // other half.
      float* pe = row + pe_off;
      float* po = row + po_off;
      for (int x = 0; x < in_w; x += 2 * kLanes) {
        const float32x4x2_t v = load8_split(in + x, s);
        vst1q_f32(pe + x / 2, v.val[0]);
        vst1q_f32(po + x / 2, v.val[1]);
      }
      vst1q_f32(row + (c0 + 1) / 2, zero);
      vst1q_f32(row + p.half + c0 / 2, zero);
    }
  }
}

// Output rows go to `out`: floats, or bytes requantized by rq (an activation of
// i8_output_activation's).
template <int K, int S, class Out, class Epi>
void channel(const ConvGeometry& g, const Plane& p, const float* plane, const float* w, Out* out,
             const i8::Requant& rq, const Epi& epi) {
  using Rows = Walk<K, S, Out>;
  float32x4_t wv[kWeightVectors<K>];
  for (size_t i = 0; i < kWeightVectors<K>; ++i) wv[i] = vld1q_f32(w + kLanes * (1 + i));
  const Factors f{vdupq_n_f32(w[0]), vdupq_n_f32(w[1]), vdupq_n_f32(w[0] * rq.scale), vdupq_n_f32(w[1] * rq.scale),
                  rq.lo, rq.hi};
  const int out_h = g.out_h, out_w = g.out_w;
  const int steps = out_w / kStep, rest = out_w % kStep;
  for (int oy = 0; oy < out_h; oy += Rows::R) {
    Rows rows;
    for (int i = 0; i < Rows::kIn; ++i) {
      rows.even[i] = plane + static_cast<size_t>(oy * S + i) * p.cols;
      rows.odd[i] = rows.even[i] + p.half;
    }
    for (int rr = 0; rr < Rows::R; ++rr) {
      rows.dst[rr] = oy + rr < out_h ? out + static_cast<size_t>(oy + rr) * out_w : nullptr;
    }
    Rows first = rows;
    for (int i = 0; i < steps; ++i, rows.advance()) step<K, S, Out, Epi, i8::kScaledAct<Epi>>(rows, wv, f, kStep, epi);
    if (rest) step<K, S, Out, Epi, i8::kScaledAct<Epi>>(rows, wv, f, rest, epi);
    if constexpr (std::is_same_v<Out, float>) {
      for (int rr = 0; rr < Rows::R; ++rr) {
        if (first.dst[rr]) i8::finish(epi, first.dst[rr], static_cast<size_t>(out_w));
      }
    }
  }
}

template <int K, class In, class Out>
void run_typed(const ConvGeometry& g, const void* packed, const In* in, size_t in_cstep, float in_scale, Out* out,
               size_t out_cstep, float out_scale, const KernelContext& ctx) {
  const Plane p = plane_of(g, K);
  const size_t plane_floats = static_cast<size_t>(p.rows) * p.cols;
  const float* weights = static_cast<const float*>(packed);
  const i8::Requant rq = i8::requant_of(g.act, out_scale);
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    parallel_region(std::max(1, ctx.num_threads), [&] {
      float* plane = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
      std::fill(plane, plane + plane_floats, 0.f);
#pragma omp for schedule(static)
      for (int c = 0; c < g.out_c; ++c) {
        const float* w = weights + static_cast<size_t>(c) * kChannelFloats<K>;
        Out* o = out + c * out_cstep;
        if (g.sh == 1) {
          fill<1>(g, p, in + c * in_cstep, in_scale, plane);
          channel<K, 1>(g, p, plane, w, o, rq, epi);
        } else {
          fill<2>(g, p, in + c * in_cstep, in_scale, plane);
          channel<K, 2>(g, p, plane, w, o, rq, epi);
        }
      }
    });
  });
}

template <int K>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  with_i8_operands(io, [&](const auto* in, auto* out) {
    run_typed<K>(g, packed, in, io.in_cstep, io.in_scale, out, io.out_cstep, io.out_scale, ctx);
  });
}

}  // namespace

const I8ConvKernel kI8DwConv3x3_8x2_Neon = {
    "i8_dwconv3x3_8x2_neon", Isa::kNeon, kI8NeedsNothing, supports<3>, packed_bytes<3>, pack<3>, no_workspace,
    workspace_per_thread_bytes<3>, run_on_floats<run_maps<3>>, run_maps<3>,
};
const I8ConvKernel kI8DwConv5x5_8x2_Neon = {
    "i8_dwconv5x5_8x2_neon", Isa::kNeon, kI8NeedsNothing, supports<5>, packed_bytes<5>, pack<5>, no_workspace,
    workspace_per_thread_bytes<5>, run_on_floats<run_maps<5>>, run_maps<5>,
};

}  // namespace kestrel::kernels::arm
