// int8 1x1 convolution on AVX512-VNNI with pixel tiles: 8 output channels x 48 pixels
// (3 vectors) per register tile, over the input channels in quads, for maps of more
// than kMaxChannelTilePixels pixels. The channel tiles (i8_conv_32x12_avx512vnni.cpp)
// transpose every tile into planar rows on the way out and waste a 32-channel panel on
// BlazeFace's and MobileNet v2's 16- to 48-channel layers; here each accumulator is 16
// pixels of one channel, stored as it is.
//
// vpdpbusd's unsigned operand is the input here, as u8 = q + 128, and its signed
// broadcast operand four weights of one channel (folded into the instruction); each
// channel's sums start from -128 times the sum of its weights, which takes the offset
// back out: conv_reference_i8's int32 sums (wrapping modulo 2^32, the true sum fits).
// Then float(sum) * dequant + bias (a multiply and an add), the activation, the store;
// or, into an int8 map, the sums requantized in one fma (i8_avx512.h).
//
// Layouts
//   packed  [panel][K / 4][8] dwords (four s8 weights of a channel, w[4q] in the low
//           byte), then per panel 8 int32 start values, 8 dequant factors and 8 biases;
//           missing channels zero
//   quads   the input quantized (an fp32 map) or as it is (an int8 map): [K / 4][pixels]
//           dwords (four u8, channel 4q in the low byte; a short last quad's missing
//           channels 128, against zero weights), in the shared workspace
// Threads quantize a share of the quads, then split the (panel, pixel tile) pairs.
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_avx512.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

using V = F32x16;
constexpr int W = V::kWidth, MR = 8, NV = 3, NR = NV * W;
constexpr int kOffset = 128;
// Maps of at most this many pixels go to the channel tiles (fewer than 6 pixel tiles:
// 14x14 and smaller).
constexpr size_t kMaxChannelTilePixels = 256;
// Quantized maps beyond this many bytes are left to other routes.
constexpr size_t kMaxQuadBytes = size_t(64) << 20;

struct Plan {
  size_t k, kq, pixels;
  int panels;
  explicit Plan(const ConvGeometry& g)
      : k(static_cast<size_t>(g.in_c)),
        kq((k + 3) / 4),
        pixels(static_cast<size_t>(g.out_h) * g.out_w),
        panels((g.out_c + MR - 1) / MR) {}
  size_t panel_dwords() const { return (kq + 3) * MR; }
  size_t tiles() const { return (pixels + NR - 1) / NR; }
};

bool supports(const ConvGeometry& g) {
  if (!g.planar() || g.group != 1 || !g.is_pointwise() || g.out_c <= 0 || g.in_c <= 0) return false;
  const Plan p(g);
  return p.k <= kMaxProducts && p.pixels > kMaxChannelTilePixels && p.kq * p.pixels <= kMaxQuadBytes / 4 &&
         static_cast<size_t>(p.panels) * p.panel_dwords() < (size_t(1) << 30);
}

size_t packed_bytes(const ConvGeometry& g) {
  const Plan p(g);
  return static_cast<size_t>(p.panels) * p.panel_dwords() * sizeof(uint32_t);
}

void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  const Plan p(g);
  for (int panel = 0; panel < p.panels; ++panel) {
    uint32_t* quads = static_cast<uint32_t*>(packed) + static_cast<size_t>(panel) * p.panel_dwords();
    int32_t* start = reinterpret_cast<int32_t*>(quads + p.kq * MR);
    float* dq = reinterpret_cast<float*>(start + MR);
    float* b = dq + MR;
    for (int r = 0; r < MR; ++r) {
      const int o = panel * MR + r;
      const int8_t* src = o < g.out_c ? weight + static_cast<size_t>(o) * p.k : nullptr;
      int32_t sum = 0;
      for (size_t q = 0; q < p.kq; ++q) {
        uint32_t d = 0;
        for (size_t i = 0; i < 4; ++i) {
          const size_t c = 4 * q + i;
          const int8_t w = src && c < p.k ? src[c] : 0;
          sum += w;
          d |= static_cast<uint32_t>(static_cast<uint8_t>(w)) << (8 * i);
        }
        quads[q * MR + r] = d;
      }
      start[r] = -kOffset * sum;
      dq[r] = src ? dequant[o] : 0.f;
      b[r] = src && bias ? bias[o] : 0.f;
    }
  }
}

