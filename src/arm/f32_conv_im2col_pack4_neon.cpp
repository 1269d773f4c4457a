// General dense convolution on NEON (any window but 1x1, stride, dilation and padding;
// one group; in_c a multiple of 4) as one GEMM over an im2col matrix of pack4 vectors,
// run by the 8 x 8 tiles of the pack4 1x1 kernel (src/arm/f32_conv_pack4_8x8_tiles_neon.h).
// Why: the planar im2col + 8x12 SGEMM spent 0.36 FMA instructions per multiply-add on
// MobileNet-SSD's 5x5 map (12-pixel tiles over 25 pixels) and copied its im2col one
// float at a time; here a tap of 4 channels is one vector copy, tiles are 8, 4 and 1
// pixels, and the same tiles take pack4 maps in place of planar ones. It claims every
// such geometry: on 21 of them (3x3 to 7x7 and 1x3, dilation 2, strides 1 to 3, 1 to
// 3136 output pixels, 4 to 512 channels, planar maps) it ran 0.10x to 0.72x the SGEMM's
// guest instructions (bench/arm/insn_count.py, cortex-a72). On pack4 maps: ResNet-18's
// strided 3x3 layers 25.4 / 23.5 / 25.9 -> 16.2 / 15.9 / 15.8 M, MobileNet-SSD's
// conv14_2 15.55 -> 8.16 M (the 4-lane floor: 7.37 M).
//
// The im2col matrix X of a chunk of n output pixels is [tap * kb + cb][n][4]: row block
// (tap, cb) holds, for every pixel, the 4 input channels of block cb at that tap (a zero
// vector where the tap falls in the padding), so that K = taps x in_c has one stride,
// the 1x1 tiles' input layout. Weights are packed in the 1x1 format for that K order.
// A planar input is first copied into the pack4 layout (whole map, shared workspace).
//
// Every output is one fma chain, bias first, then K in order, whatever its tile, thread
// or chunk: planar and blocked maps give the same bits, and a layer takes this kernel
// for every layout of its maps or for none (see claimed_before).
//
// Workspace: [pack4 copy of a planar input][X of one chunk]; a chunk holds whole 8-pixel
// tiles and X at most about kChunkBytes, the threads filling it (by output rows) and
// then sharing its tiles.
//
// Its half-weight twin (A = uint16_t) keeps the weights as halves and widens them into
// each thread's room per chunk (f32_half_blocks_neon.h).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "arm/f32_conv_pack4_8x8_tiles_neon.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm {
namespace {

using namespace conv_pack4;

// im2col bytes of a chunk (within a big core's L2): the blocks of weights pass over it.
constexpr size_t kChunkBytes = size_t(1) << 20;
// Reductions longer than this (a chunk of one tile would take more than 64 MiB) are left
// to the SGEMM; no real network comes near.
constexpr size_t kMaxK = size_t(1) << 21;

size_t taps(const ConvGeometry& g) { return static_cast<size_t>(g.kh) * g.kw; }
size_t in_blocks(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) / kLanes; }
size_t k_blocks(const ConvGeometry& g) { return taps(g) * in_blocks(g); }
size_t pixels(const ConvGeometry& g) { return static_cast<size_t>(g.out_h) * g.out_w; }

// Output pixels per chunk: whole tiles, at least one, or the whole map.
size_t chunk_pixels(const ConvGeometry& g) {
  const size_t tile_bytes = k_blocks(g) * kLanes * kTilePixels * sizeof(float);
  return std::min(pixels(g), std::max<size_t>(kChunkBytes / tile_bytes, 1) * kTilePixels);
}

// Floats of the pack4 copy of a planar input (whole 64-byte lines).
size_t copy_floats(const ConvGeometry& g) {
  if (g.in_pack != 1) return 0;
  return (in_blocks(g) * g.in_h * g.in_w * kLanes + 15) / 16 * 16;
}

bool shape_ok(const ConvGeometry& g) {
  if (g.group != 1 || g.in_c < kLanes || g.in_c % kLanes != 0 || g.out_c < 1) return false;
  if (g.kh < 1 || g.kw < 1 || (g.kh == 1 && g.kw == 1)) return false;
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.pad_top < 0 || g.pad_left < 0) return false;
  if (g.in_h < 1 || g.in_w < 1 || g.out_h < 1 || g.out_w < 1) return false;
  const size_t k = k_blocks(g) * kLanes;
  // packed_floats stays below 2^30 (no overflow: k < 2^22 when checked).
  return k <= kMaxK && (static_cast<size_t>(g.out_c) + kBlockOut) * k < (size_t(1) << 30);
}

