// int8 depthwise K x K convolution (K = 3, 5; stride 1 or 2) on AVX512-VNNI and -VBMI
// with the channels along the vectors: 16 channels at a time, the planar maps transposed
// in and out. The planar kernel (i8_dwconv_64_avx512vnni.cpp) runs one channel and one
// row at a time, whose fixed costs per row dominate on 14x14 and 7x7 maps: its depthwise
// layers took 2.5x fp32's time on MobileNet v2 (Intel Xeon).
//
// Per thread and group of 16 channels:
//   plane  the padded input, pixel-major: [row][position][16 channels] as u8 = q + 128,
//          the padding 128 (a zero); filled once per run, its input part rewritten per
//          group, 16 x 16 bytes at a time by vpermt2b.
//   steps  16 pixels of the flattened output plane (rows run on: a 7x7 map wastes no
//          lanes), four pixels side by side: per window row and quad t, one 64-byte load of
//          four positions, one vpermb that gives each channel's dword its four taps, one
//          vpdpbusd against four weights of each channel. Each channel's sum starts from
//          -128 times the sum of its weights, which takes the offset back out
//          (conv_reference_i8's int32 sums).
//   out    as the oracle: float(sum) * dequant + bias and the activation (fp32), or the
//          one-fma requantization (int8, i8_avx512.h); transposed back to 16 planar rows
//          of 16 pixels (vpermt2b for bytes, transpose_square for floats), stored.
// Packed per group: K * quads weight vectors (byte 4c + j: channel c's tap 4t + j of the
// window row; zero past K and past the channels), then 16 start sums, 16 dequant factors
// and 16 biases; after the groups, each output pixel's window offset in the plane (whole
// steps of them, the pixels past the plane repeating its last: computed, not stored).
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
constexpr int kC = 16;    // channels of a group: the lanes
constexpr int kPix = 16;  // output pixels per step
constexpr int kOffset = 128;
// Larger output planes go to the planar kernel, which was as fast or faster from 64x64
// on (3x3: level at 64x64, 0.9x at 112x112; 5x5 0.85x at 64x64) and wastes no lanes
// on BlazeFace's 24-channel 128x128 maps; this one is 1.4x to 4x as fast from 56x56
// down (Intel Xeon, Sapphire Rapids class, 1 thread).
constexpr size_t kMaxPixels = 56 * 56;
constexpr size_t kMaxPlaneBytes = size_t(1) << 20;

template <int K>
constexpr int kQuads = (K + 3) / 4;
template <int K>
constexpr int kWeightVectors = K * kQuads<K>;
template <int K>
constexpr size_t kGroupBytes = (kWeightVectors<K> + 3) * 64;

// vpermb / vpermt2b indices (bit 6 of a vpermt2b index picks the second operand).
struct Tables {
  // Four positions' 16 channels to 16 channels' four taps: byte 4c + j = byte 16j + c.
  alignas(64) uint8_t taps[64] = {};
  // The transpose in, from Y_k (lane i: channel 4k + i's 16 pixels): level 1 gives
  // A[h][half] = pixels 8 half .. + 7 of channels 8h .. + 7 (byte 8 pixel + channel)
  // from Y_2h and Y_2h+1; level 2 T_m (lane j: pixel 4m + j's 16 channels) from A[0]
  // and A[1] of pixel half m / 2.
  alignas(64) uint8_t in1[2][64] = {};
  alignas(64) uint8_t in2[2][64] = {};
  // The transpose out, from 16 pixels' int32 vectors Q_p (channel c in dword c): pairs
  // to B (byte 2c + s: Q_2a+s's channel c), B pairs to D_b (lane l: pixel 4b + l's
  // channels), then the transpose in's inverse: E[h][k2] = channels 8 k2 .. + 7 of
  // pixels 8h .. + 7 (byte 8 channel + pixel), Y_k (lane i: channel 4k + i's pixels).
  // pair and quad also pack four channels' quantized rows (int32 lanes) into a Y_k.
  alignas(64) uint8_t pair[64] = {};
  alignas(64) uint8_t quad[64] = {};
  alignas(64) uint8_t out1[2][64] = {};
  alignas(64) uint8_t out2[2][64] = {};
};

