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
//   packed  [panel][K / 4][32] dwords, each four u8 weights of one output channel at one
//           tap, of channels 4cq .. 4cq + 3 (w + 128, the first in the low byte), quads
//           in the order (channel quad, kernel row, kernel column); then per panel 32
//           dequant factors and 32 biases. Missing channels are zero weights (128).
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

// Input channels in quads, the last one short by zeros.
size_t channel_quads(const ConvGeometry& g) { return (static_cast<size_t>(g.in_c) + 3) / 4; }

// K in quads of channels at one tap: (channel quad, kernel row, kernel column), the
// im2col planes' order (a 1x1's is the channels' own).
Plan plan_of(const ConvGeometry& g) {
  Plan p(g);
  p.kd = channel_quads(g) * g.kh * g.kw;
  return p;
}

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
// A stem (at most 4 input channels: one quad a tap, a 3-channel one padded by a zero
// channel) with fewer output channels than a panel wastes much of each dot product and
// keeps the exact fp32 route (i8_conv_kernels.h; BlazeFace's 24 channels: 0.45 ms
// against 0.51). From a whole panel on the quads are faster (medians of alternating runs,
// AMD EPYC: ResNet-18's 7x7 to 64, 1.09 ms against 1.33; MobileNet v1's 3x3 to 32, 0.17
// against 0.20; MobileNet v2's 0.19 against 0.22).
constexpr int kMinIm2colChannels = 5;
bool supports_im2col(const ConvGeometry& g) {
  return !g.is_pointwise() && (g.in_c >= kMinIm2colChannels || g.out_c >= MR) && supports_any(g);
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
      const size_t taps = static_cast<size_t>(g.kh) * g.kw;
      for (size_t q = 0; q < p.kd; ++q) {
        const size_t cq = q / taps, tap = q % taps;
        uint32_t d = 0;
        for (size_t i = 0; i < 4; ++i) {
          const size_t c = 4 * cq + i;
          const int w = src && c < static_cast<size_t>(g.in_c) ? src[c * taps + tap] : 0;
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

// The groups; the im2col kernel's padded planes after them.
size_t group_bytes(const ConvGeometry& g) {
  const Plan p = plan_of(g);
  return (p.pixels * (p.kd + 1) * sizeof(uint32_t) + 63) / 64 * 64;
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// Where a group's pixels' values come from, tap after tap (Src::at(gi, np).next(s): np
// lanes as int32 quantized with s, the others zero): a 1x1 convolution's input rows as
// they are, floats (T = float) or bytes (int8_t).
template <class T>
struct PointwiseRows {
  static constexpr bool kQuads = false;
  const T* in;
  size_t cstep;
  PointwiseRows(const ConvGeometry&, const T* src, size_t cs, void*) : in(src), cstep(cs) {}
  void fill(int, int, float) const {}
  struct Cursor {
    const T* p;
    size_t cstep;
    __mmask16 m;
    KESTREL_X86_INLINE __m512i next(__m512 s) {
      __m512i v;
      if constexpr (std::is_same_v<T, float>) {
        v = load_q8x16(p, m, s);
      } else {
        v = _mm512_maskz_mov_epi32(m, load_i8x16(p));
      }
      p += cstep;
      return v;
    }
  };
  KESTREL_X86_INLINE Cursor at(size_t gi, int np) const { return {in + gi * NP, cstep, V::lanes(np)}; }
};

// Any window, from the input as zero-padded planes of channel quads (a pixel's dword
// holds channels 4cq .. 4cq + 3; the weights' taps go in the same order: pack): first the
// threads write the planes, a share of the quads each (an fp32 map quantized, an int8
// map's bytes interleaved), then a group's quad of a tap (channel quad, kernel row,
// kernel column) is one load of a run's dwords at an offset, with no bounds to test and
// no byte shuffling: a load at stride 1, two and a permute at stride 2, a gather at
// larger strides, expanded into the run's lanes. Quadrupling the bytes a load carries is
// what makes the groups cheap beside the dot products where the panels are few (ResNet's
// 64-channel 3x3 layers); a 3-channel stem pays a zero channel.
struct QuadPlanes {
  PaddedPlanes pad;  // rows and columns; its cstep unused
  size_t cstep;      // bytes from one quad's plane to the next
  explicit QuadPlanes(const ConvGeometry& g)
      : pad(g), cstep((static_cast<size_t>(pad.rows) * pad.cols * 4 + 63) / 64 * 64) {}
  // With room for a run's loads past the last (16 dwords at stride sw).
  size_t bytes(const ConvGeometry& g) const {
    return channel_quads(g) * cstep + static_cast<size_t>(W) * 4 * std::max(2, g.sw) + 64;
  }
};

size_t padded_bytes(const ConvGeometry& g) { return QuadPlanes(g).bytes(g); }

// Sixteen values of a row as bytes: lanes m of floats quantized, or sixteen bytes read
// (maps are followed by kOverreadBytes; the caller stores lanes m only).
KESTREL_X86_INLINE __m128i row16(const float* p, __mmask16 m, __m512 s) {
  return _mm512_maskz_cvtepi32_epi8(0xFFFF, load_q8x16(p, m, s));
}
KESTREL_X86_INLINE __m128i row16(const int8_t* p, __mmask16, __m512) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

template <class T>
struct Im2colRows {
  static constexpr bool kQuads = true;
  const ConvGeometry& g;
  const T* in;
  size_t in_cstep;
  QuadPlanes qp;
  uint8_t* planes;
  __m512i even;  // lane L: element 2L of two vectors

  Im2colRows(const ConvGeometry& geo, const T* src, size_t cs, void* scratch)
      : g(geo), in(src), in_cstep(cs), qp(geo), planes(static_cast<uint8_t*>(scratch)),
        even(_mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0)) {}

  // The quads whose first channel is in [c0, c1) into their planes.
  void fill(int c0, int c1, float scale) const {
    const __m512 s = _mm512_set1_ps(scale);
    const int cols = qp.pad.cols;
    for (int cq = (c0 + 3) / 4; 4 * cq < c1; ++cq) {
      uint8_t* plane = planes + static_cast<size_t>(cq) * qp.cstep;
      std::fill(plane, plane + qp.cstep, uint8_t{0});
      const T* ch[4];
      for (int i = 0; i < 4; ++i) ch[i] = 4 * cq + i < g.in_c ? in + (4 * cq + i) * in_cstep : nullptr;
      for (int y = 0; y < g.in_h; ++y) {
        uint32_t* dst = reinterpret_cast<uint32_t*>(plane) + static_cast<size_t>(g.pad_top + y) * cols + g.pad_left;
        const size_t row = static_cast<size_t>(y) * g.in_w;
        for (int x = 0; x < g.in_w; x += W) {
          const __mmask16 m = V::lanes(std::min(W, g.in_w - x));
          __m128i b[4];
          for (int i = 0; i < 4; ++i) b[i] = ch[i] ? row16(ch[i] + row + x, m, s) : _mm_setzero_si128();
          // Channel pairs into 16-bit lanes, then the pairs into dwords: pixels 0-3, 4-7, ...
          const __m128i lo01 = _mm_unpacklo_epi8(b[0], b[1]), hi01 = _mm_unpackhi_epi8(b[0], b[1]);
          const __m128i lo23 = _mm_unpacklo_epi8(b[2], b[3]), hi23 = _mm_unpackhi_epi8(b[2], b[3]);
          __m512i q = _mm512_castsi128_si512(_mm_unpacklo_epi16(lo01, lo23));
          q = _mm512_inserti32x4(q, _mm_unpackhi_epi16(lo01, lo23), 1);
          q = _mm512_inserti32x4(q, _mm_unpacklo_epi16(hi01, hi23), 2);
          q = _mm512_inserti32x4(q, _mm_unpackhi_epi16(hi01, hi23), 3);
          _mm512_mask_storeu_epi32(dst + x, m, q);
        }
      }
    }
  }

  struct Cursor {
    const Im2colRows& s;
    ptrdiff_t origin[NP];  // a run's first pixel's window origin in the plane, in dwords
    __mmask16 lanes[NP];   // and its lanes
    int nruns = 0;
    const uint32_t* plane;
    int ky = 0, kx = 0;

    // Sixteen dwords from p at stride sw.
    KESTREL_X86_INLINE __m512i strided(const uint32_t* p) const {
      const int sw = s.g.sw;
      if (sw == 1) return _mm512_loadu_si512(p);
      if (sw == 2) return _mm512_permutex2var_epi32(_mm512_loadu_si512(p), s.even, _mm512_loadu_si512(p + W));
      const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                             _mm512_set1_epi32(sw));
      return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), 0xFFFF, idx, p, 4);
    }

    // The current tap's quads of the group's pixels, then the next tap (the weights'
    // order: channel quad, kernel row, kernel column).
    KESTREL_X86_INLINE __m512i next_quads() {
      const uint32_t* tap = plane + static_cast<ptrdiff_t>(ky) * s.g.dh * s.qp.pad.cols + kx * s.g.dw;
      __m512i v = _mm512_setzero_si512();
      for (int r = 0; r < nruns; ++r) v = _mm512_mask_expand_epi32(v, lanes[r], strided(tap + origin[r]));
      if (++kx == s.g.kw) {
        kx = 0;
        if (++ky == s.g.kh) ky = 0, plane += s.qp.cstep / 4;
      }
      return v;
    }
  };

  Cursor at(size_t gi, int np) const {
    Cursor c{*this, {}, {}, 0, reinterpret_cast<const uint32_t*>(planes)};
    qp.pad.for_each_run(g, gi * NP, np, [&](int j, int len, ptrdiff_t origin) {
      c.origin[c.nruns] = origin;
      c.lanes[c.nruns++] = static_cast<__mmask16>(((1u << len) - 1u) << j);
    });
    return c;
  }
};