// True where a kernel before this one in the registry claims g in some layout of whole
// blocks (1x1 kernels, Winograd, the stems, whose planar twin is the SGEMM). The layout
// pass may leave a layer's maps planar or block them, and the network must give the
// same bits either way: that holds where one kernel takes every layout, so this one
// takes none of a geometry that another kernel takes in some layout.
bool claimed_before(const ConvGeometry& g) {
  for (const ConvKernel* k : conv_kernels()) {
    if (k == &kF32ConvIm2colPack4_Neon || k == &kF32ConvIm2colPack4_F16w_Neon) return false;
    for (int in_pack : {1, kLanes}) {
      for (int out_pack : {1, kLanes}) {
        ConvGeometry v = g;
        v.in_pack = in_pack;
        v.out_pack = out_pack;
        // Only kernels of 4 lanes are asked about blocked geometries (select_conv_kernel).
        if (out_pack == kLanes && g.out_c % kLanes != 0) continue;
        if (!v.planar() && k->blocked_lanes != kLanes) continue;
        if (k->supports(v)) return true;
      }
    }
  }
  return false;
}

template <class A>
bool supports(const ConvGeometry& g) {
  if (std::is_same_v<A, uint16_t> && !g.half_weights) return false;
  const bool packs = g.packs_within(kLanes) && (g.out_pack == 1 || g.out_c % kLanes == 0);
  return packs && shape_ok(g) && !claimed_before(g);
}

template <class A>
size_t packed_floats(const ConvGeometry& g) {
  if constexpr (std::is_same_v<A, uint16_t>) return half_packed_floats(k_blocks(g), g.out_c);
  return conv_pack4::packed_floats(k_blocks(g), g.out_c);
}

// Row r of X is channel 4 cb + r % 4 at tap t, r / 4 = t * kb + cb.
template <class A>
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const size_t kb = in_blocks(g), nt = taps(g), in_c = static_cast<size_t>(g.in_c);
  auto weight_at = [&](size_t oc, size_t r) {
    const size_t t = r / kLanes / kb, c = r / kLanes % kb * kLanes + r % kLanes;
    return weight[(oc * in_c + c) * nt + t];
  };
  if constexpr (std::is_same_v<A, uint16_t>) {
    pack_half_blocks(g.out_c, k_blocks(g), weight_at, bias, packed);
  } else {
    pack_blocks(g.out_c, k_blocks(g), weight_at, bias, packed);
  }
}

size_t workspace_bytes(const ConvGeometry& g) {
  return (copy_floats(g) + k_blocks(g) * kLanes * chunk_pixels(g)) * sizeof(float);
}
size_t no_workspace(const ConvGeometry&) { return 0; }
size_t half_room(const ConvGeometry& g) { return half_room_bytes(k_blocks(g), g.out_c); }

// dst[j] for j < m: the vector at src + (j - j0) * sw * 4 for j in [j0, j1), zero
// vectors elsewhere. kSw: the stride as a constant (1, 2), else 0 and sw.
template <int kSw>
__attribute__((always_inline)) inline void copy_taps(const float* src, int sw, int j0, int j1, int m, float* dst) {
  const float32x4_t zero = vdupq_n_f32(0.f);
  const size_t step = static_cast<size_t>(kSw ? kSw : sw) * kLanes;
  int j = 0;
  for (; j < j0; ++j) vst1q_f32(dst + j * kLanes, zero);
  // Unrolled; with a constant stride the loads take immediate offsets (rolled, 5
  // instructions a vector: im2col was 4% of ResNet-18's strided layers, now 3%).
#pragma GCC unroll 4
  for (; j < j1; ++j, src += step) vst1q_f32(dst + j * kLanes, vld1q_f32(src));
  for (; j < m; ++j) vst1q_f32(dst + j * kLanes, zero);
}

