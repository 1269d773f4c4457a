// The driver the NEON int8 convolutions share (Precision::kInt8, one group): the input
// quantized into tap groups, weights packed in panels of 8 output channels, panels x
// groups of 12 pixels split over threads, and the tile epilogue (dequantization, bias,
// activation, fp32 or requantized int8 stores). What differs between SDOT
// (i8_conv_8x12_neondot.cpp) and SMULL/SMLAL (i8_conv_4x4_neon.cpp) is a scheme S:
//
//   S::kGroup        taps a pixel's group holds (SDOT: a quad, 4; SMLAL: 16)
//   S::weight_index  where tap group q, row r, byte i of a panel's weights goes
//   S::steps<NV>     the int32 sums of an 8 x 4NV tile over all kd groups, acc[r][j]
//                    lane i channel r, pixel 4j + i; `a` left past the panel's weights
//   S::kFusedI8      true if S::tiles_i8 runs a panel's whole 8 x 12 tiles into int8
//                    maps, requantizing in its asm (bounds-only activations)
//
// Layouts
//   packed  [panel][kd * 8 * kGroup] s8 (S::weight_index; taps past K and channels
//           past out_c zero), then 8 dequant factors and 8 biases (floats).
//   groups  the input quantized (quantize_i8): [K / kGroup][padded pixels][kGroup] s8,
//           pixel p's taps kGroup q .. kGroup q + kGroup - 1 at (q * padded + p) *
//           kGroup, from kGroup tap rows of 16 pixels at a time (store_group).
//   plane   (im2col) the input quantized into zero-padded planar bytes first, so that
//           every tap row is plain loads: LD1 at stride 1, LD2's even half at stride 2.
// Threads quantize a share (1x1: of the pixels; im2col: of the channels, then of the
// groups), then split the (panel, group of 12 pixels) pairs.
//
// Everything here is a template on S, so that each kernel file (compiled for its own
// -march) instantiates its own copy.
#pragma once
#include <arm_neon.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/i8_epilogue_neon.h"
#include "arm/i8_neon.h"
#include "core/parallel.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"

namespace kestrel::kernels::arm::i8conv {

using i8::unroll;

constexpr int MR = 8, NP = 12;
// Pixels one group store packs; the groups' pixel count is padded to a multiple of both
// (48) and past the last pixel by a block, which the im2col rows may overrun (see
// gather_row).
constexpr int kBlock = 16;
constexpr size_t kPixelAlign = 48;
// Bytes the im2col rows may read past the padded plane's last row (LD2 of 32 bytes).
constexpr size_t kPlaneSlack = 64;
// Workspaces beyond this are left to the oracle.
constexpr size_t kMaxWorkspace = size_t(64) << 20;

template <class S>
struct Plan {
  static constexpr int G = S::kGroup;
  size_t k, kd, pixels, padded;
  int panels;
  size_t hp, wp;  // the padded plane (im2col)

  explicit Plan(const ConvGeometry& g)
      : k(static_cast<size_t>(g.in_c / g.group) * g.kh * g.kw),
        kd((k + G - 1) / G),
        pixels(static_cast<size_t>(g.out_h) * g.out_w),
        padded((pixels + kBlock - 1 + kPixelAlign - 1) / kPixelAlign * kPixelAlign),
        panels((g.out_c + MR - 1) / MR),
        hp(std::max<size_t>((g.out_h - 1) * g.sh + (g.kh - 1) * g.dh + 1, size_t(g.pad_top) + g.in_h)),
        wp(std::max<size_t>((g.out_w - 1) * g.sw + (g.kw - 1) * g.dw + 1, size_t(g.pad_left) + g.in_w)) {}

