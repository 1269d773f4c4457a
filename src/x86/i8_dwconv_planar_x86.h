// int8 depthwise K x K convolution (K = 3, 5; stride 1 or 2) on x86, planar, NV vectors
// of an output row per step, in one pass over each channel. Written once over the vector
// traits (V: F32x16 or F32x8, x86_vec.h) and the ISA's I8Ops (i8_x86.h); instantiated by
// i8_dwconv_16_avx512.cpp and i8_dwconv_8_avx2.cpp.
// 1. the channel's input rows go into the thread's scratch as integer-valued floats,
//    quantized (quantize_i8) from an fp32 map or widened from an int8 map, inside
//    padding zeroed once per thread;
// 2. the sums by fp32 FMAs: an int8 product is exact in fp32 and so is any sum of up to
//    kExactFloatTaps of them, in any order (i8_conv_kernels.h), so one accumulator per
//    window row, added at the end, keeps K independent chains and still gives
//    conv_reference_i8's sums;
// 3. an fp32 output: float(sum) * dequant + bias (a multiply, then an add), the
//    activation, the store; an int8 output: requantized in one fma (i8_reference.h).
// At stride 2 the rows are stored split into even and odd columns as they are filled,
// so that every tap is one load. Threads split the channels.
//
// Why not integer multiply-adds: the planar taps of a window are not adjacent pairs or
// quads, so vpmaddwd / vpdpbusd would need the rows interleaved first; the fp32 FMA
// does one tap per lane with the plane as it is.
//
// Packed per channel: its dequant factor and bias, then its K * K int8 weights (padded to
// whole dwords), widened to floats as the channel starts.
#pragma once
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_dwconv_plane.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_x86.h"
#include "x86/x86_kernels.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN


namespace i8dw {

// Vectors of a row per step: 2, or 1 on maps W wide or less.
constexpr int kMaxNV = 2;

template <int K>
bool supports(const ConvGeometry& g) {
  return i8_dwconv_window(g, K);
}

// Dwords a channel's packing takes.
template <int K>
constexpr size_t kChannelDwords = 2 + (K * K + 3) / 4;

template <int K>
size_t packed_bytes(const ConvGeometry& g) {
  return static_cast<size_t>(g.out_c) * kChannelDwords<K> * sizeof(float);
}

template <int K>
void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  float* p = static_cast<float*>(packed);
  for (int c = 0; c < g.out_c; ++c, p += kChannelDwords<K>) {
    p[0] = dequant[c];
    p[1] = bias ? bias[c] : 0.f;
    int8_t* w = reinterpret_cast<int8_t*>(p + 2);
    std::fill(w, w + 4 * (kChannelDwords<K> - 2), int8_t{0});
    std::copy(weight + static_cast<size_t>(c) * K * K, weight + static_cast<size_t>(c + 1) * K * K, w);
  }
}

// The padded plane (kernels/i8_dwconv_plane.h): a step reads kMaxNV vectors' taps (one
// on maps W wide or less) and one vector more, of one row.
template <class V>
I8DwPlane plane_of(const ConvGeometry& g, int k) {
  return i8_dwconv_plane(g, k, kMaxNV * V::kWidth, 1, V::kWidth, 0);
}

inline size_t no_workspace(const ConvGeometry&) { return 0; }

template <class V, int K>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const I8DwPlane p = plane_of<V>(g, K);
  return static_cast<size_t>(p.rows) * p.cols * sizeof(float);
}

// Channel `src` (in_h x in_w) into the padded plane `dst`, whose padding the caller has
// zeroed: it is the same for every channel, so only the input's place is written.
template <class V, int S, class T>
void fill(const ConvGeometry& g, const I8DwPlane& p, const T* src, float scale, float* dst) {
  using Ops = I8Ops<V>;
  constexpr int W = V::kWidth;
  const typename V::reg s = V::set1(scale);
  const int right = std::min(g.in_w, p.cols - g.pad_left);
  const int r1 = std::min(p.rows, g.pad_top + g.in_h);
  for (int r = g.pad_top; r < r1; ++r) {
    const T* in = src + static_cast<size_t>(r - g.pad_top) * g.in_w;
    float* row = dst + static_cast<size_t>(r) * p.cols;
    if constexpr (S == 1) {
      float* out = row + g.pad_left;
      int x = 0;
      for (; x + W <= right; x += W) V::storeu(out + x, Ops::load_row(in + x, W, s));
      if (x < right) V::store_partial(out + x, Ops::load_row(in + x, right - x, s), right - x);
    } else {
      // Input column x is padded column pad_left + x: the input's even columns go to the
      // even half where pad_left is even, else to the odd one, and its odd ones to the
      // other half.
      const bool even_left = g.pad_left % 2 == 0;
      float* pe = row + (even_left ? 0 : p.half) + g.pad_left / 2;
      float* po = row + (even_left ? p.half : 0) + (g.pad_left + 1) / 2;
      for (int x = 0; x < right; x += 2 * W) {
        const int n = std::min(2 * W, right - x);
        const auto a = Ops::load_row(in + x, std::min(n, W), s);
        const auto b = n > W ? Ops::load_row(in + x + W, n - W, s) : V::zero();
        Ops::split_store(pe + x / 2, po + x / 2, a, b, n);
      }
    }
  }
}

