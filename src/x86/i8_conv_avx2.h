// int8 convolution at 256 bits (Precision::kInt8), one group, for x86 CPUs without
// AVX-512: MR output channels x 16 pixels (two vectors of eight int32 sums) per
// register tile, over the taps (input channels x window) in quads, pixels along the
// vectors so that each output row is a plain store. One template, two dot products
// (Dot), each instantiated in its own translation unit:
// - AVX-VNNI (DotVnni, i8_conv_6x16_avxvnni.cpp): vpdpbusd adds four u8 x s8 products
//   into each lane. Its unsigned side is the weight broadcast, stored as w + 128, the
//   signed side the input quads; a pixel's sums start from -128 times its input sum.
// - AVX2 (DotMaddubs, i8_conv_4x16_avx2.cpp): vpmaddubsw multiplies u8 by s8 and adds
//   each pair into int16 with saturation, where (x + 128) * w pairs would reach 64770.
//   Its operands here are |x| and w given x's sign (vpsignb), whose pairs stay within
//   2 * 128 * 127 = 32512: exact. vpmaddwd by ones widens the pairs to int32.
// The int32 sums equal conv_reference_i8's; then, as the oracle does, float(sum) *
// dequant + bias (a multiply and an add), the activation and an fp32 store, or the sums
// requantized into an int8 map (i8_avx2.h). Inputs: an fp32 map quantized as it is
// packed, or an int8 map as it is.
//
// Layouts
//   packed  [panel][K / 4][MR] dwords, each four weights of one output channel (w[4q] +
//           offset in the low byte), then MR dequant factors and MR biases a panel.
//           Missing channels and taps are zero weights.
//   groups  the input, 16 pixels a group: [K / 4][16] dwords (four s8 taps of a pixel,
//           tap 4q in the low byte; taps past K and pixels past the map zero), then the
//           16 pixels' input sums (DotVnni's); the whole map in the shared workspace.
// Threads fill a share of the groups each (after the padded planes of the im2col
// kernel, a share of the channels each), then split the (panel, group) pairs.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "x86/dot_plan_x86.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_avx2.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace i8gemm {

constexpr int NP = 16;  // pixels of a group: two vectors
// Quantized maps beyond this many bytes are left to the oracle.
constexpr size_t kMaxGroupBytes = size_t(64) << 20;
// Stems (at most 4 input channels) are left to the exact fp32 route, as on AVX-512.
constexpr int kMinIm2colChannels = 5;

template <class Dot>
struct Kernel {
  static constexpr int MR = Dot::kMR;
  using Plan = DotPlan<4, MR, NP>;

  static size_t panel_dwords(const Plan& p) { return (p.kd + 2) * MR; }
  static size_t group_dwords(const Plan& p) { return (p.kd + 1) * NP; }
  static size_t group_bytes(const ConvGeometry& g) {
    const Plan p(g);
    return (p.group_count() * group_dwords(p) * sizeof(uint32_t) + 63) / 64 * 64;
  }
  // The padded planes, a lead before them (a run's loads start up to 2 * 15 bytes before
  // its first pixel) and room after (32 bytes from the last pixel).
  static constexpr size_t kLead = 64;
  static size_t planes_bytes(const ConvGeometry& g) { return kLead + PaddedPlanes(g).bytes(g, 64 + 2 * NP); }