  size_t group_bytes() const { return kd * padded * G; }
  size_t weight_bytes() const { return kd * MR * G; }
  size_t panel_bytes() const { return weight_bytes() + 2 * MR * sizeof(float); }
  size_t group_count() const { return (pixels + NP - 1) / NP; }
  size_t plane_bytes(const ConvGeometry& g) const {
    return g.is_pointwise() ? 0 : static_cast<size_t>(g.in_c) * hp * wp + kPlaneSlack;
  }
};

template <class S>
size_t workspace_bytes(const ConvGeometry& g) {
  const Plan<S> p(g);
  return p.group_bytes() + p.plane_bytes(g);
}

inline size_t no_workspace(const ConvGeometry&) { return 0; }

// One group, planar operands, no sum past int32, and bounded scratch.
template <class S>
bool supports_any(const ConvGeometry& g) {
  if (!g.planar() || g.group != 1 || g.out_c <= 0 || g.in_c <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1) return false;
  const Plan<S> p(g);
  return p.k <= kMaxProducts && workspace_bytes<S>(g) <= kMaxWorkspace &&
         static_cast<size_t>(p.panels) * p.panel_bytes() < (size_t(1) << 30);
}

template <class S>
bool supports_pointwise(const ConvGeometry& g) {
  return g.is_pointwise() && supports_any<S>(g);
}
// Stems too: their quantized rows are LD1/LD2 and group stores, no dearer than the
// exact fp32 route's stem kernel (MobileNet v1's conv1: 9.3 M aarch64 instructions on
// that route).
template <class S>
bool supports_im2col(const ConvGeometry& g) {
  return !g.is_pointwise() && supports_any<S>(g);
}

template <class S>
size_t packed_bytes(const ConvGeometry& g) {
  const Plan<S> p(g);
  return static_cast<size_t>(p.panels) * p.panel_bytes();
}

template <class S>
void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  const Plan<S> p(g);
  for (int panel = 0; panel < p.panels; ++panel) {
    int8_t* w = static_cast<int8_t*>(packed) + static_cast<size_t>(panel) * p.panel_bytes();
    float* dq = reinterpret_cast<float*>(w + p.weight_bytes());
    float* b = dq + MR;
    for (int r = 0; r < MR; ++r) {
      const int o = panel * MR + r;
      const int8_t* src = o < g.out_c ? weight + static_cast<size_t>(o) * p.k : nullptr;
      for (size_t q = 0; q < p.kd; ++q) {
        for (int i = 0; i < S::kGroup; ++i) {
          const size_t t = q * S::kGroup + i;
          w[S::weight_index(p.kd, q, r, i)] = src && t < p.k ? src[t] : 0;
        }
      }
      dq[r] = src ? dequant[o] : 0.f;
      b[r] = src && bias ? bias[o] : 0.f;
    }
  }
}

// G tap rows' 16-pixel blocks interleaved into the pixels' groups: 16 x G bytes at dst.
template <int G>
KESTREL_I8_NEON_INLINE void store_group(int8_t* dst, const int8x16_t (&t)[G]) {
  static_assert(G == 4 || G == 16, "quads or groups of 16");
  if constexpr (G == 4) {
    vst4q_s8(dst, int8x16x4_t{{t[0], t[1], t[2], t[3]}});
  } else {
    // Each quad of rows into the quads of 4 x 4 pixels (ZIP of bytes, then of halves),
    // then ST4 of words puts a pixel's four quads side by side: 16 taps in tap order.
    int8x16_t quads[4][4];  // [tap quad][4-pixel block]
    unroll<4>([&](auto g) KESTREL_I8_LAMBDA {
      const int16x8_t ab_lo = vreinterpretq_s16_s8(vzip1q_s8(t[4 * g], t[4 * g + 1]));
      const int16x8_t ab_hi = vreinterpretq_s16_s8(vzip2q_s8(t[4 * g], t[4 * g + 1]));
      const int16x8_t cd_lo = vreinterpretq_s16_s8(vzip1q_s8(t[4 * g + 2], t[4 * g + 3]));
      const int16x8_t cd_hi = vreinterpretq_s16_s8(vzip2q_s8(t[4 * g + 2], t[4 * g + 3]));
      quads[g][0] = vreinterpretq_s8_s16(vzip1q_s16(ab_lo, cd_lo));
      quads[g][1] = vreinterpretq_s8_s16(vzip2q_s16(ab_lo, cd_lo));
      quads[g][2] = vreinterpretq_s8_s16(vzip1q_s16(ab_hi, cd_hi));
      quads[g][3] = vreinterpretq_s8_s16(vzip2q_s16(ab_hi, cd_hi));
    });
    unroll<4>([&](auto b) KESTREL_I8_LAMBDA {
      vst4q_s32(reinterpret_cast<int32_t*>(dst + 64 * b),
                int32x4x4_t{{vreinterpretq_s32_s8(quads[0][b]), vreinterpretq_s32_s8(quads[1][b]),
                             vreinterpretq_s32_s8(quads[2][b]), vreinterpretq_s32_s8(quads[3][b])}});
    });
  }
}