size_t workspace_bytes(const ConvGeometry& g) {
  const Plan p(g);
  return p.kq * p.pixels * sizeof(uint32_t);
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// Quads [q0, q1) of the planar input, quantized or read, offset and packed a dword a
// pixel.
template <class T>
void fill_quads(const Plan& p, const T* in, size_t cstep, float scale, size_t q0, size_t q1, uint32_t* quads) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i offset = _mm512_set1_epi32(kOffset);
  for (size_t q = q0; q < q1; ++q) {
    uint32_t* dst = quads + q * p.pixels;
    for (size_t px = 0; px < p.pixels; px += W) {
      const __mmask16 m = V::lanes(static_cast<int>(std::min<size_t>(W, p.pixels - px)));
      __m512i d = _mm512_setzero_si512();
      for (size_t i = 0; i < 4; ++i) {
        const size_t c = 4 * q + i;
        const __m512i v = c < p.k ? load_q8x16(in + c * cstep + px, m, s) : _mm512_setzero_si512();
        d = _mm512_or_si512(d, _mm512_maskz_slli_epi32(0xFFFF, _mm512_add_epi32(v, offset), static_cast<unsigned>(8 * i)));
      }
      _mm512_mask_storeu_epi32(dst + px, m, d);
    }
  }
}

// An MR x (NVX * W) tile: channels r < mr, pixels j < nr of c (rows ldc apart).
template <int NVX, class Out, class Epi>
__attribute__((noinline)) void tile(size_t kq, const uint32_t* __restrict a, const uint32_t* __restrict x, size_t xs,
                                    Out* c, size_t ldc, int mr, int nr, const Requant16& rq, const Epi& epi) {
  const int32_t* start = reinterpret_cast<const int32_t*>(a + kq * MR);
  const float* dq = reinterpret_cast<const float*>(start + MR);
  const float* bias = dq + MR;
  __m512i acc[MR][NVX];
  static_for<MR>([&](auto r) {
    const __m512i s = _mm512_set1_epi32(start[r]);
    static_for<NVX>([&](auto v) { acc[r][v] = s; });
  });
  for (size_t q = 0; q < kq; ++q, a += MR, x += xs) {
    __m512i xv[NVX];
    static_for<NVX>([&](auto v) { xv[v] = _mm512_loadu_si512(x + v * W); });
    static_for<MR>([&](auto r) {
      static_for<NVX>([&](auto v) { acc[r][v] = dpbusd_broadcast(acc[r][v], xv[v], a + r); });
    });
  }
  constexpr bool kBytes = std::is_same_v<Out, int8_t>;
  static_for<MR>([&](auto r) {
    if (r < mr) {
      const __m512 d = _mm512_set1_ps(kBytes ? dq[r] * rq.scale : dq[r]);
      const __m512 b = _mm512_set1_ps(kBytes ? bias[r] * rq.scale : bias[r]);
      Out* row = c + static_cast<size_t>(r) * ldc;
      static_for<NVX>([&](auto v) {
        store_sums_x16(row + v * W, _mm512_maskz_cvtepi32_ps(0xFFFF, acc[r][v]), d, b, nr - v * W, rq, epi);
      });
      if constexpr (!kBytes) epi.finish(row, static_cast<size_t>(nr));
    }
  });
}

template <class Out, class Epi>
void panel_tile(const ConvGeometry& g, const Plan& p, const void* packed, int panel, size_t t, const uint32_t* quads,
                Out* out, size_t out_cstep, const Requant16& rq, const Epi& epi) {
  const uint32_t* a = static_cast<const uint32_t*>(packed) + static_cast<size_t>(panel) * p.panel_dwords();
  const int mr = std::min(MR, g.out_c - panel * MR);
  const size_t px = t * NR;
  const int nr = static_cast<int>(std::min<size_t>(NR, p.pixels - px));
  Out* c = out + static_cast<size_t>(panel) * MR * out_cstep + px;
  const uint32_t* x = quads + px;
  if (nr > 2 * W) {
    tile<3>(p.kq, a, x, p.pixels, c, out_cstep, mr, nr, rq, epi);
  } else if (nr > W) {
    tile<2>(p.kq, a, x, p.pixels, c, out_cstep, mr, nr, rq, epi);
  } else {
    tile<1>(p.kq, a, x, p.pixels, c, out_cstep, mr, nr, rq, epi);
  }
}

void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plan p(g);
  uint32_t* quads = static_cast<uint32_t*>(ctx.workspace);
  const size_t tiles = p.tiles();
  const Requant16 rq = requant16_of(g.act, io.out_scale);
  with_i8_operands(io, [&](const auto* in, auto* out) {
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
        fill_quads(p, in, io.in_cstep, io.in_scale, p.kq * t / n, p.kq * (t + 1) / n, quads);
#pragma omp barrier
        // Thread t's share of the (pixel tile, panel) pairs, tile by tile: a tile's quads
        // stay in L1 across the panels.
        const size_t total = static_cast<size_t>(p.panels) * tiles;
        for (size_t i = total * t / n, end = total * (t + 1) / n; i < end; ++i) {
          panel_tile(g, p, packed, static_cast<int>(i % p.panels), i / p.panels, quads, out, io.out_cstep, rq, epi);
        }
      }
    });
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8Conv1x1_8x48_Avx512Vnni = {
    "i8_conv1x1_8x48_avx512vnni", Isa::kAvx512, kI8NeedsDot8, supports, packed_bytes, pack, workspace_bytes,
    no_workspace,                 run_on_floats<run_maps>, run_maps,
};

}  // namespace kestrel::kernels::x86
