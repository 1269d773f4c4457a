// int8 convolution on AVX512-VNNI (Precision::kInt8), one group: 32 output channels (2
// vectors) x 12 pixels per register tile, over the taps (input channels x window) in
// quads. Two kernels: 1x1 stride 1, reading the input's rows as they are, and any other
// window, stride, padding or dilation, gathering each tap's row of pixels (im2col) as it
// quantizes them. vpdpbusd
// adds four u8 x s8 products into each int32 lane, so one instruction does 64
// multiply-adds, four times vfmadd231ps's 16.
//
// vpdpbusd multiplies unsigned bytes by signed ones, and only its signed operand can be
// a broadcast from memory folded into the instruction. So the weights are the unsigned
// side, stored as u8 = w + 128, and the input quads (quantized to [-127, 127],
// quantize_i8) the signed side, one broadcast dword a pixel: the loop issues nothing but
// vpdpbusd and two weight loads per quad. Each pixel's sums start from -128 times the
// sum of its quantized inputs, which takes the offset back out: the int32 sums equal
// conv_reference_i8's (sums wrap modulo 2^32, and the true sum fits in int32). Then, as
// the oracle does, float(sum) * dequant + bias (a multiply and an add), the activation,
// an fp32 store; or, into an int8 map, the sums requantized in one fma (i8_avx512.h).
// An int8 map as input is read as it is, in place of the quantization.
//
// Layouts
//   packed  [panel][K / 4][32] dwords, each four u8 weights (w[4q] + 128 in the low byte)
//           of one output channel; then per panel 32 dequant factors and 32 biases.
//           Missing channels are zero weights (128).
//   groups  the input quantized or read: groups of 12 pixels, each [K / 4][12] dwords (four s8,
//           tap 4q in the low byte; a short last quad's missing taps zero) and then the
//           12 pixels' sums of their K inputs, the last group [K / 4 + 1][rest]; the
//           whole map in the shared workspace
// Threads quantize a share of the groups each, then split the (panel, group) pairs.
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "x86/dot_plan_x86.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_avx512.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

using V = F32x16;
constexpr int W = V::kWidth, MV = 2, MR = MV * W, NP = 12;
// Quantized maps beyond this many bytes are left to the oracle.
constexpr size_t kMaxGroupBytes = size_t(64) << 20;
// vpdpbusd's unsigned operand is the weight plus this offset.
constexpr int kOffset = 128;

using Plan = DotPlan<4, MR, NP>;

Plan plan_of(const ConvGeometry& g) { return Plan(g); }

// Per panel: the weight quads, then the dequant factors and the biases.
size_t panel_dwords(const Plan& p) { return (p.kd + 2) * MR; }

// One group, planar operands, no sum past int32, and the quantized map within bounds.
bool supports_any(const ConvGeometry& g) {
  if (!g.planar() || g.group != 1 || g.out_c <= 0 || g.in_c <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  const Plan p = plan_of(g);
  return p.k <= kMaxProducts && (p.kd + 1) * p.pixels <= kMaxGroupBytes / sizeof(uint32_t) &&
         static_cast<size_t>(p.panels) * panel_dwords(p) < (size_t(1) << 30);
}

bool supports_pointwise(const ConvGeometry& g) { return g.is_pointwise() && supports_any(g); }
// Stems (at most 4 input channels) are left to the exact fp32 route (i8_conv_kernels.h):
// their few taps give the im2col rows more work than the dot products (MobileNet v1's
// 3-channel stem: 1.24 ms here against 0.58 ms).
constexpr int kMinIm2colChannels = 5;
bool supports_im2col(const ConvGeometry& g) {
  return !g.is_pointwise() && g.in_c >= kMinIm2colChannels && supports_any(g);
}

size_t packed_bytes(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return static_cast<size_t>(p.panels) * panel_dwords(p) * sizeof(uint32_t);
}

void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  const Plan p = plan_of(g);
  for (int panel = 0; panel < p.panels; ++panel) {
    uint32_t* quads = static_cast<uint32_t*>(packed) + static_cast<size_t>(panel) * panel_dwords(p);
    float* dq = reinterpret_cast<float*>(quads + p.kd * MR);
    float* b = dq + MR;
    for (int r = 0; r < MR; ++r) {
      const int o = panel * MR + r;
      const int8_t* src = o < g.out_c ? weight + static_cast<size_t>(o) * p.k : nullptr;
      for (size_t q = 0; q < p.kd; ++q) {
        uint32_t d = 0;
        for (size_t i = 0; i < 4; ++i) {
          const size_t c = 4 * q + i;
          const int w = src && c < p.k ? src[c] : 0;
          d |= static_cast<uint32_t>(w + kOffset) << (8 * i);
        }
        quads[q * MR + r] = d;
      }
      dq[r] = src ? dequant[o] : 0.f;
      b[r] = src && bias ? bias[o] : 0.f;
    }
  }
}