// Sixteen input values as bytes: an fp32 map's quantized, an int8 map's as they are.
KESTREL_I8_NEON_INLINE int8x16_t load16(const float* p, float32x4_t scale) { return i8::quantize16(p, scale); }
KESTREL_I8_NEON_INLINE int8x16_t load16(const int8_t* p, float32x4_t) { return vld1q_s8(p); }

// 1x1: pixels [b0, b1) (whole blocks, the last may pass `pixels`) of every tap group,
// each tap row an input channel, quantized as it is read where it is fp32.
template <class S, class In>
void fill_pointwise(const Plan<S>& p, const In* in, size_t in_cstep, float scale, size_t b0, size_t b1,
                    int8_t* groups) {
  constexpr int G = S::kGroup;
  const float32x4_t s = vdupq_n_f32(scale);
  for (size_t q = 0; q < p.kd; ++q) {
    const In* rows[G];
    int live = 0;
    for (int i = 0; i < G; ++i) {
      const size_t c = q * G + i;
      rows[i] = c < p.k ? in + c * in_cstep : nullptr;
      live += c < p.k;
    }
    int8_t* dst = groups + q * p.padded * G;
    // A row's last block reads up to 15 values past it, within kOverreadBytes: those
    // lanes are pixels past the map, whose outputs are never stored. Blocks wholly past
    // the map (the padding) are zero.
    for (size_t px = b0; px < b1; px += kBlock) {
      int8x16_t t[G];
      for (int i = 0; i < G; ++i) t[i] = i < live && px < p.pixels ? load16(rows[i] + px, s) : vdupq_n_s8(0);
      store_group<G>(dst + px * G, t);
    }
  }
}

// An input row into a padded plane's row: quantized, or copied.
KESTREL_I8_NEON_INLINE void fill_row(const float* src, int n, float32x4_t s, float scale, int8_t* dst) {
  int x = 0;
  for (; x + kBlock <= n; x += kBlock) vst1q_s8(dst + x, i8::quantize16(src + x, s));
  for (; x < n; ++x) dst[x] = static_cast<int8_t>(i8::quantize1(src[x], scale));
}
KESTREL_I8_NEON_INLINE void fill_row(const int8_t* src, int n, float32x4_t, float, int8_t* dst) {
  std::memcpy(dst, src, n);
}

// im2col, first step: channels [c0, c1) into the zero-padded planes.
template <class S, class In>
void fill_planes(const ConvGeometry& g, const Plan<S>& p, const In* in, size_t in_cstep, float scale, int c0, int c1,
                 int8_t* planes) {
  const float32x4_t s = vdupq_n_f32(scale);
  for (int c = c0; c < c1; ++c) {
    int8_t* plane = planes + static_cast<size_t>(c) * p.hp * p.wp;
    std::memset(plane, 0, p.hp * p.wp);
    for (int y = 0; y < g.in_h; ++y) {
      fill_row(in + c * in_cstep + static_cast<size_t>(y) * g.in_w, g.in_w, s, scale,
               plane + (y + g.pad_top) * p.wp + g.pad_left);
    }
  }
}

