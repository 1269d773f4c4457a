// int8 depthwise K x K convolution (K = 3, 5; stride 1 or 2) on AVX512-VNNI, planar, 64
// output pixels of a row (4 vectors) per step, then 16 at a time, a channel per thread
// at a time. vpdpbusd sums the products of a window row's taps in one instruction: a
// pixel's dword holds four input bytes of its window row (taps kx = 4t .. 4t + 3, the
// bytes past K against zero weights), the broadcast dword four weights. So a 3x3 window
// is three vpdpbusd per 16 pixels, and a 5x5 one ten, against nine or 25 FMAs for the
// exact fp32 kernel (i8_dwconv_16_avx512), whose plane of a channel as floats also did
// not fit in L1 on BlazeFace's 128x128 maps (1.8x the fp32 kernel's time, Intel Xeon).
//
// vpdpbusd's unsigned operand is the input, as u8 = q + 128, the signed one the weights;
// each channel's sums start from -128 times the sum of its weights, which takes the
// offset back out (conv_reference_i8's int32 sums). Then, as the oracle does,
// float(sum) * dequant + bias, the activation, an fp32 store; or the one-fma
// requantization into an int8 map (i8_avx512.h).
//
// Per thread, per channel:
//   bytes  kByteRows padded input rows as u8, the padding 128 (a zero), written once;
//          the input's columns are rewritten row by row, kAhead rows ahead, quantized
//          from an fp32 map or read from an int8 map
//   ring   the dwords of the last kRing padded rows, [row % kRing][t][cols]: dword x of
//          quad t holds bytes S x + 4t .. S x + 4t + 3 of the row. Each row is built
//          once, when the first output row that reads it comes, and read by K / S rows.
// Packed per channel: dequant, bias, the start sum, then the K * nq weight dwords.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "x86/f32_gemm_x86.h"
#include "x86/i8_avx512.h"
#include "x86/x86_kernels.h"

KESTREL_X86_NS_BEGIN
namespace {

using V = F32x16;
constexpr int W = V::kWidth;
// Vectors of a row per main step.
constexpr int kNV = 4;
// Rows the ring holds: at least K + S - 1 (7 at K = 5, stride 2).
constexpr int kRing = 8;
// Byte rows are filled kAhead rows before the ring row that reads them: read at once,
// bytes just written by narrowing (masked) stores wait for the stores to retire, as no
// store forwards to the three overlapping loads of each dword (half of the kernel's
// time on MobileNet v1, Intel Xeon).
constexpr int kAhead = 3;
constexpr int kByteRows = kAhead + 1;
constexpr int kOffset = 128;
// Rows of more dword columns than this are left to the other kernels (the ring and the
// byte row then outgrow L1 and L2).
constexpr int kMaxCols = 4096;

// Quads (dwords) per window row: taps 0..3, and 4 at K = 5.
template <int K>
constexpr int kQuads = (K + 3) / 4;
template <int K>
constexpr size_t kChannelDwords = 3 + K * kQuads<K>;

struct Plan {
  int cols;        // dword columns of a ring row: out_w rounded up to whole vectors
  int byte_cols;   // bytes of a padded row, with room for the loads past it
  int rows;        // padded rows the output rows read
  Plan(const ConvGeometry& g, int k)
      : cols((g.out_w + W - 1) / W * W),
        byte_cols((g.sh * cols + k + 2 * W + 63) / 64 * 64),
        rows((g.out_h - 1) * g.sh + k) {}
  size_t ring_dwords(int quads) const { return static_cast<size_t>(kRing) * quads * cols; }
  size_t byte_bytes() const { return static_cast<size_t>(kByteRows) * byte_cols; }
};

template <int K>
bool supports(const ConvGeometry& g) {
  return i8_dwconv_window(g, K) && Plan(g, K).cols <= kMaxCols;
}

template <int K>
size_t packed_bytes(const ConvGeometry& g) {
  return static_cast<size_t>(g.out_c) * kChannelDwords<K> * sizeof(uint32_t);
}

template <int K>
void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  uint32_t* p = static_cast<uint32_t*>(packed);
  for (int c = 0; c < g.out_c; ++c, p += kChannelDwords<K>) {
    const int8_t* w = weight + static_cast<size_t>(c) * K * K;
    const float f[2] = {dequant[c], bias ? bias[c] : 0.f};
    std::memcpy(p, f, sizeof(f));
    int32_t sum = 0;
    for (int i = 0; i < K * K; ++i) sum += w[i];
    const int32_t start = -kOffset * sum;
    std::memcpy(p + 2, &start, sizeof(start));
    for (int ky = 0; ky < K; ++ky) {
      for (int t = 0; t < kQuads<K>; ++t) {
        uint32_t d = 0;
        for (int j = 0; j < 4 && 4 * t + j < K; ++j) {
          d |= static_cast<uint32_t>(static_cast<uint8_t>(w[ky * K + 4 * t + j])) << (8 * j);
        }
        p[3 + ky * kQuads<K> + t] = d;
      }
    }
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

template <int K>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  const Plan p(g, K);
  return p.byte_bytes() + p.ring_dwords(kQuads<K>) * sizeof(uint32_t);
}

// Sixteen input values of a row as offset bytes' int32 lanes: quantized floats, or an
// int8 map's bytes.
template <class T>
KESTREL_X86_INLINE __m512i offset_lanes(const T* in, __mmask16 m, __m512 s) {
  return _mm512_add_epi32(load_q8x16(in, m, s), _mm512_set1_epi32(kOffset));
}

// Input row `in` (in_w values) into the padded byte row's input columns.
template <class T>
void fill_bytes(const ConvGeometry& g, const T* in, float scale, uint8_t* bytes) {
  const __m512 s = _mm512_set1_ps(scale);
  uint8_t* dst = bytes + g.pad_left;
  int x = 0;
  for (; x + W <= g.in_w; x += W) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + x),
                     _mm512_maskz_cvtepi32_epi8(0xFFFF, offset_lanes(in + x, 0xFFFF, s)));
  }
  if (x < g.in_w) {
    const __mmask16 m = V::lanes(g.in_w - x);
    _mm512_mask_cvtepi32_storeu_epi8(dst + x, m, offset_lanes(in + x, m, s));
  }
}