// A group's quads and then its pixels' input sums (int32).
KESTREL_X86_INLINE uint32_t* group_at(uint32_t* groups, const Plan& p, size_t gi) {
  return groups + gi * NP * (p.kd + 1);
}

size_t workspace_bytes(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return p.pixels * (p.kd + 1) * sizeof(uint32_t);
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// A row's values as int32 lanes: quantized floats (the lanes masked off zero), or bytes
// (all sixteen read: the callers mask them).
KESTREL_X86_INLINE __m512i ints_of(__m512 v, __m512 s) {
  // Exact integers in range: the conversion does not round.
  return _mm512_maskz_cvttps_epi32(0xFFFF, quantize_i8x16(v, s));
}
KESTREL_X86_INLINE __m512i ints_of(__m512i v, __m512) { return v; }
// Zero lanes of a row of floats, or of bytes as int32.
KESTREL_X86_INLINE __m512 zero_lanes(const float*) { return _mm512_setzero_ps(); }
KESTREL_X86_INLINE __m512i zero_lanes(const int8_t*) { return _mm512_setzero_si512(); }

// Where a group's pixels' values come from, tap after tap (Src::at(gi, np).next(s): np
// lanes as int32 quantized with s, the others zero): a 1x1 convolution's input rows as
// they are, floats (T = float) or bytes (int8_t).
template <class T>
struct PointwiseRows {
  const T* in;
  size_t cstep;
  PointwiseRows(const ConvGeometry&, const T* src, size_t cs) : in(src), cstep(cs) {}
  struct Cursor {
    const T* p;
    size_t cstep;
    __mmask16 m;
    KESTREL_X86_INLINE __m512i next(__m512 s) {
      __m512i v;
      if constexpr (std::is_same_v<T, float>) {
        v = ints_of(_mm512_maskz_loadu_ps(m, p), s);
      } else {
        v = _mm512_maskz_mov_epi32(m, load_i8x16(p));
      }
      p += cstep;
      return v;
    }
  };
  KESTREL_X86_INLINE Cursor at(size_t gi, int np) const { return {in + gi * NP, cstep, V::lanes(np)}; }
};

// Any window (tap = input channel, kernel row, kernel column, the weights' order): each
// run of the group's pixels along one output row reads an input row: a masked load at
// stride 1, two and a permute at stride 2, else a gather; the padding and what lies
// past the input read as zeros (masked off). The runs are found once a group, and the
// taps stepped through by counting. An int8 map's bytes: the run's valid columns read
// from the first (two loads and a permute at stride 2, one by one at larger strides),
// expanded into the run's lanes.
template <class T>
struct Im2colRows {
  const ConvGeometry& g;
  const T* in;
  size_t cstep;
  __m512i lane_step;  // lane L: L * stride
  __m512i even;       // lane L: element 2L of two vectors

  Im2colRows(const ConvGeometry& geo, const T* src, size_t cs)
      : g(geo), in(src), cstep(cs),
        lane_step(_mm512_maskz_mullo_epi32(0xFFFF, _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(geo.sw))),
        even(_mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0)) {}

  struct Run {
    int y0, x0, j, len;  // the input row and column of its first lane's window origin
  };

  struct Cursor {
    const Im2colRows& s;
    Run runs[NP];
    int nruns = 0, ky = 0, kx = 0;
    const T* plane;

    // Lanes m (j + lo .. j + hi - 1, columns ix0 + lo * sw on) of v from row.
    KESTREL_X86_INLINE __m512 load(__m512 v, __mmask16 m, const float* row, int ix0, int j, int lo, int hi) const {
      const ConvGeometry& g = s.g;
      if (g.sw == 1) return _mm512_mask_loadu_ps(v, m, row + (ix0 - j));
      if (g.sw == 2) {
        // Lane L is element 2L of the 32 floats from row + ix0 - 2j: load the span from
        // the first valid lane's element to the last's, keep the even ones.
        const float* base = row + (ix0 - 2 * j);
        const uint32_t e0 = 2u * (j + lo), e1 = 2u * (j + hi - 1);  // elements, inclusive (e1 < 31)
        const uint32_t span = ((2u << e1) - 1u) & (~0u << e0);
        const __m512 a = _mm512_maskz_loadu_ps(static_cast<__mmask16>(span), base);
        const __m512 b = _mm512_maskz_loadu_ps(static_cast<__mmask16>(span >> 16), base + W);
        return _mm512_mask_mov_ps(v, m, _mm512_permutex2var_ps(a, s.even, b));
      }
      const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(ix0 - j * g.sw), s.lane_step);
      return _mm512_mask_i32gather_ps(v, m, idx, row, 4);
    }
    KESTREL_X86_INLINE __m512i load(__m512i v, __mmask16 m, const int8_t* row, int ix0, int, int lo, int hi) const {
      const ConvGeometry& g = s.g;
      const int8_t* first = row + ix0 + lo * g.sw;
      __m512i x;
      if (g.sw == 1) {
        x = load_i8x16(first);
      } else if (g.sw == 2) {
        x = _mm512_maskz_permutex2var_epi32(0xFFFF, load_i8x16(first), s.even, load_i8x16(first + W));
      } else {
        alignas(64) int32_t b[W] = {};
        for (int i = 0; i < hi - lo; ++i) b[i] = first[i * g.sw];
        x = _mm512_load_si512(b);
      }
      return _mm512_mask_expand_epi32(v, m, x);
    }

    KESTREL_X86_INLINE __m512i next(__m512 scale) {
      const ConvGeometry& g = s.g;
      auto v = zero_lanes(plane);
      for (int r = 0; r < nruns; ++r) {
        const Run& u = runs[r];
        const int iy = u.y0 + ky * g.dh;
        if (iy < 0 || iy >= g.in_h) continue;
        // Lane L of the run reads column ix0 + (L - j) * sw; those inside the row only.
        const int ix0 = u.x0 + kx * g.dw;
        int lo, hi;
        if (g.sw == 1) {
          lo = std::max(0, -ix0);
          hi = std::min(u.len, g.in_w - ix0);
        } else {
          lo = ix0 >= 0 ? 0 : (-ix0 + g.sw - 1) / g.sw;
          hi = ix0 >= g.in_w ? 0 : std::min(u.len, (g.in_w - 1 - ix0) / g.sw + 1);
        }
        if (lo >= hi) continue;
        const int j = u.j;
        const __mmask16 m = static_cast<__mmask16>(((1u << (j + hi)) - 1u) & ~((1u << (j + lo)) - 1u));
        v = load(v, m, plane + static_cast<ptrdiff_t>(iy) * g.in_w, ix0, j, lo, hi);
      }
      if (++kx == g.kw) {
        kx = 0;
        if (++ky == g.kh) {
          ky = 0;
          plane += s.cstep;
        }
      }
      return ints_of(v, scale);
    }
  };

  Cursor at(size_t gi, int np) const {
    Cursor c{*this, {}, 0, 0, 0, in};
    const size_t px = gi * NP;
    int oy = static_cast<int>(px / g.out_w), ox = static_cast<int>(px % g.out_w);
    for (int j = 0; j < np; ox = 0, ++oy) {
      const int len = std::min(np - j, g.out_w - ox);
      c.runs[c.nruns++] = {oy * g.sh - g.pad_top, ox * g.sw - g.pad_left, j, len};
      j += len;
    }
    return c;
  }
};