// One tap row's 16 pixels from output pixel (oy, ox) on, out of a padded plane whose
// row `row` is the window origin's: at stride 1 and 2 plain loads that may run past the
// output row (into the next rows, or kPlaneSlack past the last plane); those lanes are
// pixels of later output rows, which overwrite them (gather_groups goes row by row), or
// past the map.
KESTREL_I8_NEON_INLINE int8x16_t gather_row(const ConvGeometry& g, const int8_t* row, int ox) {
  if (g.sw == 1) return vld1q_s8(row + ox);
  if (g.sw == 2) return vld2q_s8(row + 2 * ox).val[0];
  int8_t v[kBlock] = {};
  for (int j = 0; j < kBlock && ox + j < g.out_w; ++j) v[j] = row[(ox + j) * g.sw];
  return vld1q_s8(v);
}

// im2col, second step: tap groups [q0, q1), each from its G taps' rows, output row by
// output row in blocks of 16 pixels.
template <class S>
void gather_groups(const ConvGeometry& g, const Plan<S>& p, const int8_t* planes, size_t q0, size_t q1,
                   int8_t* groups) {
  constexpr int G = S::kGroup;
  const int taps_c = g.kh * g.kw;
  for (size_t q = q0; q < q1; ++q) {
    // Each tap's window offset within the padded planes; taps past K read a zero block.
    const int8_t* base[G];
    bool live[G];
    for (int i = 0; i < G; ++i) {
      const size_t t = q * G + i;
      live[i] = t < p.k;
      const size_t c = live[i] ? t / taps_c : 0, r = live[i] ? t % taps_c : 0;
      const size_t ky = r / g.kw, kx = r % g.kw;
      base[i] = planes + c * p.hp * p.wp + ky * g.dh * p.wp + kx * g.dw;
    }
    int8_t* dst = groups + q * p.padded * G;
    for (int oy = 0; oy < g.out_h; ++oy) {
      const size_t row_off = static_cast<size_t>(oy) * g.sh * p.wp;
      for (int ox = 0; ox < g.out_w; ox += kBlock) {
        int8x16_t t[G];
        for (int i = 0; i < G; ++i) t[i] = live[i] ? gather_row(g, base[i] + row_off, ox) : vdupq_n_s8(0);
        store_group<G>(dst + (static_cast<size_t>(oy) * g.out_w + ox) * G, t);
      }
    }
  }
}

// An 8 x 4NV tile over all tap groups: `a` the panel's weights, then its dequant
// factors and biases; `x` the first pixel's group (xs bytes from one group to the
// next); np (<= 4NV) pixels of mr (<= 8) channels stored at c (channels ldc elements
// apart): floats, or bytes requantized by rq (an activation of i8_output_activation's:
// the layer keeps other activations' outputs fp32, so kOther's byte tile is never run).
template <class S, int NV, class Out, class Epi>
__attribute__((noinline)) void tile(size_t kd, const int8_t* __restrict a, const int8_t* __restrict x, size_t xs,
                                    Out* c, size_t ldc, int mr, int np, const i8::Requant& rq, const Epi& epi) {
  int32x4_t acc[MR][NV];
  const int8_t* w = a;
  S::template steps<NV>(kd, w, x, xs, acc);
  const float* dq = reinterpret_cast<const float*>(w);
  const float* bias = dq + MR;
  if constexpr (std::is_same_v<Out, int8_t>) {
    auto row = [&](int r, int n) KESTREL_I8_LAMBDA {
      const float32x4_t m = vdupq_n_f32(dq[r] * rq.scale), k = vdupq_n_f32(bias[r] * rq.scale);
      int32x4_t q[NV];
      unroll<NV>([&](auto j) KESTREL_I8_LAMBDA {
        q[j] = i8::requantize<i8::kScaledAct<Epi>>(vcvtq_f32_s32(acc[r][j]), m, k, epi);
      });
      i8::store_bytes(c + r * ldc, i8::clamp(i8::narrow<NV>(q), rq), n);
    };
    // Full tiles apart, so that their stores take no branches.
    if (np == 4 * NV) {
      unroll<MR>([&](auto r) KESTREL_I8_LAMBDA {
        if (r < mr) row(r, 4 * NV);
      });
    } else {
      for (int r = 0; r < mr; ++r) row(r, np);
    }
  } else {
    // A short tile (the map's last pixels) goes through a stack tile.
    const bool full = np == 4 * NV;
    float spill[MR * 4 * NV];
    float* dst = full ? c : spill;
    const size_t ld = full ? ldc : 4 * NV;
    unroll<MR>([&](auto r) KESTREL_I8_LAMBDA {
      if (r >= mr) return;
      const float32x4_t d = vdupq_n_f32(dq[r]), b = vdupq_n_f32(bias[r]);
      unroll<NV>([&](auto j) KESTREL_I8_LAMBDA {
        vst1q_f32(dst + r * ld + 4 * j, epi(vaddq_f32(vmulq_f32(vcvtq_f32_s32(acc[r][j]), d), b)));
      });
    });
    for (int r = 0; r < mr; ++r) {
      if (!full) std::memcpy(c + r * ldc, spill + r * ld, np * sizeof(float));
      i8::finish(epi, c + r * ldc, static_cast<size_t>(np));
    }
  }
}