// Lane i: byte S i of p, zero-extended.
template <int S>
KESTREL_X86_INLINE __m512i byte_lanes(const uint8_t* p) {
  const __m512i a = _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  if constexpr (S == 1) {
    return a;
  } else {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i b = _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + W)));
    return _mm512_maskz_permutex2var_epi32(0xFFFF, a, even, b);
  }
}

// The ring row of padded row `bytes`: dword x of quad t = bytes S x + 4t .. + 3 (those
// of taps past K left zero: their weights are).
template <int K, int S>
void build_row(const Plan& p, const uint8_t* bytes, uint32_t* row) {
  for (int t = 0; t < kQuads<K>; ++t) {
    const int taps = std::min(4, K - 4 * t);
    uint32_t* dst = row + static_cast<size_t>(t) * p.cols;
    for (int x = 0; x < p.cols; x += W) {
      const uint8_t* b = bytes + S * x + 4 * t;
      __m512i d = byte_lanes<S>(b);
      for (int j = 1; j < taps; ++j) {
        d = _mm512_or_si512(d, _mm512_maskz_slli_epi32(0xFFFF, byte_lanes<S>(b + j), static_cast<unsigned>(8 * j)));
      }
      _mm512_storeu_si512(dst + x, d);
    }
  }
}

// A padding row's ring row: every byte 128 (taps past K included: zero weights).
template <int K>
void padding_row(const Plan& p, uint32_t* row) {
  std::fill(row, row + static_cast<size_t>(kQuads<K>) * p.cols, 0x80808080u);
}

// NV vectors of output row `dst` from column x on: the K ring rows `rows` (quad t of
// row ky at rows[ky] + t * cols).
template <int K, int NV, class Out, class Epi>
KESTREL_X86_INLINE void step(const Plan& p, const uint32_t* const (&rows)[K], const uint32_t* w, __m512i start,
                             int x, int out_w, Out* dst, __m512 d, __m512 b, const Requant16& rq, const Epi& epi) {
  __m512i acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = start;
  for (int ky = 0; ky < K; ++ky) {
    for (int t = 0; t < kQuads<K>; ++t) {
      const uint32_t* q = rows[ky] + static_cast<size_t>(t) * p.cols + x;
      for (int v = 0; v < NV; ++v) acc[v] = dpbusd_broadcast(acc[v], _mm512_loadu_si512(q + v * W), w + ky * kQuads<K> + t);
    }
  }
  for (int v = 0; v < NV; ++v) {
    store_sums_x16(dst + x + v * W, _mm512_maskz_cvtepi32_ps(0xFFFF, acc[v]), d, b, out_w - x - v * W, rq, epi);
  }
}

