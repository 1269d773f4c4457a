// int8 depthwise K x K convolution (K = 3, 5; stride 1 or 2) on AVX-512F, planar, 32
// output pixels of a row (2 vectors) per step, in one pass over each channel:
// 1. the channel's input rows go into the thread's scratch as integer-valued floats,
//    quantized (quantize_i8) from an fp32 map or widened from an int8 map, inside
//    padding zeroed once per thread;
// 2. the sums by fp32 FMAs: an int8 product is exact in fp32 and so is any sum of up to
//    kExactFloatTaps of them, in any order (i8_conv_kernels.h), so one accumulator per
//    window row, added at the end, keeps K independent chains and still gives
//    conv_reference_i8's sums;
// 3. an fp32 output: float(sum) * dequant + bias (a multiply, then an add), the
//    activation, the store; an int8 output: requantized in one fma (i8_avx512.h).
// At stride 2 the rows are stored split into even and odd columns as they are filled
// (vpermt2ps), so that every tap is one load. Threads split the channels.
//
// Packed per channel: its dequant factor and bias, then its K * K int8 weights (padded to
// whole dwords), widened to floats as the channel starts.
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_dwconv_plane.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_avx512.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

using V = F32x16;
constexpr int W = V::kWidth;
// Vectors of a row per step: 2, or 1 on maps 16 wide or less.
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

// The padded plane (kernels/i8_dwconv_plane.h): a step reads 32 pixels' taps (16 on
// maps 16 wide or less) and one vector more, of one row.
using Plane = I8DwPlane;
Plane plane_of(const ConvGeometry& g, int k) { return i8_dwconv_plane(g, k, kMaxNV * W, 1, W, 0); }

size_t no_workspace(const ConvGeometry&) { return 0; }

template <int K>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plane p = plane_of(g, K);
  return static_cast<size_t>(p.rows) * p.cols * sizeof(float);
}

// Sixteen values of a row as integer-valued floats: quantized floats, or widened bytes;
// the lanes past n zero.
KESTREL_X86_INLINE __m512 load_row(const float* in, int n, __m512 s) {
  return quantize_i8x16(_mm512_maskz_loadu_ps(V::lanes(n), in), s);
}
KESTREL_X86_INLINE __m512 load_row(const int8_t* in, int n, __m512) {
  return _mm512_maskz_cvtepi32_ps(V::lanes(n), load_i8x16(in));
}

// Channel `src` (in_h x in_w) into the padded plane `dst`, whose padding the caller has
// zeroed: it is the same for every channel, so only the input's place is written.
template <int S, class T>
void fill(const ConvGeometry& g, const Plane& p, const T* src, float scale, float* dst) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const int right = std::min(g.in_w, p.cols - g.pad_left);
  const int r1 = std::min(p.rows, g.pad_top + g.in_h);
  for (int r = g.pad_top; r < r1; ++r) {
    const T* in = src + static_cast<size_t>(r - g.pad_top) * g.in_w;
    float* row = dst + static_cast<size_t>(r) * p.cols;
    if constexpr (S == 1) {
      float* out = row + g.pad_left;
      int x = 0;
      for (; x + W <= right; x += W) _mm512_storeu_ps(out + x, load_row(in + x, W, s));
      if (x < right) _mm512_mask_storeu_ps(out + x, V::lanes(right - x), load_row(in + x, right - x, s));
    } else {
      // Input column x is padded column pad_left + x: the input's even columns go to the
      // even half where pad_left is even, else to the odd one, and its odd ones to the
      // other half.
      const bool even_left = g.pad_left % 2 == 0;
      float* pe = row + (even_left ? 0 : p.half) + g.pad_left / 2;
      float* po = row + (even_left ? p.half : 0) + (g.pad_left + 1) / 2;
      for (int x = 0; x < right; x += 2 * W) {
        const int n = std::min(2 * W, right - x);
        const __m512 a = load_row(in + x, std::min(n, W), s);
        const __m512 b = n > W ? load_row(in + x + W, n - W, s) : _mm512_setzero_ps();
        _mm512_mask_storeu_ps(pe + x / 2, V::lanes((n + 1) / 2), _mm512_permutex2var_ps(a, even, b));
        _mm512_mask_storeu_ps(po + x / 2, V::lanes(n / 2), _mm512_permutex2var_ps(a, odd, b));
      }
    }
  }
}