template <class S, class Out, class Epi>
void panel_group(const ConvGeometry& g, const Plan<S>& p, const void* packed, int panel, size_t gi,
                 const int8_t* groups, Out* out, size_t out_cstep, const i8::Requant& rq, const Epi& epi) {
  const int8_t* a = static_cast<const int8_t*>(packed) + static_cast<size_t>(panel) * p.panel_bytes();
  const int mr = std::min(MR, g.out_c - panel * MR);
  const size_t px = gi * NP;
  const int np = static_cast<int>(std::min<size_t>(NP, p.pixels - px));
  Out* c = out + static_cast<size_t>(panel) * MR * out_cstep + px;
  const int8_t* x = groups + px * S::kGroup;
  const size_t xs = p.padded * S::kGroup;
  if (np > 8) {
    tile<S, 3>(p.kd, a, x, xs, c, out_cstep, mr, np, rq, epi);
  } else if (np > 4) {
    tile<S, 2>(p.kd, a, x, xs, c, out_cstep, mr, np, rq, epi);
  } else {
    tile<S, 1>(p.kd, a, x, xs, c, out_cstep, mr, np, rq, epi);
  }
}

// Groups [g0, g1) of one panel: where S has a fused int8 tile run, the output is int8
// with a bounds-only activation and the panel whole, the run of whole groups in one
// call (S::tiles_i8), the rest tile by tile.
template <class S, class Out, class Epi>
void panel_groups(const ConvGeometry& g, const Plan<S>& p, const void* packed, int panel, size_t g0, size_t g1,
                  const int8_t* groups, Out* out, size_t out_cstep, const i8::Requant& rq, const Epi& epi) {
  if constexpr (S::kFusedI8 && std::is_same_v<Out, int8_t> && !i8::kScaledAct<Epi>) {
    const size_t whole = std::min(g1, p.pixels / NP);
    if (panel * MR + MR <= g.out_c && g0 < whole) {
      const int8_t* a = static_cast<const int8_t*>(packed) + static_cast<size_t>(panel) * p.panel_bytes();
      const float* dq = reinterpret_cast<const float*>(a + p.weight_bytes());
      const float32x4_t s = vdupq_n_f32(rq.scale);
      alignas(16) float mc[2 * MR];  // dequant * scale, then bias * scale
      unroll<2 * MR / 4>([&](auto v) KESTREL_I8_LAMBDA { vst1q_f32(mc + 4 * v, vmulq_f32(vld1q_f32(dq + 4 * v), s)); });
      S::tiles_i8(p.kd, a, groups + g0 * NP * S::kGroup, p.padded * S::kGroup, whole - g0, mc, rq.bounds(),
                  out + static_cast<size_t>(panel) * MR * out_cstep + g0 * NP, out_cstep);
      g0 = whole;
    }
  }
  for (size_t gi = g0; gi < g1; ++gi) panel_group(g, p, packed, panel, gi, groups, out, out_cstep, rq, epi);
}