// Groups [g0, g1) into `groups`: for each group, taps 4q .. 4q + 3 of its pixels for
// each q in turn, quantized and packed into a dword a pixel, then each pixel's sum of
// its quantized inputs. Taps past K are zeros.
template <class Src>
void fill_groups(const Plan& p, const Src& src, float scale, size_t g0, size_t g1, uint32_t* groups) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i byte = _mm512_set1_epi32(0xFF);
  for (size_t gi = g0; gi < g1; ++gi) {
    const int np = p.group_pixels(gi);
    const __mmask16 m = V::lanes(np);
    uint32_t* grp = group_at(groups, p, gi);
    auto cur = src.at(gi, np);
    __m512i sum = _mm512_setzero_si512();
    for (size_t q = 0; q < p.kd; ++q) {
      __m512i d = _mm512_setzero_si512();
      for (size_t i = 0; i < 4 && 4 * q + i < p.k; ++i) {
        const __m512i v = cur.next(s);
        sum = _mm512_add_epi32(sum, v);
        d = _mm512_or_si512(d, _mm512_maskz_slli_epi32(0xFFFF, _mm512_and_si512(v, byte), static_cast<unsigned>(8 * i)));
      }
      _mm512_mask_storeu_epi32(grp + q * np, m, d);
    }
    _mm512_mask_storeu_epi32(grp + p.kd * np, m, sum);
  }
}