  static bool supports_any(const ConvGeometry& g) {
    if (!g.planar() || g.group != 1 || g.out_c <= 0 || g.in_c <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
    const Plan p(g);
    return p.k <= kMaxProducts && p.group_count() * group_dwords(p) <= kMaxGroupBytes / sizeof(uint32_t) &&
           static_cast<size_t>(p.panels) * panel_dwords(p) < (size_t(1) << 30);
  }
  static bool supports_pointwise(const ConvGeometry& g) { return g.is_pointwise() && supports_any(g); }
  static bool supports_im2col(const ConvGeometry& g) {
    return !g.is_pointwise() && g.in_c >= kMinIm2colChannels && supports_any(g);
  }

  static size_t packed_bytes(const ConvGeometry& g) {
    const Plan p(g);
    return static_cast<size_t>(p.panels) * panel_dwords(p) * sizeof(uint32_t);
  }

  static void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias,
                   void* packed) {
    const Plan p(g);
    for (int panel = 0; panel < p.panels; ++panel) {
      uint32_t* quads = static_cast<uint32_t*>(packed) + static_cast<size_t>(panel) * panel_dwords(p);
      float* dq = reinterpret_cast<float*>(quads + p.kd * MR);
      for (int r = 0; r < MR; ++r) {
        const int o = panel * MR + r;
        const int8_t* src = o < g.out_c ? weight + static_cast<size_t>(o) * p.k : nullptr;
        for (size_t q = 0; q < p.kd; ++q) {
          uint32_t d = 0;
          for (size_t i = 0; i < 4; ++i) {
            const int w = src && 4 * q + i < p.k ? src[4 * q + i] : 0;
            d |= static_cast<uint32_t>(static_cast<uint8_t>(w + Dot::kOffset)) << (8 * i);
          }
          quads[q * MR + r] = d;
        }
        dq[r] = src ? dequant[o] : 0.f;
        dq[MR + r] = src && bias ? bias[o] : 0.f;
      }
    }
  }

  static size_t workspace_pointwise(const ConvGeometry& g) { return group_bytes(g); }
  static size_t workspace_im2col(const ConvGeometry& g) { return group_bytes(g) + planes_bytes(g); }

  // A 1x1 convolution's input rows as they are: next() gives a tap's 16 pixels as bytes.
  template <class T>
  struct PointwiseRows {
    const T* in;
    size_t cstep;
    PointwiseRows(const ConvGeometry&, const T* src, size_t cs, void*) : in(src), cstep(cs) {}
    void fill(int, int, float) const {}
    struct Cursor {
      const T* p;
      size_t cstep;
      int np;
      __m256 s;
      KESTREL_X86_INLINE __m128i next() {
        __m128i v;
        if constexpr (std::is_same_v<T, float>) {
          v = quantize_bytes16(p, np, s);
        } else {
          // Maps are followed by kOverreadBytes; lanes past np feed only outputs never stored.
          v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        }
        p += cstep;
        return v;
      }
    };
    Cursor at(size_t gi, int np, float scale) const { return {in + gi * NP, cstep, np, _mm256_set1_ps(scale)}; }
  };

  // Any window, from the input as zero-padded byte planes (PaddedPlanes), a share of the
  // channels written by each thread first. A group's runs (its pixels along one output
  // row each) are found once; per tap, each run's bytes are one load placed so that its
  // lanes line up (two loads' even bytes at stride 2, one byte at a time beyond), blended
  // into the run's lanes.
  template <class T>
  struct Im2colRows {
    const ConvGeometry& g;
    const T* in;
    size_t in_cstep;
    PaddedPlanes pad;
    int8_t* planes;

    Im2colRows(const ConvGeometry& geo, const T* src, size_t cs, void* scratch)
        : g(geo), in(src), in_cstep(cs), pad(geo), planes(static_cast<int8_t*>(scratch) + kLead) {}

    static void row_bytes(const float* src, int n, __m256 s, int8_t* dst) {
      for (int x = 0; x < n; x += NP) store_bytes(dst + x, quantize_bytes16(src + x, n - x, s), n - x);
    }
    static void row_bytes(const int8_t* src, int n, __m256, int8_t* dst) { std::memcpy(dst, src, static_cast<size_t>(n)); }

    // Channels [c0, c1) into their planes.
    void fill(int c0, int c1, float scale) const {
      const __m256 s = _mm256_set1_ps(scale);
      pad.fill(g, planes, c0, c1, [&](int c, int y, int8_t* dst) {
        row_bytes(in + c * in_cstep + static_cast<size_t>(y) * g.in_w, g.in_w, s, dst);
      });
    }