size_t workspace_pointwise(const ConvGeometry& g) { return group_bytes(g); }
size_t workspace_im2col(const ConvGeometry& g) { return group_bytes(g) + padded_bytes(g); }

// Groups [g0, g1) into `groups`: for each group, taps 4q .. 4q + 3 of its pixels for
// each q in turn, packed into a dword a pixel (a quad source's loads as they are, else
// four taps quantized and packed), then each pixel's sum of its quantized inputs. Taps
// past K are zeros.
template <class Src>
void fill_groups(const Plan& p, const Src& src, float scale, size_t g0, size_t g1, uint32_t* groups) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i byte = _mm512_set1_epi32(0xFF), ones = _mm512_set1_epi32(0x01010101);
  for (size_t gi = g0; gi < g1; ++gi) {
    const int np = p.group_pixels(gi);
    const __mmask16 m = V::lanes(np);
    uint32_t* grp = group_at(groups, p, gi);
    auto cur = src.at(gi, np);
    __m512i sum = _mm512_setzero_si512();
    for (size_t q = 0; q < p.kd; ++q) {
      __m512i d = _mm512_setzero_si512();
      if constexpr (Src::kQuads) {
        d = cur.next_quads();
        sum = _mm512_dpbusd_epi32(sum, ones, d);  // the four signed bytes' sum
      } else {
        for (size_t i = 0; i < 4 && 4 * q + i < p.k; ++i) {
          const __m512i v = cur.next(s);
          sum = _mm512_add_epi32(sum, v);
          d = _mm512_or_si512(d, _mm512_maskz_slli_epi32(0xFFFF, _mm512_and_si512(v, byte), static_cast<unsigned>(8 * i)));
        }
      }
      _mm512_mask_storeu_epi32(grp + q * np, m, d);
    }
    _mm512_mask_storeu_epi32(grp + p.kd * np, m, sum);
  }
}