// Where tap kx of output column x starts: column S x + kx, in its half at stride 2.
template <int S>
KESTREL_X86_INLINE const float* tap(const Plane& p, const float* row, int x, int kx) {
  if constexpr (S == 1) {
    return row + x + kx;
  } else {
    return row + (kx % 2) * p.half + x + kx / 2;
  }
}

template <int K, int S, int NV, class Out, class Epi>
void channel(const ConvGeometry& g, const Plane& p, const float* plane, const float* w, Out* out,
             const Requant16& rq, const Epi& epi) {
  __m512 wv[K * K];
  const int8_t* w8 = reinterpret_cast<const int8_t*>(w + 2);
  for (int i = 0; i < K * K; ++i) wv[i] = _mm512_set1_ps(static_cast<float>(w8[i]));
  // An int8 output's factors m and c (i8_reference.h) in place of dequant and bias.
  constexpr bool kBytes = std::is_same_v<Out, int8_t>;
  const float f = kBytes ? rq.scale : 1.f;
  const __m512 dq = _mm512_set1_ps(kBytes ? w[0] * f : w[0]), b = _mm512_set1_ps(kBytes ? w[1] * f : w[1]);
  for (int oy = 0; oy < g.out_h; ++oy) {
    const float* top = plane + static_cast<size_t>(oy) * S * p.cols;
    Out* dst = out + static_cast<size_t>(oy) * g.out_w;
    for (int ox = 0; ox < g.out_w; ox += NV * W) {
      __m512 acc[NV][K];
      static_for<NV>([&](auto v) {
        static_for<K>([&](auto ky) {
          const float* r = top + static_cast<size_t>(ky) * p.cols;
          const int x = ox + v * W;
          acc[v][ky] = _mm512_mul_ps(wv[ky * K], _mm512_loadu_ps(tap<S>(p, r, x, 0)));
          static_for<K - 1>([&](auto j) {
            constexpr int kx = j + 1;
            acc[v][ky] = _mm512_fmadd_ps(wv[ky * K + kx], _mm512_loadu_ps(tap<S>(p, r, x, kx)), acc[v][ky]);
          });
        });
      });
      static_for<NV>([&](auto v) {
        __m512 sum = acc[v][0];
        static_for<K - 1>([&](auto ky) { sum = _mm512_add_ps(sum, acc[v][ky + 1]); });
        store_sums_x16(dst + ox + v * W, sum, dq, b, std::min(W, g.out_w - ox - v * W), rq, epi);
      });
    }
    if constexpr (!kBytes) epi.finish(dst, static_cast<size_t>(g.out_w));
  }
}

template <int K>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plane p = plane_of(g, K);
  const float* weights = static_cast<const float*>(packed);
  const Requant16 rq = requant16_of(g.act, io.out_scale);
  with_i8_operands(io, [&](const auto* in, auto* out) {
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        float* plane = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
        std::fill(plane, plane + static_cast<size_t>(p.rows) * p.cols, 0.f);
#pragma omp for schedule(static)
        for (int c = 0; c < g.out_c; ++c) {
          if (g.sh == 1) {
            fill<1>(g, p, in + c * io.in_cstep, io.in_scale, plane);
          } else {
            fill<2>(g, p, in + c * io.in_cstep, io.in_scale, plane);
          }
          const float* w = weights + static_cast<size_t>(c) * kChannelDwords<K>;
          auto* o = out + c * io.out_cstep;
          if (g.sh == 1) {
            g.out_w > W ? channel<K, 1, 2>(g, p, plane, w, o, rq, epi) : channel<K, 1, 1>(g, p, plane, w, o, rq, epi);
          } else {
            g.out_w > W ? channel<K, 2, 2>(g, p, plane, w, o, rq, epi) : channel<K, 2, 1>(g, p, plane, w, o, rq, epi);
          }
        }
      }
    });
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_16_Avx512 = {
    "i8_dwconv3x3_16_avx512", Isa::kAvx512, kI8NeedsNothing, supports<3>, packed_bytes<3>, pack<3>, no_workspace,
    workspace_per_thread_bytes<3>, run_on_floats<run_maps<3>>, run_maps<3>,
};
const I8ConvKernel kI8DwConv5x5_16_Avx512 = {
    "i8_dwconv5x5_16_avx512", Isa::kAvx512, kI8NeedsNothing, supports<5>, packed_bytes<5>, pack<5>, no_workspace,
    workspace_per_thread_bytes<5>, run_on_floats<run_maps<5>>, run_maps<5>,
};

}  // namespace kestrel::kernels::x86