// An int8 output tile: NPX pixels' requantized channels (requantize_x16's floats, a
// vector of W channels each) become rows of NPX bytes, channels r < mr, as
// store_ctile's transposition does for floats. Rounded before the transposition, for
// the scalar stores.
template <int NPX>
KESTREL_X86_INLINE void store_byte_tile(const __m512 (&q)[NPX][MV], int8_t* c, size_t ldc, int mr) {
  alignas(64) float buf[NPX][MR];
  static_for<NPX>([&](auto j) {
    static_for<MV>([&](auto v) {
      V::storeu(&buf[j][v * W], _mm512_maskz_roundscale_ps(0xFFFF, q[j][v], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    });
  });
  if constexpr (2 * NPX >= W) {
    static_for<MV>([&](auto v) {
      __m512 t[W];
      static_for<W>([&](auto j) {
        if constexpr (j < NPX) {
          t[j] = V::loadu(&buf[j][v * W]);
        } else {
          t[j] = V::zero();
        }
      });
      transpose_square(t);
      static_for<W>([&](auto r) {
        if (v * W + r < mr) store_i8x16(c + static_cast<size_t>(v * W + r) * ldc, t[r], NPX);
      });
    });
  } else {
    for (int r = 0; r < mr; ++r) {
      for (int j = 0; j < NPX; ++j) c[static_cast<size_t>(r) * ldc + j] = static_cast<int8_t>(buf[j][r]);
    }
  }
}

// An MV x NPX tile over all quads: x holds the pixels' quads, xs dwords per quad, and
// then their input sums; `tail` the panel's dequant factors and biases. Out: float, or
// int8_t (requantized by rq).
template <int NPX, class Out, class Epi>
__attribute__((noinline)) void tile(size_t kq, const uint32_t* __restrict a, const float* __restrict tail,
                                    const uint32_t* __restrict x, size_t xs, Out* c, size_t ldc, int mr,
                                    const Requant16& rq, const Epi& epi) {
  __m512i acc[NPX][MV];
  const int32_t* sums = reinterpret_cast<const int32_t*>(x + kq * xs);
  static_for<NPX>([&](auto j) {
    const __m512i s = _mm512_set1_epi32(-kOffset * sums[j]);
    static_for<MV>([&](auto v) { acc[j][v] = s; });
  });
  for (size_t q = 0; q < kq; ++q, a += MR, x += xs) {
    __m512i w[MV];
    static_for<MV>([&](auto v) { w[v] = _mm512_loadu_si512(a + v * W); });
    static_for<NPX>([&](auto j) {
      static_for<MV>([&](auto v) { acc[j][v] = dpbusd_broadcast(acc[j][v], w[v], x + j); });
    });
  }
  V::reg y[NPX][MV];
  if constexpr (std::is_same_v<Out, int8_t>) {
    const __m512 s = _mm512_set1_ps(rq.scale);
    static_for<MV>([&](auto v) {
      const V::reg m = _mm512_mul_ps(V::loadu(tail + v * W), s), k = _mm512_mul_ps(V::loadu(tail + MR + v * W), s);
      static_for<NPX>([&](auto j) { y[j][v] = requantize_x16(_mm512_maskz_cvtepi32_ps(0xFFFF, acc[j][v]), m, k, rq, epi); });
    });
    store_byte_tile<NPX>(y, c, ldc, mr);
  } else {
    static_for<MV>([&](auto v) {
      const V::reg d = V::loadu(tail + v * W), b = V::loadu(tail + MR + v * W);
      static_for<NPX>([&](auto j) {
        y[j][v] = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, acc[j][v]), d), b);
      });
    });
    gemm::store_ctile<V, MV, NPX, Epi, gemm::PlanarPacks>(y, c, ldc, mr, epi);
  }
}