constexpr Tables make_tables() {
  Tables t;
  for (int c = 0; c < 16; ++c) {
    for (int j = 0; j < 4; ++j) t.taps[4 * c + j] = static_cast<uint8_t>(16 * j + c);
  }
  for (int half = 0; half < 2; ++half) {
    for (int pl = 0; pl < 8; ++pl) {
      for (int cl = 0; cl < 8; ++cl) {
        t.in1[half][8 * pl + cl] = static_cast<uint8_t>(((cl >> 2) << 6) | (16 * (cl & 3) + 8 * half + pl));
        t.out1[half][8 * cl + pl] = static_cast<uint8_t>(((pl >> 2) << 6) | (16 * (pl & 3) + 8 * half + cl));
      }
    }
    for (int j = 0; j < 4; ++j) {
      for (int c = 0; c < 16; ++c) {
        t.in2[half][16 * j + c] = static_cast<uint8_t>(((c >> 3) << 6) | (8 * (4 * half + j) + (c & 7)));
        t.out2[half][16 * j + c] = static_cast<uint8_t>(((c >> 3) << 6) | (8 * (4 * half + j) + (c & 7)));
      }
    }
  }
  for (int c = 0; c < 16; ++c) {
    for (int s = 0; s < 2; ++s) {
      t.pair[2 * c + s] = static_cast<uint8_t>((s << 6) | (4 * c));
      t.pair[32 + 2 * c + s] = t.pair[2 * c + s];
    }
  }
  for (int l = 0; l < 4; ++l) {
    for (int c = 0; c < 16; ++c) t.quad[16 * l + c] = static_cast<uint8_t>(((l >> 1) << 6) | (2 * c + (l & 1)));
  }
  return t;
}
constexpr Tables kTables = make_tables();

KESTREL_X86_INLINE __m512i table(const uint8_t* t) { return _mm512_load_si512(t); }
KESTREL_X86_INLINE __m512i permute2(__m512i a, const uint8_t* idx, __m512i b) {
  return _mm512_maskz_permutex2var_epi8(~__mmask64(0), a, table(idx), b);
}

struct Plan {
  int rows;  // padded rows the outputs read
  int cols;  // positions of a padded row: the windows' quads, and the input's columns
  size_t pixels;
  int groups;
  Plan(const ConvGeometry& g, int k)
      : rows((g.out_h - 1) * g.sh + k),
        cols(std::max((g.out_w - 1) * g.sw + 4 * ((k + 3) / 4), g.pad_left + g.in_w)),
        pixels(static_cast<size_t>(g.out_h) * g.out_w),
        groups((g.out_c + kC - 1) / kC) {}
  size_t row_bytes() const { return static_cast<size_t>(cols) * kC; }
  size_t plane_bytes() const { return static_cast<size_t>(rows) * row_bytes(); }
  size_t offsets() const { return (pixels + kPix - 1) / kPix * kPix; }
};

template <int K>
bool supports(const ConvGeometry& g) {
  if (!i8_dwconv_window(g, K)) return false;
  const Plan p(g, K);
  return p.pixels <= kMaxPixels && p.plane_bytes() <= kMaxPlaneBytes;
}

template <int K>
size_t packed_bytes(const ConvGeometry& g) {
  const Plan p(g, K);
  return static_cast<size_t>(p.groups) * kGroupBytes<K> + p.offsets() * sizeof(uint32_t);
}