// An int8 output tile: NPX pixels' requantized channels (requantize_x16's floats, a
// vector of W channels each) become rows of NPX bytes, channels r < mr, as
// store_ctile's transposition does for floats. Converted as store_i8x16 does (a NaN
// left by requantize_x16 to 0x80000000, whose low byte is kept) for the scalar stores.
template <int NPX>
KESTREL_X86_INLINE void store_byte_tile(const __m512 (&q)[NPX][MV], int8_t* c, size_t ldc, int mr) {
  if constexpr (2 * NPX >= W) {
    alignas(64) float buf[NPX][MR];
    static_for<NPX>([&](auto j) {
      static_for<MV>([&](auto v) { V::storeu(&buf[j][v * W], q[j][v]); });
    });
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
    alignas(64) int32_t buf[NPX][MR];
    static_for<NPX>([&](auto j) {
      static_for<MV>([&](auto v) {
        _mm512_store_si512(&buf[j][v * W],
                           _mm512_maskz_cvt_roundps_epi32(0xFFFF, q[j][v], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      });
    });
    for (int r = 0; r < mr; ++r) {
      for (int j = 0; j < NPX; ++j) c[static_cast<size_t>(r) * ldc + j] = static_cast<int8_t>(buf[j][r] & 0xFF);
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
  run_dot_maps<V, Src>(
      g, io, ctx, group_bytes(g), p.panels, ngroups,
      [&](const auto& src, size_t g0, size_t g1) { fill_groups(p, src, io.in_scale, g0, g1, groups); },
      [&](int panel, size_t gi, auto* out, const auto& epi) {
        panel_group(g, p, packed, panel, gi, group_at(groups, p, gi), out, io.out_cstep, rq, epi);
      });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8Conv1x1_32x12_Avx512Vnni = {
    "i8_conv1x1_32x12_avx512vnni", Isa::kAvx512, kI8NeedsDot8, supports_pointwise, packed_bytes, pack, workspace_pointwise,
    no_workspace,                  run_on_floats<run_maps<PointwiseRows>>, run_maps<PointwiseRows>,
};
const I8ConvKernel kI8ConvIm2col_32x12_Avx512Vnni = {
    "i8_conv_im2col_32x12_avx512vnni", Isa::kAvx512, kI8NeedsDot8, supports_im2col, packed_bytes, pack, workspace_im2col,
    no_workspace,                      run_on_floats<run_maps<Im2colRows>>, run_maps<Im2colRows>,
};

}  // namespace kestrel::kernels::x86