// The groups filled by `fill(t, n)` on thread t of n, then every (panel, group) tile:
// thread t takes a range of the pairs in panel-major order, a panel's groups at a time.
template <class S, class Out, class Fill>
void run_tiles(const ConvGeometry& g, const void* packed, int8_t* groups, Out* out, size_t out_cstep,
               float out_scale, int threads, Fill&& fill) {
  const Plan<S> p(g);
  const size_t ngroups = p.group_count();
  const i8::Requant rq = i8::requant_of(g.act, out_scale);
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    parallel_region(threads, [&] {
      const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
      fill(t, n);
#pragma omp barrier
      const size_t total = static_cast<size_t>(p.panels) * ngroups;
      for (size_t i = total * t / n, end = total * (t + 1) / n; i < end;) {
        const size_t panel = i / ngroups, stop = std::min(end, (panel + 1) * ngroups);
        panel_groups(g, p, packed, static_cast<int>(panel), i - panel * ngroups, stop - panel * ngroups, groups,
                     out, out_cstep, rq, epi);
        i = stop;
      }
    });
  });
}

template <class S>
void run_pointwise(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plan<S> p(g);
  int8_t* groups = static_cast<int8_t*>(ctx.workspace);
  const size_t blocks = p.padded / kBlock;
  with_i8_operands(io, [&](const auto* in, auto* out) {
    run_tiles<S>(g, packed, groups, out, io.out_cstep, io.out_scale, std::max(1, ctx.num_threads),
                 [&](size_t t, size_t n) {
                   fill_pointwise(p, in, io.in_cstep, io.in_scale, blocks * t / n * kBlock,
                                  blocks * (t + 1) / n * kBlock, groups);
                 });
  });
}

template <class S>
void run_im2col(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  const Plan<S> p(g);
  int8_t* groups = static_cast<int8_t*>(ctx.workspace);
  int8_t* planes = groups + p.group_bytes();
  with_i8_operands(io, [&](const auto* in, auto* out) {
    run_tiles<S>(g, packed, groups, out, io.out_cstep, io.out_scale, std::max(1, ctx.num_threads),
                 [&](size_t t, size_t n) {
                   const int c0 = static_cast<int>(g.in_c * t / n), c1 = static_cast<int>(g.in_c * (t + 1) / n);
                   fill_planes(g, p, in, io.in_cstep, io.in_scale, c0, c1, planes);
                   if (t == 0) std::memset(planes + static_cast<size_t>(g.in_c) * p.hp * p.wp, 0, kPlaneSlack);
#pragma omp barrier
                   gather_groups(g, p, planes, p.kd * t / n, p.kd * (t + 1) / n, groups);
                 });
  });
}

// The two kernels of a scheme: 1x1 stride 1, reading the input's rows as they are, and
// any other window, stride, padding or dilation (im2col).
template <class S>
constexpr I8ConvKernel pointwise_kernel(const char* name, unsigned needs) {
  return {name,         Isa::kNeon, needs, supports_pointwise<S>, packed_bytes<S>, pack<S>, workspace_bytes<S>,
          no_workspace, run_on_floats<run_pointwise<S>>, run_pointwise<S>};
}
template <class S>
constexpr I8ConvKernel im2col_kernel(const char* name, unsigned needs) {
  return {name,         Isa::kNeon, needs, supports_im2col<S>, packed_bytes<S>, pack<S>, workspace_bytes<S>,
          no_workspace, run_on_floats<run_im2col<S>>, run_im2col<S>};
}

}  // namespace kestrel::kernels::arm::i8conv
