// int8 depthwise K x K convolution (K = 3, 5; stride 1 or 2) by SDOT (ARMv8.2 dotprod),
// planar, a channel per thread at a time. SDOT sums four products in each int32 lane:
// lane p of a vector holds four bytes of output pixel p's window row (taps kx = 4t ..
// 4t + 3, those past K against zero weights), the weights of that window row a lane of
// a register (SDOT by element). A 3x3 window is then three SDOTs per 4 pixels, a 5x5
// one six, against nine or 25 FMLAs for the NEON kernel (i8_dwconv_8x2_neon), which
// holds its plane as floats. The four bytes of each pixel come from the row by TBL: one
// load of 32 bytes (48 at stride 2) per row and step, one TBL per 4 pixels and quad.
//
// 1. the channel's input rows go into the thread's zero-padded byte plane: an int8 map's
//    copied, an fp32 map's quantized (i8_neon.h);
// 2. a step is 16 output pixels of two output rows at stride 1 (which share K - 1 of
//    their K + 1 input rows), of one at stride 2;
// 3. float(sum) * dequant + bias, the activation, an fp32 store; or the requantization
//    into an int8 map (i8_reference.h: one fma, the bounds).
// The sums are conv_reference_i8's exactly: integer adds.
//
// Packed per channel: dequant and bias (a vector's room), then the K * kQuads weight
// dwords, whole vectors.
#include <arm_neon.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/i8_dwconv_16x2_neondot.h"
#include "arm/i8_epilogue_neon.h"
#include "arm/i8_neon.h"
#include "core/parallel.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_dwconv_plane.h"
#include "kernels/i8_reference.h"

namespace kestrel::kernels::arm {
namespace {

using i8::unroll;
using namespace i8dwdot;

constexpr int kChannelHeader = 16;  // dequant, bias, padding

template <int K>
constexpr size_t kChannelBytes = kChannelHeader + 16 * kWeightVectors<K>;

template <int K>
bool supports(const ConvGeometry& g) {
  return i8_dwconv_window(g, K);
}

template <int K>
size_t packed_bytes(const ConvGeometry& g) {
  return static_cast<size_t>(g.out_c) * kChannelBytes<K>;
}

template <int K>
void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  uint8_t* p = static_cast<uint8_t*>(packed);
  for (int c = 0; c < g.out_c; ++c, p += kChannelBytes<K>) {
    std::memset(p, 0, kChannelBytes<K>);
    const float f[2] = {dequant[c], bias ? bias[c] : 0.f};
    std::memcpy(p, f, sizeof(f));
    int8_t* w = reinterpret_cast<int8_t*>(p + kChannelHeader);
    const int8_t* src = weight + static_cast<size_t>(c) * K * K;
    for (int ky = 0; ky < K; ++ky) {
      for (int kx = 0; kx < K; ++kx) w[4 * (ky * kQuads<K> + kx / 4) + kx % 4] = src[ky * K + kx];
    }
  }
}

// The byte plane (kernels/i8_dwconv_plane.h): a step's TBL loads reach kTableVectors
// vectors from its first column; fill() writes up to a vector past the input.
I8DwPlane plane_of(const ConvGeometry& g, int k) {
  const int table = (g.sh == 1 ? kTableVectors<1> : kTableVectors<2>) * 16;
  return i8_dwconv_plane(g, k, kStep, g.sh == 1 ? 2 : 1, table, 2 * 16);
}

size_t no_workspace(const ConvGeometry&) { return 0; }

template <int K>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const I8DwPlane p = plane_of(g, K);
  return static_cast<size_t>(p.rows) * p.cols;
}

// Sixteen input values as bytes: an fp32 map's quantized, an int8 map's as they are.
KESTREL_I8_NEON_INLINE int8x16_t load16(const float* in, float32x4_t s) { return i8::quantize16(in, s); }
KESTREL_I8_NEON_INLINE int8x16_t load16(const int8_t* in, float32x4_t) { return vld1q_s8(in); }

// Channel `src` into the byte plane, whose padding the caller has zeroed (the same for
// every channel: only the input's place is written). Rows go 16 values at a time, the
// last reading past the row (within kOverreadBytes past the channel) and writing into
// the right padding, which is zeroed again. The geometry is read into locals first:
// the byte stores may alias it, and GCC reloaded it every vector (a fifth of MobileNet
// v1's depthwise instructions on cortex-a76).
template <class In>
void fill(const ConvGeometry& g, const I8DwPlane& p, const In* src, float scale, int8_t* dst) {
  const float32x4_t s = vdupq_n_f32(scale);
  const int8x16_t zero = vdupq_n_s8(0);
  const int w = g.in_w, rows = std::min(p.rows, g.pad_top + g.in_h) - g.pad_top;
  const size_t cols = static_cast<size_t>(p.cols);
  int8_t* out = dst + static_cast<size_t>(g.pad_top) * cols + g.pad_left;
  if (w <= 16) {  // 14x14 and smaller maps: a row is one vector, no inner loop
    for (int r = 0; r < rows; ++r, src += w, out += cols) {
      vst1q_s8(out, load16(src, s));
      vst1q_s8(out + w, zero);
    }
    return;
  }
  for (int r = 0; r < rows; ++r, src += w, out += cols) {
    for (int x = 0; x < w; x += 16) vst1q_s8(out + x, load16(src + x, s));
    vst1q_s8(out + w, zero);
  }
}