template <int K>
void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  const Plan p(g, K);
  uint8_t* dst = static_cast<uint8_t*>(packed);
  for (int group = 0; group < p.groups; ++group, dst += kGroupBytes<K>) {
    std::memset(dst, 0, kGroupBytes<K>);
    int32_t start[kC] = {};
    float dq[kC] = {}, b[kC] = {};
    for (int c = 0; c < kC && group * kC + c < g.out_c; ++c) {
      const int o = group * kC + c;
      const int8_t* w = weight + static_cast<size_t>(o) * K * K;
      int32_t sum = 0;
      for (int ky = 0; ky < K; ++ky) {
        for (int kx = 0; kx < K; ++kx) {
          sum += w[ky * K + kx];
          dst[(ky * kQuads<K> + kx / 4) * 64 + 4 * c + kx % 4] = static_cast<uint8_t>(w[ky * K + kx]);
        }
      }
      start[c] = -kOffset * sum;
      dq[c] = dequant[o];
      b[c] = bias ? bias[o] : 0.f;
    }
    uint8_t* tail = dst + kWeightVectors<K> * 64;
    std::memcpy(tail, start, sizeof(start));
    std::memcpy(tail + 64, dq, sizeof(dq));
    std::memcpy(tail + 128, b, sizeof(b));
  }
  uint32_t* off = reinterpret_cast<uint32_t*>(dst);
  size_t i = 0;
  for (int oy = 0; oy < g.out_h; ++oy) {
    for (int ox = 0; ox < g.out_w; ++ox) {
      off[i++] = static_cast<uint32_t>(static_cast<size_t>(oy) * g.sh * p.row_bytes() + static_cast<size_t>(ox) * g.sw * kC);
    }
  }
  for (; i < p.offsets(); ++i) off[i] = off[p.pixels - 1];
}

size_t no_workspace(const ConvGeometry&) { return 0; }

template <int K>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  return Plan(g, K).plane_bytes();
}

// Channels 4k .. 4k + 3 (those below nc) of a row, 16 values from x on (the first n
// used), as Y_k: lane i the bytes of channel 4k + i. An int8 map's rows are read as they
// are (16 bytes: maps are followed by kOverreadBytes); floats are quantized, and their
// int32 lanes' low bytes packed by two vpermt2b levels (three in all, against a vpmovdb
// and an insert per channel).
KESTREL_X86_INLINE __m512i channel_rows(const int8_t* in, size_t cstep, int k, int nc, __m512, int) {
  __m512i v = _mm512_setzero_si512();
  static_for<4>([&](auto i) KESTREL_LAMBDA_INLINE {
    if (4 * k + i < nc) {
      const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + static_cast<size_t>(4 * k + i) * cstep));
      v = _mm512_maskz_inserti32x4(0xFFFF, v, r, decltype(i)::value);
    }
  });
  return v;
}
KESTREL_X86_INLINE __m512i channel_rows(const float* in, size_t cstep, int k, int nc, __m512 s, int n) {
  __m512i q[4];
  static_for<4>([&](auto i) KESTREL_LAMBDA_INLINE {
    q[i] = 4 * k + i < nc ? load_q8x16(in + static_cast<size_t>(4 * k + i) * cstep, V::lanes(n), s)
                          : _mm512_setzero_si512();
  });
  return permute2(permute2(q[0], kTables.pair, q[1]), kTables.quad, permute2(q[2], kTables.pair, q[3]));
}

// Input row iy of channels c0 .. c0 + nc - 1 into the plane's padded row r, offset.
template <class T>
void fill_row(const ConvGeometry& g, const T* in, size_t cstep, int c0, int nc, int iy, float scale, uint8_t* row) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(kOffset));
  const T* src = in + static_cast<size_t>(c0) * cstep + static_cast<size_t>(iy) * g.in_w;
  for (int x = 0; x < g.in_w; x += kPix) {
    const int n = std::min(kPix, g.in_w - x);
    __m512i y[4];
    static_for<4>([&](auto k) KESTREL_LAMBDA_INLINE { y[k] = channel_rows(src + x, cstep, k, nc, s, n); });
    __m512i a[2][2];
    static_for<2>([&](auto h) KESTREL_LAMBDA_INLINE {
      static_for<2>([&](auto half) KESTREL_LAMBDA_INLINE { a[h][half] = permute2(y[2 * h], kTables.in1[half], y[2 * h + 1]); });
    });
    uint8_t* dst = row + static_cast<size_t>(g.pad_left + x) * kC;
    static_for<4>([&](auto m) KESTREL_LAMBDA_INLINE {
      const __m512i t = _mm512_xor_si512(permute2(a[0][m / 2], kTables.in2[m % 2], a[1][m / 2]), offset);
      const int valid = n - 4 * m;
      if (valid >= 4) {
        _mm512_storeu_si512(dst + 64 * m, t);
      } else if (valid > 0) {
        _mm512_mask_storeu_epi8(dst + 64 * m, (__mmask64(1) << (16 * valid)) - 1, t);
      }
    });
  }
}