    struct Cursor {
      const Im2colRows& s;
      ptrdiff_t base[NP];  // where a run's loads start: lane i of the run reads base + i * sw
      __m128i lanes[NP];   // the run's lanes
      int nruns = 0;
      TapWalk walk;

      KESTREL_X86_INLINE __m128i run_bytes(const int8_t* p, __m128i m) const {
        const int sw = s.g.sw;
        if (sw == 1) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if (sw == 2) {
          const __m256i even = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1, 0, 2, 4, 6,
                                                8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
          const __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), even);
          return _mm256_castsi256_si128(_mm256_permute4x64_epi64(v, 0x08));
        }
        alignas(16) int8_t b[NP];
        alignas(16) int8_t on[NP];
        _mm_store_si128(reinterpret_cast<__m128i*>(on), m);
        for (int i = 0; i < NP; ++i) b[i] = on[i] ? p[static_cast<ptrdiff_t>(i) * sw] : 0;
        return _mm_load_si128(reinterpret_cast<const __m128i*>(b));
      }

      KESTREL_X86_INLINE __m128i next() {
        const int8_t* tap = walk.at();
        __m128i v = _mm_setzero_si128();
        for (int r = 0; r < nruns; ++r) v = _mm_blendv_epi8(v, run_bytes(tap + base[r], lanes[r]), lanes[r]);
        walk.step();
        return v;
      }
    };

    Cursor at(size_t gi, int np, float) const {
      Cursor c{*this, {}, {}, 0, {g, pad, planes}};
      alignas(16) int8_t on[NP];
      pad.for_each_run(g, gi * NP, np, [&](int j, int len, ptrdiff_t origin) {
        // The sw > 2 gather reads lane i at base + i * sw for the run's lanes only.
        c.base[c.nruns] = origin - static_cast<ptrdiff_t>(j) * g.sw;
        for (int i = 0; i < NP; ++i) on[i] = i >= j && i < j + len ? -1 : 0;
        c.lanes[c.nruns++] = _mm_load_si128(reinterpret_cast<const __m128i*>(on));
      });
      return c;
    }
  };

  // Groups [g0, g1): taps 4q .. 4q + 3 of their pixels, interleaved into a dword a pixel,
  // for each q in turn, then the pixels' input sums.
  template <class Src>
  static void fill_groups(const Plan& p, const Src& src, float scale, size_t g0, size_t g1, uint32_t* groups) {
    for (size_t gi = g0; gi < g1; ++gi) {
      uint32_t* grp = groups + gi * group_dwords(p);
      auto cur = src.at(gi, p.group_pixels(gi), scale);
      __m256i sum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      for (size_t q = 0; q < p.kd; ++q) {
        __m128i t[4];
        for (size_t i = 0; i < 4; ++i) t[i] = 4 * q + i < p.k ? cur.next() : _mm_setzero_si128();
        const __m128i a = _mm_unpacklo_epi8(t[0], t[1]), b = _mm_unpackhi_epi8(t[0], t[1]);
        const __m128i c = _mm_unpacklo_epi8(t[2], t[3]), d = _mm_unpackhi_epi8(t[2], t[3]);
        const __m256i lo = _mm256_setr_m128i(_mm_unpacklo_epi16(a, c), _mm_unpackhi_epi16(a, c));
        const __m256i hi = _mm256_setr_m128i(_mm_unpacklo_epi16(b, d), _mm_unpackhi_epi16(b, d));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(grp + q * NP), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(grp + q * NP + 8), hi);
        sum[0] = Dot::add_sum(sum[0], lo);
        sum[1] = Dot::add_sum(sum[1], hi);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(grp + p.kd * NP), sum[0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(grp + p.kd * NP + 8), sum[1]);
    }
  }

  // One MR x 16 tile over all quads: x holds the group's quads and then its input sums;
  // tail the panel's dequant factors and biases. Rows r < mr, pixels j < np stored.
  template <class Out, class Epi>
  __attribute__((noinline)) static void tile(size_t kq, const uint32_t* __restrict a, const float* __restrict tail,
                                             const uint32_t* __restrict x, Out* c, size_t ldc, int mr, int np,
                                             const Requant8& rq, const Epi& epi) {
    __m256i acc[MR][2];
    static_for<2>([&](auto v) {
      const __m256i s = Dot::start(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kq * NP + 8 * v)));
      static_for<MR>([&](auto r) { acc[r][v] = s; });
    });
    for (size_t q = 0; q < kq; ++q, a += MR, x += NP) {
      typename Dot::In in[2];
      static_for<2>([&](auto v) { in[v] = Dot::input(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 8 * v))); });
      static_for<MR>([&](auto r) {
        const __m256i w = _mm256_set1_epi32(static_cast<int>(a[r]));
        static_for<2>([&](auto v) { acc[r][v] = Dot::madd(acc[r][v], w, in[v]); });
      });
    }
    static_for<MR>([&](auto r) {
      if (r >= mr) return;
      Out* row = c + static_cast<size_t>(r) * ldc;
      if constexpr (std::is_same_v<Out, int8_t>) {
        const __m256 m = _mm256_set1_ps(tail[r] * rq.scale), k = _mm256_set1_ps(tail[MR + r] * rq.scale);
        store_bytes(row, low_bytes16(requantize_x8(acc[r][0], m, k, rq, epi), requantize_x8(acc[r][1], m, k, rq, epi)),
                    np);
      } else {
        const __m256 d = _mm256_set1_ps(tail[r]), b = _mm256_set1_ps(tail[MR + r]);
        static_for<2>([&](auto v) {
          const __m256 y = epi(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][v]), d), b));
          const int n = np - 8 * v;
          if (n >= 8) {
            _mm256_storeu_ps(row + 8 * v, y);
          } else if (n > 0) {
            F32x8::store_partial(row + 8 * v, y, n);
          }
        });
        epi.finish(row, static_cast<size_t>(np));
      }
    });
  }

  template <template <class> class Src>
  static void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
    const Plan p(g);
    uint32_t* groups = static_cast<uint32_t*>(ctx.workspace);
    const Requant8 rq = requant8_of(g.act, io.out_scale);
    run_dot_maps<F32x8, Src>(
        g, io, ctx, group_bytes(g), p.panels, p.group_count(),
        [&](const auto& src, size_t g0, size_t g1) { fill_groups(p, src, io.in_scale, g0, g1, groups); },
        [&](int panel, size_t gi, auto* out, const auto& epi) {
          const uint32_t* a = static_cast<const uint32_t*>(packed) + static_cast<size_t>(panel) * panel_dwords(p);
          tile(p.kd, a, reinterpret_cast<const float*>(a + p.kd * MR), groups + gi * group_dwords(p),
               out + static_cast<size_t>(panel) * MR * io.out_cstep + gi * NP, io.out_cstep,
               std::min(MR, g.out_c - panel * MR), p.group_pixels(gi), rq, epi);
        });
  }

  static size_t no_workspace(const ConvGeometry&) { return 0; }

  static constexpr I8ConvKernel pointwise(const char* name, unsigned needs) {
    return {name, Isa::kAvx2, needs, supports_pointwise, packed_bytes, pack, workspace_pointwise, no_workspace,
            run_on_floats<run_maps<PointwiseRows>>, run_maps<PointwiseRows>};
  }
  static constexpr I8ConvKernel im2col(const char* name, unsigned needs) {
    return {name, Isa::kAvx2, needs, supports_im2col, packed_bytes, pack, workspace_im2col, no_workspace,
            run_on_floats<run_maps<Im2colRows>>, run_maps<Im2colRows>};
  }
};

}  // namespace i8gemm
KESTREL_X86_NS_END