// Where tap kx of output column x starts: column S x + kx, in its half at stride 2.
template <int S>
KESTREL_X86_INLINE const float* tap(const I8DwPlane& p, const float* row, int x, int kx) {
  if constexpr (S == 1) {
    return row + x + kx;
  } else {
    return row + (kx % 2) * p.half + x + kx / 2;
  }
}

template <class V, int K, int S, int NV, class Out, class Rq, class Epi>
void channel(const ConvGeometry& g, const I8DwPlane& p, const float* plane, const float* w, Out* out, const Rq& rq,
             const Epi& epi) {
  using reg = typename V::reg;
  constexpr int W = V::kWidth;
  reg wv[K * K];
  const int8_t* w8 = reinterpret_cast<const int8_t*>(w + 2);
  for (int i = 0; i < K * K; ++i) wv[i] = V::set1(static_cast<float>(w8[i]));
  // An int8 output's factors m and c (i8_reference.h) in place of dequant and bias.
  constexpr bool kBytes = std::is_same_v<Out, int8_t>;
  const float f = kBytes ? rq.scale : 1.f;
  const reg dq = V::set1(kBytes ? w[0] * f : w[0]), b = V::set1(kBytes ? w[1] * f : w[1]);
  for (int oy = 0; oy < g.out_h; ++oy) {
    const float* top = plane + static_cast<size_t>(oy) * S * p.cols;
    Out* dst = out + static_cast<size_t>(oy) * g.out_w;
    for (int ox = 0; ox < g.out_w; ox += NV * W) {
      reg acc[NV][K];
      static_for<NV>([&](auto v) {
        static_for<K>([&](auto ky) {
          const float* r = top + static_cast<size_t>(ky) * p.cols;
          const int x = ox + v * W;
          acc[v][ky] = V::mul(wv[ky * K], V::loadu(tap<S>(p, r, x, 0)));
          static_for<K - 1>([&](auto j) {
            constexpr int kx = j + 1;
            acc[v][ky] = V::fmadd(wv[ky * K + kx], V::loadu(tap<S>(p, r, x, kx)), acc[v][ky]);
          });
        });
      });
      static_for<NV>([&](auto v) {
        reg sum = acc[v][0];
        static_for<K - 1>([&](auto ky) { sum = V::add(sum, acc[v][ky + 1]); });
        I8Ops<V>::store_sums(dst + ox + v * W, sum, dq, b, std::min(W, g.out_w - ox - v * W), rq, epi);
      });
    }
    if constexpr (!kBytes) epi.finish(dst, static_cast<size_t>(g.out_w));
  }
}

template <class V, int K>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  constexpr int W = V::kWidth;
  const I8DwPlane p = plane_of<V>(g, K);
  const float* weights = static_cast<const float*>(packed);
  const auto rq = I8Ops<V>::requant(g.act, io.out_scale);
  with_i8_operands(io, [&](const auto* in, auto* out) {
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        float* plane = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
        std::fill(plane, plane + static_cast<size_t>(p.rows) * p.cols, 0.f);
#pragma omp for schedule(static)
        for (int c = 0; c < g.out_c; ++c) {
          if (g.sh == 1) {
            fill<V, 1>(g, p, in + c * io.in_cstep, io.in_scale, plane);
          } else {
            fill<V, 2>(g, p, in + c * io.in_cstep, io.in_scale, plane);
          }
          const float* w = weights + static_cast<size_t>(c) * kChannelDwords<K>;
          auto* o = out + c * io.out_cstep;
          if (g.sh == 1) {
            g.out_w > W ? channel<V, K, 1, 2>(g, p, plane, w, o, rq, epi)
                        : channel<V, K, 1, 1>(g, p, plane, w, o, rq, epi);
          } else {
            g.out_w > W ? channel<V, K, 2, 2>(g, p, plane, w, o, rq, epi)
                        : channel<V, K, 2, 1>(g, p, plane, w, o, rq, epi);
          }
        }
      }
    });
  });
}

// The kernel for K x K windows under `isa`.
template <class V, int K>
constexpr I8ConvKernel kernel(const char* name, Isa isa) {
  return {name,          isa, kI8NeedsNothing, supports<K>, packed_bytes<K>, pack<K>, no_workspace,
          workspace_per_thread_bytes<V, K>, run_on_floats<run_maps<V, K>>, run_maps<V, K>};
}

}  // namespace i8dw
KESTREL_X86_NS_END
