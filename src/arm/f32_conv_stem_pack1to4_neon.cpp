// Direct K x K convolution (K = 3, 5, 7; stride 1 or 2) of a map of few planar channels
// (an image: the network's stem) into a 4-channel blocked map (ncnn's pack1to4). Why:
// the im2col SGEMM spent 0.52 other instructions per multiply-add on MobileNet v1's
// 3-channel stem (4.0 M of its 8.3 M in im2col alone, bench/arm/INSN_COUNTS.md), and its
// accumulators hold pixels, so a blocked output would need transposes on top.
//
// An output row at a time (all channel blocks): the K * in_c input rows it reads are
// copied once into per-thread zero-padded rows (a row above or below the map is a
// shared zero row), so every tile runs the same code. A tile is 8 output pixels x 4
// output channels (one block) in 8 accumulators, or two blocks in 16; per (input
// channel, ky) it loads the (7 * S + K) floats of the padded row once and the K weight
// vectors of each block, and each of the 8 * K fmas per block takes its input by lane,
// so nothing is transposed. Each output is one fma chain
// over kk = (ic * K + ky) * K + kx from zero with the bias added last: the order of
// f32_conv_sgemm_8x12_neon, so blocked and planar networks agree bit for bit.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm {
namespace {

using gemm::Act;
using gemm::Epilogue;

constexpr int kLanes = 4;      // output channels per block (pack4)
constexpr int kTile = 8;       // output pixels per tile
constexpr int kMaxInC = 8;     // beyond a few channels im2col + GEMM reuses its tiles better
constexpr int kSlack = 3;      // floats a tile's last vector may read past its last tap

// Floats of a padded input row: every tile's reads, rounded up to whole vectors.
int padded_width(const ConvGeometry& g) {
  const int tiles = (g.out_w + kTile - 1) / kTile;
  const int reads = (tiles * kTile - 1) * g.sw + g.kw + kSlack;
  return (std::max(reads, g.pad_left + g.in_w) + 3) / 4 * 4;
}

bool supports(const ConvGeometry& g) {
  const bool window = g.kh == g.kw && (g.kh == 3 || g.kh == 5 || g.kh == 7) && g.dh == 1 && g.dw == 1;
  const bool stride = g.sh == g.sw && (g.sh == 1 || g.sh == 2);
  return window && stride && g.group == 1 && g.in_c >= 1 && g.in_c <= kMaxInC && g.in_pack == 1 &&
         g.out_pack == kLanes && g.out_c % kLanes == 0 && g.out_h >= 1 && g.out_w >= 1;
}

size_t blocks(const ConvGeometry& g) { return static_cast<size_t>(g.out_c) / kLanes; }
size_t taps(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) * g.kh * g.kw; }

size_t packed_floats(const ConvGeometry& g) { return blocks(g) * kLanes * (taps(g) + 1); }

// [block][kk][4] weight vectors (kk in the SGEMM's order), then [block][4] biases.
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const size_t n = taps(g);
  float* b_out = packed + blocks(g) * n * kLanes;
  for (size_t b = 0; b < blocks(g); ++b) {
    for (int o = 0; o < kLanes; ++o) {
      const size_t oc = b * kLanes + o;
      for (size_t kk = 0; kk < n; ++kk) packed[(b * n + kk) * kLanes + o] = weight[oc * n + kk];
      b_out[oc] = bias ? bias[oc] : 0.f;
    }
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// The K * in_c row slots and one zero row.
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  return (static_cast<size_t>(g.kh) * g.in_c + 1) * padded_width(g) * sizeof(float);
}

// acc[x] += w * row[x * S + kx] for every x, the input taken by lane.
template <int S, int kx, size_t... X>
__attribute__((always_inline)) inline void tap(float32x4_t (&acc)[kTile], float32x4_t w, const float32x4_t* in,
                                               std::index_sequence<X...>) {
  ((acc[X] = vfmaq_laneq_f32(acc[X], w, in[(X * S + kx) / 4], (X * S + kx) % 4)), ...);
}

// One (input channel, ky) step of a tile of B channel blocks: the row is loaded once for
// all of them, then the K taps in kx order (as kk runs); block b's weights are
// w_stride floats after block b - 1's.
template <int K, int S, int B, size_t... KX>
__attribute__((always_inline)) inline void row_step(float32x4_t (&acc)[B][kTile], const float* w, size_t w_stride,
                                                    const float* row, std::index_sequence<KX...>) {
  constexpr int kVecs = ((kTile - 1) * S + K + 3) / 4;
  float32x4_t in[kVecs];
  for (int v = 0; v < kVecs; ++v) in[v] = vld1q_f32(row + 4 * v);
  auto taps_of = [&](auto kx_c) __attribute__((always_inline)) {
    constexpr int kx = decltype(kx_c)::value;
    for (int b = 0; b < B; ++b) {
      tap<S, kx>(acc[b], vld1q_f32(w + b * w_stride + kLanes * kx), in, std::make_index_sequence<kTile>{});
    }
  };
  (taps_of(std::integral_constant<int, static_cast<int>(KX)>{}), ...);
}