// Sixteen requantized (or dequantized) pixel vectors into 16 planar rows of the group's
// channels, the first n pixels from `p` on.
struct Outputs {
  size_t cstep;
  int c0, nc;
};

KESTREL_X86_INLINE void store_pixels(const Outputs& o, int8_t* out, size_t p, int n, const __m512i (&d)[4]) {
  __m512i e[2][2];
  static_for<2>([&](auto h) KESTREL_LAMBDA_INLINE {
    static_for<2>([&](auto k2) KESTREL_LAMBDA_INLINE { e[h][k2] = permute2(d[2 * h], kTables.out1[k2], d[2 * h + 1]); });
  });
  static_for<4>([&](auto k) KESTREL_LAMBDA_INLINE {
    const __m512i y = permute2(e[0][k / 2], kTables.out2[k % 2], e[1][k / 2]);
    static_for<4>([&](auto i) KESTREL_LAMBDA_INLINE {
      const int c = 4 * k + i;
      if (c < o.nc) {
        int8_t* dst = out + static_cast<size_t>(o.c0 + c) * o.cstep + p;
        const __m128i v = _mm512_maskz_extracti32x4_epi32(0xF, y, decltype(i)::value);
        if (n >= kPix) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
        } else {
          _mm_mask_storeu_epi8(dst, static_cast<__mmask16>((1u << n) - 1u), v);
        }
      }
    });
  });
}

// vpermb of the 64 bytes at p by the taps table, the load folded into it (written out:
// GCC 12 hoisted the 48 loads of a 16-pixel step ahead of their vpermb and spilled them).
KESTREL_X86_INLINE __m512i taps_of(const uint8_t* p, __m512i taps) {
  __m512i x;
  asm("vpermb %2, %1, %0" : "=v"(x) : "v"(taps), "m"(*reinterpret_cast<const uint8_t(*)[64]>(p)));
  return x;
}

// The window sums of four output pixels (windows at plane + po[j]), 16 channels each,
// side by side: four chains of vpdpbusd in flight.
template <int K>
KESTREL_X86_INLINE void window_sums(const uint8_t* plane, const uint32_t* po, size_t rb,
                                    const __m512i (&w)[kWeightVectors<K>], __m512i start, __m512i taps,
                                    __m512i (&acc)[4]) {
  static_for<4>([&](auto j) KESTREL_LAMBDA_INLINE { acc[j] = start; });
  static_for<K>([&](auto ky) KESTREL_LAMBDA_INLINE {
    static_for<kQuads<K>>([&](auto t) KESTREL_LAMBDA_INLINE {
      static_for<4>([&](auto j) KESTREL_LAMBDA_INLINE {
        acc[j] = _mm512_dpbusd_epi32(acc[j], taps_of(plane + po[j] + ky * rb + 64 * t, taps), w[ky * kQuads<K> + t]);
      });
    });
  });
}