template <int K, int S, class T, class Out, class Epi>
void channel(const ConvGeometry& g, const Plan& p, const T* in, const uint32_t* packed, Out* out, uint8_t* bytes,
             uint32_t* ring, float in_scale, const Requant16& rq, const Epi& epi) {
  constexpr bool kBytes = std::is_same_v<Out, int8_t>;
  constexpr size_t kRowDwords = kQuads<K>;
  float f[2];
  std::memcpy(f, packed, sizeof(f));
  int32_t s0;
  std::memcpy(&s0, packed + 2, sizeof(s0));
  // An int8 output's factors m and c (i8_reference.h) in place of dequant and bias.
  const __m512 d = _mm512_set1_ps(kBytes ? f[0] * rq.scale : f[0]);
  const __m512 b = _mm512_set1_ps(kBytes ? f[1] * rq.scale : f[1]);
  const __m512i start = _mm512_set1_epi32(s0);
  const uint32_t* w = packed + 3;
  // Padded row r's input row, or -1 for a padding row.
  auto input_row = [&](int r) { return r >= g.pad_top && r - g.pad_top < g.in_h ? r - g.pad_top : -1; };
  auto byte_row = [&](int r) { return bytes + static_cast<size_t>(r % kByteRows) * p.byte_cols; };
  auto fill = [&](int r) {
    const int iy = r < p.rows ? input_row(r) : -1;
    if (iy >= 0) fill_bytes(g, in + static_cast<size_t>(iy) * g.in_w, in_scale, byte_row(r));
  };
  for (int r = 0; r < kAhead; ++r) fill(r);
  int built = 0;
  for (int oy = 0; oy < g.out_h; ++oy) {
    for (const int need = oy * S + K; built < need; ++built) {
      fill(built + kAhead);
      uint32_t* row = ring + static_cast<size_t>(built % kRing) * kRowDwords * p.cols;
      if (input_row(built) < 0) {
        padding_row<K>(p, row);
      } else {
        build_row<K, S>(p, byte_row(built), row);
      }
    }
    const uint32_t* rows[K];
    for (int ky = 0; ky < K; ++ky) rows[ky] = ring + static_cast<size_t>((oy * S + ky) % kRing) * kRowDwords * p.cols;
    Out* dst = out + static_cast<size_t>(oy) * g.out_w;
    int x = 0;
    for (; x + kNV * W <= p.cols; x += kNV * W) step<K, kNV>(p, rows, w, start, x, g.out_w, dst, d, b, rq, epi);
    for (; x < g.out_w; x += W) step<K, 1>(p, rows, w, start, x, g.out_w, dst, d, b, rq, epi);
    if constexpr (!kBytes) epi.finish(dst, static_cast<size_t>(g.out_w));
  }
}

template <int K>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plan p(g, K);
  const uint32_t* weights = static_cast<const uint32_t*>(packed);
  const Requant16 rq = requant16_of(g.act, io.out_scale);
  with_i8_operands(io, [&](const auto* in, auto* out) {
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        uint8_t* bytes = static_cast<uint8_t*>(ctx.scratch_of(omp_get_thread_num()));
        uint32_t* ring = reinterpret_cast<uint32_t*>(bytes + p.byte_bytes());
        std::fill(bytes, bytes + p.byte_bytes(), static_cast<uint8_t>(kOffset));
#pragma omp for schedule(static)
        for (int c = 0; c < g.out_c; ++c) {
          const uint32_t* wc = weights + static_cast<size_t>(c) * kChannelDwords<K>;
          const auto* src = in + c * io.in_cstep;
          auto* dst = out + c * io.out_cstep;
          if (g.sh == 1) {
            channel<K, 1>(g, p, src, wc, dst, bytes, ring, io.in_scale, rq, epi);
          } else {
            channel<K, 2>(g, p, src, wc, dst, bytes, ring, io.in_scale, rq, epi);
          }
        }
      }
    });
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_64_Avx512Vnni = {
    "i8_dwconv3x3_64_avx512vnni", Isa::kAvx512, kI8NeedsDot8, supports<3>, packed_bytes<3>, pack<3>, no_workspace,
    workspace_per_thread_bytes<3>, run_on_floats<run_maps<3>>, run_maps<3>,
};
const I8ConvKernel kI8DwConv5x5_64_Avx512Vnni = {
    "i8_dwconv5x5_64_avx512vnni", Isa::kAvx512, kI8NeedsDot8, supports<5>, packed_bytes<5>, pack<5>, no_workspace,
    workspace_per_thread_bytes<5>, run_on_floats<run_maps<5>>, run_maps<5>,
};

}  // namespace kestrel::kernels::x86