// Channel blocks [b, b + B) of tile t of output row oy, stored with bias and activation.
template <int K, int S, int B, Act kAct>
__attribute__((always_inline)) inline void tile(const ConvGeometry& g, const float* packed, const float* const* rows,
                                                size_t b, int t, int oy, float* out, size_t out_cstep,
                                                const Epilogue<kAct>& epi) {
  const size_t n = taps(g);
  float32x4_t acc[B][kTile];
  for (auto& row : acc) {
    for (auto& a : row) a = vdupq_n_f32(0.f);
  }
  const float* w = packed + b * n * kLanes;
  for (int r = 0; r < g.in_c * K; ++r, w += K * kLanes) {
    row_step<K, S, B>(acc, w, n * kLanes, rows[r] + t * kTile * S, std::make_index_sequence<K>{});
  }
  const float* bias_all = packed + blocks(g) * n * kLanes;
  const int x0 = t * kTile, nx = std::min(kTile, g.out_w - x0);
  for (int i = 0; i < B; ++i) {
    const float32x4_t bias = vld1q_f32(bias_all + (b + i) * kLanes);
    float* o = out + (b + i) * out_cstep + (static_cast<size_t>(oy) * g.out_w + x0) * kLanes;
    // Constant indices into acc (unrolled, guarded): with a run-time bound GCC kept acc
    // in memory and stored every accumulator to the stack after each row step.
#pragma GCC unroll 8
    for (int x = 0; x < kTile; ++x) {
      if (x < nx) vst1q_f32(o + kLanes * x, epi(vaddq_f32(acc[i][x], bias)));
    }
    epi.finish(o, static_cast<size_t>(nx) * kLanes);
  }
}

// Blocks per tile: two share each loaded row (16 accumulators + the row + 2K weight
// vectors fit the 32 registers up to K = 5); a 7x7 window takes one.
template <int K>
constexpr int kPairBlocks = K <= 5 ? 2 : 1;

template <int K, int S, Act kAct>
void run_rows(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epilogue<kAct>& epi) {
  const int wp = padded_width(g);
  const int tiles = (g.out_w + kTile - 1) / kTile;
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
  {
    float* slots = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    const float* zero = slots + static_cast<size_t>(K) * g.in_c * wp;
    // Slot column j holds input column j - pad_left, so tile t's first tap reads slot
    // column t * 8 * S. The padding columns stay zero: a copy rewrites only the input's.
    std::fill(slots, slots + (static_cast<size_t>(K) * g.in_c + 1) * wp, 0.f);
    const float* rows[K * kMaxInC];
#pragma omp for schedule(static)
    for (int oy = 0; oy < g.out_h; ++oy) {
      for (int ic = 0; ic < g.in_c; ++ic) {
        for (int ky = 0; ky < K; ++ky) {
          const int iy = oy * S - g.pad_top + ky;
          float* slot = slots + static_cast<size_t>(ic * K + ky) * wp;
          const bool inside = iy >= 0 && iy < g.in_h;
          if (inside) std::memcpy(slot + g.pad_left, in + ic * in_cstep + static_cast<size_t>(iy) * g.in_w,
                                  sizeof(float) * g.in_w);
          rows[ic * K + ky] = inside ? slot : zero;
        }
      }
      constexpr int kB = kPairBlocks<K>;
      const size_t nb = blocks(g);
      for (int t = 0; t < tiles; ++t) {
        size_t b = 0;
        for (; b + kB <= nb; b += kB) tile<K, S, kB>(g, packed, rows, b, t, oy, out, out_cstep, epi);
        for (; b < nb; ++b) tile<K, S, 1>(g, packed, rows, b, t, oy, out, out_cstep, epi);
      }
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    auto go = [&](auto k_c, auto s_c) {
      run_rows<decltype(k_c)::value, decltype(s_c)::value>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
    };
    using I3 = std::integral_constant<int, 3>;
    using I5 = std::integral_constant<int, 5>;
    using I7 = std::integral_constant<int, 7>;
    using S1 = std::integral_constant<int, 1>;
    using S2 = std::integral_constant<int, 2>;
    if (g.kh == 3) g.sh == 1 ? go(I3{}, S1{}) : go(I3{}, S2{});
    if (g.kh == 5) g.sh == 1 ? go(I5{}, S1{}) : go(I5{}, S2{});
    if (g.kh == 7) g.sh == 1 ? go(I7{}, S1{}) : go(I7{}, S2{});
  });
}

}  // namespace

const ConvKernel kF32ConvStemPack1to4_Neon = {
    "f32_conv_stem_8x4_pack1to4_neon",
    Isa::kNeon,
    supports,
    packed_floats,
    pack,
    no_workspace,
    workspace_per_thread_bytes,
    1e-4,
    run,
    kLanes,
};

}  // namespace kestrel::kernels::arm