// One (panel, group) tile: group gi's quads at x, into its pixels of the panel's outputs.
template <class Out, class Epi>
void panel_group(const ConvGeometry& g, const Plan& p, const void* packed, int panel, size_t gi, const uint32_t* x,
                 Out* out, size_t out_cstep, const Requant16& rq, const Epi& epi) {
  const uint32_t* a = static_cast<const uint32_t*>(packed) + static_cast<size_t>(panel) * panel_dwords(p);
  const float* tail = reinterpret_cast<const float*>(a + p.kd * MR);
  const int mr = std::min(MR, g.out_c - panel * MR);
  Out* c = out + static_cast<size_t>(panel) * MR * out_cstep + gi * NP;
  const int np = p.group_pixels(gi);
  if (np == NP) {
    tile<NP>(p.kd, a, tail, x, NP, c, out_cstep, mr, rq, epi);
    return;
  }
  int j = 0;
  for (; j + 4 <= np; j += 4) tile<4>(p.kd, a, tail, x + j, np, c + j, out_cstep, mr, rq, epi);
  for (; j < np; ++j) tile<1>(p.kd, a, tail, x + j, np, c + j, out_cstep, mr, rq, epi);
}

template <template <class> class Src>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plan p = plan_of(g);
  uint32_t* groups = static_cast<uint32_t*>(ctx.workspace);
  const size_t ngroups = p.group_count();
  const Requant16 rq = requant16_of(g.act, io.out_scale);
  with_i8_operands(io, [&](const auto* in, auto* out) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
    const Src<T> src(g, in, io.in_cstep);
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
        fill_groups(p, src, io.in_scale, ngroups * t / n, ngroups * (t + 1) / n, groups);
#pragma omp barrier
        // Thread t's share of the (panel, group) pairs, panel by panel: mostly the groups
        // it filled, where the map has more groups than panels.
        const size_t total = static_cast<size_t>(p.panels) * ngroups;
        for (size_t i = total * t / n, end = total * (t + 1) / n; i < end; ++i) {
          const size_t gi = i % ngroups;
          panel_group(g, p, packed, static_cast<int>(i / ngroups), gi, group_at(groups, p, gi), out, io.out_cstep, rq,
                      epi);
        }
      }
    });
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8Conv1x1_32x12_Avx512Vnni = {
    "i8_conv1x1_32x12_avx512vnni", Isa::kAvx512, true, supports_pointwise, packed_bytes, pack, workspace_bytes,
    no_workspace,                  run_on_floats<run_maps<PointwiseRows>>, run_maps<PointwiseRows>,
};
const I8ConvKernel kI8ConvIm2col_32x12_Avx512Vnni = {
    "i8_conv_im2col_32x12_avx512vnni", Isa::kAvx512, true, supports_im2col, packed_bytes, pack, workspace_bytes,
    no_workspace,                      run_on_floats<run_maps<Im2colRows>>, run_maps<Im2colRows>,
};

}  // namespace kestrel::kernels::x86