template <int K, class T, class Out, class Epi>
void group(const ConvGeometry& g, const Plan& p, const T* in, size_t in_cstep, float in_scale, int grp,
           const uint8_t* packed, Out* out, size_t out_cstep, uint8_t* plane, const uint32_t* off, const Requant16& rq,
           const Epi& epi) {
  constexpr bool kBytes = std::is_same_v<Out, int8_t>;
  const int c0 = grp * kC, nc = std::min(kC, g.out_c - c0);
  for (int iy = 0; iy < g.in_h && g.pad_top + iy < p.rows; ++iy) {
    fill_row(g, in, in_cstep, c0, nc, iy, in_scale, plane + static_cast<size_t>(g.pad_top + iy) * p.row_bytes());
  }
  __m512i w[kWeightVectors<K>];
  for (int i = 0; i < kWeightVectors<K>; ++i) w[i] = _mm512_load_si512(packed + 64 * i);
  const uint8_t* tail = packed + kWeightVectors<K> * 64;
  const __m512i start = _mm512_load_si512(tail);
  const __m512 dq = _mm512_load_ps(tail + 64), bias = _mm512_load_ps(tail + 128);
  // An int8 output's factors m and c (i8_reference.h) in place of dequant and bias.
  const __m512 d = kBytes ? _mm512_mul_ps(dq, _mm512_set1_ps(rq.scale)) : dq;
  const __m512 b = kBytes ? _mm512_mul_ps(bias, _mm512_set1_ps(rq.scale)) : bias;
  const __m512i taps = table(kTables.taps);
  const size_t rb = p.row_bytes();
  const Outputs o{out_cstep, c0, nc};
  for (size_t p0 = 0; p0 < p.pixels; p0 += kPix) {
    const int n = static_cast<int>(std::min<size_t>(kPix, p.pixels - p0));
    const uint32_t* po = off + p0;
    if constexpr (kBytes) {
      // Four pixels at a time, packed as they come: fewer vectors live.
      __m512i quads[4];
      static_for<4>([&](auto bb) KESTREL_LAMBDA_INLINE {
        __m512i acc[4];
        window_sums<K>(plane, po + 4 * bb, rb, w, start, taps, acc);
        __m512i r[4];
        static_for<4>([&](auto j) KESTREL_LAMBDA_INLINE {
          const __m512 sum = _mm512_maskz_cvtepi32_ps(0xFFFF, acc[j]);
          r[j] = _mm512_maskz_cvt_roundps_epi32(0xFFFF, requantize_x16(sum, d, b, rq, epi),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        });
        quads[bb] = permute2(permute2(r[0], kTables.pair, r[1]), kTables.quad, permute2(r[2], kTables.pair, r[3]));
      });
      store_pixels(o, out, p0, n, quads);
    } else {
      __m512 r[kPix];
      static_for<4>([&](auto bb) KESTREL_LAMBDA_INLINE {
        __m512i acc[4];
        window_sums<K>(plane, po + 4 * bb, rb, w, start, taps, acc);
        static_for<4>([&](auto j) KESTREL_LAMBDA_INLINE {
          r[4 * bb + j] = epi(_mm512_add_ps(_mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, acc[j]), d), b));
        });
      });
      transpose_square(r);
      for (int c = 0; c < nc; ++c) {
        float* dst = out + static_cast<size_t>(c0 + c) * out_cstep + p0;
        if (n >= kPix) {
          _mm512_storeu_ps(dst, r[c]);
        } else {
          _mm512_mask_storeu_ps(dst, V::lanes(n), r[c]);
        }
        epi.finish(dst, static_cast<size_t>(n));
      }
    }
  }
}

template <int K>
void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plan p(g, K);
  const Requant16 rq = requant16_of(g.act, io.out_scale);
  const uint32_t* off = reinterpret_cast<const uint32_t*>(static_cast<const uint8_t*>(packed) +
                                                          static_cast<size_t>(p.groups) * kGroupBytes<K>);
  with_i8_operands(io, [&](const auto* in, auto* out) {
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        uint8_t* plane = static_cast<uint8_t*>(ctx.scratch_of(omp_get_thread_num()));
        std::memset(plane, kOffset, p.plane_bytes());
#pragma omp for schedule(static)
        for (int grp = 0; grp < p.groups; ++grp) {
          const uint8_t* wg = static_cast<const uint8_t*>(packed) + static_cast<size_t>(grp) * kGroupBytes<K>;
          group<K>(g, p, in, io.in_cstep, io.in_scale, grp, wg, out, io.out_cstep, plane, off, rq, epi);
        }
      }
    });
  });
}

}  // namespace
KESTREL_X86_NS_END

namespace kestrel::kernels::x86 {

const I8ConvKernel kI8DwConv3x3_C16_Avx512Vbmi = {
    "i8_dwconv3x3_c16_avx512vbmi", Isa::kAvx512, kI8NeedsDot8 | kI8NeedsVbmi, supports<3>, packed_bytes<3>, pack<3>,
    no_workspace, workspace_per_thread_bytes<3>, run_on_floats<run_maps<3>>, run_maps<3>,
};
const I8ConvKernel kI8DwConv5x5_C16_Avx512Vbmi = {
    "i8_dwconv5x5_c16_avx512vbmi", Isa::kAvx512, kI8NeedsDot8 | kI8NeedsVbmi, supports<5>, packed_bytes<5>, pack<5>,
    no_workspace, workspace_per_thread_bytes<5>, run_on_floats<run_maps<5>>, run_maps<5>,
};

}  // namespace kestrel::kernels::x86