template <int K, int S, class Out, class Epi>
void channel(const ConvGeometry& g, const I8DwPlane& p, const int8_t* plane, const uint8_t* packed, Out* out,
             const Indices<S, K>& ix, const i8::Requant& rq, const Epi& epi) {
  constexpr int R = kRows<S>, kIn = K + R - 1;
  float f2[2];
  std::memcpy(f2, packed, sizeof(f2));
  const Factors f{vdupq_n_f32(f2[0]), vdupq_n_f32(f2[1]), vdupq_n_f32(f2[0] * rq.scale), vdupq_n_f32(f2[1] * rq.scale),
                  rq.lo, rq.hi};
  int8x16_t w[kWeightVectors<K>];
  const int8_t* wp = reinterpret_cast<const int8_t*>(packed + kChannelHeader);
  for (int i = 0; i < kWeightVectors<K>; ++i) w[i] = vld1q_s8(wp + 16 * i);
  for (int oy = 0; oy < g.out_h; oy += R) {
    const int8_t* rows[kIn];
    for (int i = 0; i < kIn; ++i) rows[i] = plane + static_cast<size_t>(oy * S + i) * p.cols;
    Out* dst[R];
    for (int rr = 0; rr < R; ++rr) dst[rr] = oy + rr < g.out_h ? out + static_cast<size_t>(oy + rr) * g.out_w : nullptr;
    for (int x = 0; x < g.out_w; x += kStep) {
      step<K, S, Out, Epi, i8::kScaledAct<Epi>>(rows, dst, x, w, ix, f, std::min(kStep, g.out_w - x), epi);
    }
    if constexpr (std::is_same_v<Out, float>) {
      for (int rr = 0; rr < R; ++rr) {
        if (dst[rr]) i8::finish(epi, dst[rr], static_cast<size_t>(g.out_w));
      }
    }
  }
}

template <int K, int S, class In, class Out>
void run_typed(const ConvGeometry& g, const void* packed, const In* in, size_t in_cstep, float in_scale, Out* out,
               size_t out_cstep, float out_scale, const KernelContext& ctx) {
  const I8DwPlane p = plane_of(g, K);
  const size_t plane_bytes = static_cast<size_t>(p.rows) * p.cols;
  const uint8_t* weights = static_cast<const uint8_t*>(packed);
  const i8::Requant rq = i8::requant_of(g.act, out_scale);
  const Indices<S, K> ix;
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    parallel_region(std::max(1, ctx.num_threads), [&] {
      int8_t* plane = static_cast<int8_t*>(ctx.scratch_of(omp_get_thread_num()));
      std::fill(plane, plane + plane_bytes, int8_t{0});
#pragma omp for schedule(static)
      for (int c = 0; c < g.out_c; ++c) {
        fill(g, p, in + c * in_cstep, in_scale, plane);
        channel<K, S>(g, p, plane, weights + static_cast<size_t>(c) * kChannelBytes<K>, out + c * out_cstep, ix, rq, epi);
      }
    });
  });
}

template <int K>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  with_i8_operands(io, [&](const auto* in, auto* out) {
    if (g.sh == 1) {
      run_typed<K, 1>(g, packed, in, io.in_cstep, io.in_scale, out, io.out_cstep, io.out_scale, ctx);
    } else {
      run_typed<K, 2>(g, packed, in, io.in_cstep, io.in_scale, out, io.out_cstep, io.out_scale, ctx);
    }
  });
}

}  // namespace

const I8ConvKernel kI8DwConv3x3_16x2_NeonDot = {
    "i8_dwconv3x3_16x2_neondot", Isa::kNeon, kI8NeedsDot8, supports<3>, packed_bytes<3>, pack<3>, no_workspace,
    workspace_per_thread_bytes<3>, run_on_floats<run_maps<3>>, run_maps<3>,
};
const I8ConvKernel kI8DwConv5x5_16x2_NeonDot = {
    "i8_dwconv5x5_16x2_neondot", Isa::kNeon, kI8NeedsDot8, supports<5>, packed_bytes<5>, pack<5>, no_workspace,
    workspace_per_thread_bytes<5>, run_on_floats<run_maps<5>>, run_maps<5>,
};

}  // namespace kestrel::kernels::arm