// X's columns of output row oy that chunk [p0, p0 + n) holds, from the pack4 input
// (block cb at in + cb * cstep).
template <int kSw>
void im2col_row(const ConvGeometry& g, const float* in, size_t cstep, int oy, size_t p0, size_t n, float* x) {
  const int sw = kSw ? kSw : g.sw;
  const size_t kb = in_blocks(g), row0 = static_cast<size_t>(oy) * g.out_w;
  const int xa = static_cast<int>(std::max(p0, row0) - row0);
  const int m = static_cast<int>(std::min(p0 + n, row0 + g.out_w) - row0) - xa;
  float* dst_row = x + (row0 + xa - p0) * kLanes;
  const size_t block = n * kLanes;  // floats of a row block of X
  for (int ky = 0; ky < g.kh; ++ky) {
    const int iy = oy * g.sh - g.pad_top + ky * g.dh;
    const bool inside = iy >= 0 && iy < g.in_h;
    for (int kx = 0; kx < g.kw; ++kx) {
      // Columns j read ix = ix0 + j * sw; [j0, j1) are inside the row.
      const int ix0 = xa * sw - g.pad_left + kx * g.dw;
      const int j0 = !inside ? m : std::min(m, ix0 >= 0 ? 0 : (-ix0 + sw - 1) / sw);
      const int j1 = !inside ? m : std::max(j0, std::min(m, ix0 >= g.in_w ? 0 : (g.in_w - ix0 + sw - 1) / sw));
      const size_t src_off = j1 > j0 ? (static_cast<size_t>(iy) * g.in_w + ix0 + j0 * sw) * kLanes : 0;
      float* dst = dst_row + (static_cast<size_t>(ky) * g.kw + kx) * kb * block;
      for (size_t cb = 0; cb < kb; ++cb, dst += block) copy_taps<kSw>(in + cb * cstep + src_off, sw, j0, j1, m, dst);
    }
  }
}

void im2col_row_any(const ConvGeometry& g, const float* in, size_t cstep, int oy, size_t p0, size_t n, float* x) {
  switch (g.sw) {
    case 1: im2col_row<1>(g, in, cstep, oy, p0, n, x); break;
    case 2: im2col_row<2>(g, in, cstep, oy, p0, n, x); break;
    default: im2col_row<0>(g, in, cstep, oy, p0, n, x); break;
  }
}

template <int kOutPack, class A, class Epi>
void run_all(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
             size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  const size_t plane = static_cast<size_t>(g.in_h) * g.in_w, kb = in_blocks(g), total = pixels(g);
  const size_t chunk = chunk_pixels(g);
  float* copy = g.in_pack == 1 ? static_cast<float*>(ctx.workspace) : nullptr;
  float* x = static_cast<float*>(ctx.workspace) + copy_floats(g);
  const float* src = copy ? copy : in;
  const size_t src_cstep = copy ? plane * kLanes : in_cstep;
  const int64_t copy_rows = copy ? static_cast<int64_t>(kb) * g.in_h : 0;
  constexpr size_t kOutPx = kOutPack == kLanes ? kLanes : 1;
  parallel_region(ctx.num_threads, [&] {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < copy_rows; ++i) {
      const size_t j = static_cast<size_t>(i) / g.in_h, row = static_cast<size_t>(i) % g.in_h * g.in_w;
      gather_block_row(in, in_cstep, 1, g.in_c, j, row, 1, g.in_w, copy + j * plane * kLanes + row * kLanes);
    }
    // Every thread walks the same chunks: each loop's end is the team's barrier.
    for (size_t p0 = 0; p0 < total; p0 += chunk) {
      const size_t n = std::min(chunk, total - p0);
      const int oy0 = static_cast<int>(p0 / g.out_w), oy1 = static_cast<int>((p0 + n - 1) / g.out_w) + 1;
#pragma omp for schedule(static)
      for (int oy = oy0; oy < oy1; ++oy) im2col_row_any(g, src, src_cstep, oy, p0, n, x);
      const Args a{g.out_c, packed, x, n * kLanes, out + p0 * kOutPx, out_cstep, &ctx};
      run_items<kOutPack, A>(a, Plan(k_blocks(g), n, g.out_c), epi);
    }
  });
}

template <class A>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    if (g.out_pack == kLanes) {
      run_all<kLanes, A>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    } else {
      run_all<1, A>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    }
  });
}

}  // namespace

const ConvKernel kF32ConvIm2colPack4_Neon = {
    "f32_conv_im2col_pack4_neon", Isa::kNeon, supports<float>, packed_floats<float>, pack<float>, workspace_bytes,
    no_workspace, 1e-4, run<float>, kLanes,
};
const ConvKernel kF32ConvIm2colPack4_F16w_Neon = {
    "f32_conv_im2col_pack4_f16w_neon", Isa::kNeon, supports<uint16_t>, packed_floats<uint16_t>, pack<uint16_t>,
    workspace_bytes, half_room, 1e-4, run<uint16_t>, kLanes, false, true,
};

}  // namespace kestrel::kernels::arm
