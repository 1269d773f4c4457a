// Direct K x K convolution (K = 3, 5, 7; stride 1 or 2) of 1 to 4 planar channels of
// halves (an image: the network's stem) into 8-channel blocks of halves, in fp16
// arithmetic (ARMv8.2 FEAT_FP16): the fp16 counterpart of f32_conv_stem_pack1to4_neon.
// MobileNet v1/v2's and SSD's first layer (3x3 stride 2, 3 -> 32) at fp16.
//
// Tiles of 8 output pixels x 16 output channels (f16_conv_stem_pack1to8_neonfp16.h,
// pair_tile) read the input in place, per (input channel, row) its 7 * S + K halves in
// one ld1 and each tap's two weight vectors, every FMLA taking its input half by lane.
// conv_reference_f16 skips the taps over the padding, and an FMA of a zero padding
// input would turn a sum of -0 into +0, so the padding is never multiplied: pair_tile
// runs where the whole window lies inside the map; output rows whose window passes the
// top or bottom run one-block tiles over just their rows (block_tile), pixels whose
// window passes the left or right edge one pixel at a time over just their taps
// (pixel). A row's tiles cover its inside pixels from the first; the last tile moves
// back to end on the last one, recomputing (the same bits) what the one before wrote.
// MobileNet v1's conv1 (3x3 stride 2, 3 -> 32 at 224x224, ReLU) under qemu -cpu
// cortex-a76: 1.70 M instructions, 1.35 M of them FMLA, for 10.8 M multiply-adds (0.03
// others per multiply-add; f32_conv_stem_pack1to4_neon: 3.23 M in all).
//
// Compiled with -march=armv8.2-a+fp16 (CMakeLists.txt: *_neonfp16.cpp); the registry
// lists it as an f16 kernel, run only where the CPU has fp16 arithmetic.
#include "arm/f16_conv_stem_pack1to8_neonfp16.h"

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "arm/arm_kernels.h"
#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"
#include "core/parallel.h"
#include "layers/activation.h"

namespace kestrel::kernels::arm {
namespace {

using namespace stem_pack8_f16;
using conv1x1_pack8_f16::Clip;
using conv1x1_pack8_f16::Leaky;
using conv1x1_pack8_f16::NoAct;
using conv1x1_pack8_f16::ReLU;

constexpr int kMaxInC = 4;  // an image: grey, RGB, RGBA

bool supports(const ConvGeometry& g) {
  const int k = g.kh;
  const bool window = g.kh == g.kw && (k == 3 || k == 5 || k == 7) && g.dh == 1 && g.dw == 1;
  const bool stride = g.sh == g.sw && (g.sh == 1 || g.sh == 2);
  // Padding of 0 to K - 1 on each side (bottom and right: what the output extent adds).
  const int pad_bottom = (g.out_h - 1) * g.sh + k - g.in_h - g.pad_top;
  const int pad_right = (g.out_w - 1) * g.sw + k - g.in_w - g.pad_left;
  const bool padding = g.pad_top >= 0 && g.pad_top < k && g.pad_left >= 0 && g.pad_left < k && pad_bottom < k &&
                       pad_right < k;
  const auto t = g.act.type;
  const bool act = t == fb::ActivationType::None || t == fb::ActivationType::ReLU || t == fb::ActivationType::Clip ||
                   t == fb::ActivationType::LeakyReLU;
  return g.f16 && window && stride && padding && act && g.group == 1 && g.in_c >= 1 && g.in_c <= kMaxInC &&
         g.in_pack == 1 && g.out_pack == kLanes && g.out_c % kLanes == 0 && g.out_h >= 1 && g.out_w >= 1 &&
         g.in_h >= 1 && g.in_w >= 1;
}

size_t taps(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) * g.kh * g.kw; }

// Halves of a pair's panel: 16 bias vectors (pair_tile loads them straight into its
// accumulators), then per tap {block 0, block 1}. A last odd block: its bias vector,
// then per tap its vector.
size_t pair_halves(size_t taps) { return (2 * kTile + 2 * taps) * kLanes; }

size_t packed_floats(const ConvGeometry& g) {
  const size_t nb = g.out_c / kLanes, n = taps(g);
  return (nb / 2 * pair_halves(n) + nb % 2 * (1 + n) * kLanes) / 2;
}

void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  half* p = reinterpret_cast<half*>(packed);
  const size_t nb = g.out_c / kLanes, n = taps(g);
  for (size_t b = 0; b < nb; ++b) {
    const bool paired = b < nb / 2 * 2;
    half* panel = p + b / 2 * pair_halves(n);
    const size_t copies = paired ? kTile : 1, wstep = paired ? 2 * kLanes : kLanes;
    half* bias_out = panel + (paired ? b % 2 * kTile * kLanes : 0);
    half* w_out = panel + (paired ? 2 * kTile * kLanes + b % 2 * kLanes : kLanes);
    for (int o = 0; o < kLanes; ++o) {
      const size_t oc = b * kLanes + o;
      for (size_t c = 0; c < copies; ++c) bias_out[c * kLanes + o] = static_cast<half>(bias ? bias[oc] : 0.f);
      for (size_t kk = 0; kk < n; ++kk) w_out[kk * wstep + o] = static_cast<half>(weight[oc * n + kk]);
    }
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

// What the rows need, worked out once per call.
struct Plan {
  const half* in;
  half* out;
  const half* packed;
  size_t xc, yc;  // halves between input channels, between output blocks
  size_t n;       // taps
  int in_c, in_h, in_w, out_w, pad_top, pad_left, blocks;
  // Output columns [ox_lo, ox_hi) have their window inside the row; tiles cover them
  // where there are at least 8.
  int ox_lo, ox_hi;
  bool tiles;
};

// Block b's bias vector, tap 0 and halves from tap to tap.
struct Block {
  const half* bias;
  const half* w;
  size_t wstep;
};

Block block(const Plan& p, int b) {
  const int pairs = p.blocks / 2;
  const half* panel = p.packed + static_cast<size_t>(b / 2) * pair_halves(p.n);
  if (b < 2 * pairs) {
    return {panel + b % 2 * kTile * kLanes, panel + 2 * kTile * kLanes + b % 2 * kLanes, 2 * kLanes};
  }
  return {panel, panel + kLanes, kLanes};
}

template <int K, int S>
Plan make_plan(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
               size_t out_cstep) {
  Plan p;
  p.in = reinterpret_cast<const half*>(in);
  p.out = reinterpret_cast<half*>(out);
  p.packed = reinterpret_cast<const half*>(packed);
  p.xc = in_cstep * 2, p.yc = out_cstep * 2;  // cstep counts 4-byte units
  p.n = taps(g);
  p.in_c = g.in_c, p.in_h = g.in_h, p.in_w = g.in_w, p.out_w = g.out_w;
  p.pad_top = g.pad_top, p.pad_left = g.pad_left, p.blocks = g.out_c / kLanes;
  p.ox_lo = std::min(g.out_w, (g.pad_left + S - 1) / S);
  const int last = g.in_w - K + g.pad_left;  // the last inside window's first column, padded
  p.ox_hi = std::max(p.ox_lo, last < 0 ? 0 : std::min(g.out_w, last / S + 1));
  p.tiles = p.ox_hi - p.ox_lo >= kTile;
  return p;
}

// Output row oy: the pixels over the left and right padding, then the tiles, pair of
// blocks by pair where the window's rows lie inside the map, else block by block.
template <int K, int S, class Epi>
void run_row(const Plan& p, int oy, const Epi& epi) {
  const int iy0 = oy * S - p.pad_top;
  const int ky0 = std::max(0, -iy0), ky1 = std::min(K, p.in_h - iy0);
  const bool rows_inside = ky0 == 0 && ky1 == K;
  const size_t rstride = p.in_w;
  const half* first_row = p.in + static_cast<size_t>(iy0 + ky0) * p.in_w;  // channel 0, window row ky0
  half* const y = p.out + static_cast<size_t>(oy) * p.out_w * kLanes;
  const int left_end = p.tiles ? p.ox_lo : p.out_w, right_from = p.tiles ? p.ox_hi : p.out_w;
  const int last_tile = p.ox_hi - kTile;
  // A pair of blocks (B = 2) or a last odd block: its pixels over the padding, then,
  // unless pair_tile takes them, its tiles block by block.
  auto edges = [&](auto blocks_c, int b) {
    constexpr int B = decltype(blocks_c)::value;
    const Block blk = block(p, b);
    half* const yb = y + b * p.yc;
    for (int ox = 0; ox < p.out_w; ++ox) {
      if (ox == left_end) ox = right_from;
      if (ox == p.out_w) break;
      const int ix0 = ox * S - p.pad_left;
      const int kx0 = std::max(0, -ix0), kx1 = std::min(K, p.in_w - ix0);
      pixel<K, B>(first_row + ix0 + kx0, rstride, p.xc, p.in_c, ky0, ky1, kx0, kx1, blk.w, blk.wstep, blk.bias,
                  kTile * kLanes, yb + ox * kLanes, p.yc, epi);
    }
    if (!p.tiles || (rows_inside && B == 2)) return;
    for (int i = 0; i < B; ++i) {
      const Block bi = block(p, b + i);
      for (int ox = p.ox_lo;; ox += kTile) {
        ox = std::min(ox, last_tile);
        block_tile<K, S>(first_row + ox * S - p.pad_left, rstride, p.xc, p.in_c, ky0, ky1, bi.w, bi.wstep, bi.bias,
                         yb + i * p.yc + ox * kLanes, epi, std::make_integer_sequence<int, K>{});
        if (ox == last_tile) break;
      }
    }
  };
  for (int b = 0; b + 1 < p.blocks; b += 2) edges(std::integral_constant<int, 2>{}, b);
  if (p.blocks % 2) edges(std::integral_constant<int, 1>{}, p.blocks - 1);
  if (!p.tiles || !rows_inside) return;
  // Locals: the tiles' asm clobbers memory, so the Plan's fields would be read again.
  const size_t rs = p.in_w * sizeof(half), cs = (p.xc - (K - 1) * rstride) * sizeof(half);
  const size_t ostep = p.yc * sizeof(half), pair_step = pair_halves(p.n);
  const int in_c = p.in_c, pairs = p.blocks / 2, ox_lo = p.ox_lo;
  const half* const x0 = first_row + ox_lo * S - p.pad_left;
  const half* panel = p.packed;
  half* yq = y + ox_lo * kLanes;
  for (int q = 0; q < pairs; ++q, panel += pair_step, yq += 2 * p.yc) {
    const half* x = x0;
    half* o = yq;
    for (int t = last_tile - ox_lo;; t -= kTile, x += kTile * S, o += kTile * kLanes) {
      if (t < 0) x += t * S, o += t * kLanes;  // the last tile, moved back to end on ox_hi
      pair_tile<K, S>(x, rs, cs, in_c, panel, o, ostep, epi);
      if (t <= 0) break;
    }
  }
}

template <int K, int S, class Epi>
void run_rows(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, int num_threads, const Epi& epi) {
  const Plan plan = make_plan<K, S>(g, packed, in, in_cstep, out, out_cstep);
  parallel_for(num_threads, g.out_h, [&](int oy) { run_row<K, S>(plan, oy, epi); });
}

template <class Epi>
void run_with(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, int n, const Epi& epi) {
  auto go = [&](auto k_c, auto s_c) {
    run_rows<decltype(k_c)::value, decltype(s_c)::value>(g, packed, in, in_cstep, out, out_cstep, n, epi);
  };
  using I3 = std::integral_constant<int, 3>;
  using I5 = std::integral_constant<int, 5>;
  using I7 = std::integral_constant<int, 7>;
  using S1 = std::integral_constant<int, 1>;
  using S2 = std::integral_constant<int, 2>;
  if (g.kh == 3) g.sh == 1 ? go(I3{}, S1{}) : go(I3{}, S2{});
  if (g.kh == 5) g.sh == 1 ? go(I5{}, S1{}) : go(I5{}, S2{});
  if (g.kh == 7) g.sh == 1 ? go(I7{}, S1{}) : go(I7{}, S2{});
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const half alpha = static_cast<half>(g.act.alpha), beta = static_cast<half>(g.act.beta);
  const int n = ctx.num_threads;
  switch (g.act.type) {
    case fb::ActivationType::ReLU: run_with(g, packed, in, in_cstep, out, out_cstep, n, ReLU{}); break;
    case fb::ActivationType::Clip:
      run_with(g, packed, in, in_cstep, out, out_cstep, n, Clip{vdupq_n_f16(alpha), vdupq_n_f16(beta)});
      break;
    case fb::ActivationType::LeakyReLU:
      run_with(g, packed, in, in_cstep, out, out_cstep, n, Leaky{vdupq_n_f16(alpha)});
      break;
    default: run_with(g, packed, in, in_cstep, out, out_cstep, n, NoAct{}); break;
  }
}

}  // namespace

const ConvKernel kF16ConvStemPack1to8_Neon = {
    "f16_conv_stem_pack1to8_neonfp16", Isa::kNeon, supports, packed_floats, pack, no_workspace, no_workspace, 0.0, run,
    kLanes, /*f16=*/true,
};

}  // namespace kestrel::kernels::arm
