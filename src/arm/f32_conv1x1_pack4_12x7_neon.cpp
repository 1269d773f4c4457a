// 1x1 convolution, stride 1, no padding, one group, pack4 input read in place and pack4
// output, in tiles of 12 output channels x 7 pixels (src/arm/f32_conv1x1_pack4_12x7_neon.h:
// 5.95% of the instructions loads against the 8 x 8 tile's 6.25%). The channels past
// the last whole block of 12 (0, 8 or 16: a remainder of 4 is taken as 16, so that no
// block runs 4 wide) go to the 8 x 8 tiles of f32_conv_pack4_8x8_tiles_neon.h, whose
// weights follow the 12-channel blocks'. Everything else (stride 2, a planar operand,
// fewer than 12 channels, and every layer on a board with in-order cores) is left to
// f32_conv1x1_pack4_8x8_neon.
//
// Threads: as the 8 x 8 driver, work items are (block, run of tiles), blocks inner,
// one contiguous range per thread; each output comes from one tile in a fixed order, so
// the result depends neither on the thread count nor on the tile a pixel falls in.
//
// Its half-weight twin (A = uint16_t) keeps the weights as halves, its 12-channel and
// 8 x 8 blocks widened into each thread's room (f32_half_blocks_neon.h).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "arm/arm_kernels.h"
#include "arm/f32_conv1x1_pack4_12x7_neon.h"
#include "arm/f32_conv_pack4_8x8_tiles_neon.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/f32_half_blocks_neon.h"
#include "core/parallel.h"
#include "kernels/isa.h"

namespace kestrel::kernels::arm {
namespace {

namespace t12 = conv1x1_pack4_12x7;
using t12::Body;

constexpr int kLanes = 4;
constexpr size_t kPixelFloats = t12::kTilePixels * kLanes;  // a 7-pixel tile's floats per block

// Output channels in 12-channel blocks and the rest, for out_c % 4 == 0.
struct Split {
  int blocks, rest;
};
Split split(int out_c) {
  Split s{out_c / t12::kBlockOut, out_c % t12::kBlockOut};
  if (s.rest == kLanes) --s.blocks, s.rest += t12::kBlockOut;
  return s;
}

size_t in_blocks(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) / kLanes; }

bool supports_f32(const ConvGeometry& g) {
  const bool one_by_one = g.kh == 1 && g.kw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
  const bool in_place = g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.out_h == g.in_h &&
                        g.out_w == g.in_w && g.in_h >= 1 && g.in_w >= 1;
  const bool blocked = g.in_pack == kLanes && g.out_pack == kLanes && g.in_c >= kLanes && g.in_c % kLanes == 0 &&
                       g.out_c % kLanes == 0;
  // On in-order cores each group's weight loads stall the FMAs right after them
  // (llvm-mca, Cortex-A53: 54.6% of the FMA peak against the 8 x 8 tile's 67.4%), so
  // where a board has any, the 8 x 8 tiles take every layer.
  return one_by_one && in_place && blocked && g.out_c >= t12::kBlockOut && split(g.out_c).blocks >= 1 &&
         !host_has_in_order_cores();
}

template <class A>
bool supports(const ConvGeometry& g) {
  return (std::is_same_v<A, float> || g.half_weights) && supports_f32(g);
}

// A half-weight twin's 12-channel block: its bias, then its weights as halves.
half_blocks::Layout half_layout(size_t kb) {
  return {true, kb * t12::kStepWeights, t12::kGroups, t12::kTilePixels};
}

template <class A>
size_t packed_floats(const ConvGeometry& g) {
  const Split s = split(g.out_c);
  const size_t kb = in_blocks(g);
  if constexpr (std::is_same_v<A, uint16_t>) {
    return s.blocks * half_layout(kb).stored_floats() + conv_pack4::half_packed_floats(kb, s.rest);
  }
  return s.blocks * t12::block_floats(kb) + conv_pack4::packed_floats(kb, s.rest);
}

// 12-channel block b into dst (t12::block_floats(kb) floats): its bias broadcast per
// group and pixel, then its weights by 4-channel step.
void pack_block(const ConvGeometry& g, const float* weight, const float* bias, int b, float* dst) {
  const size_t kb = in_blocks(g), k = static_cast<size_t>(g.in_c);
  for (int grp = 0; grp < t12::kGroups; ++grp) {
    for (int p = 0; p < t12::kTilePixels; ++p) {
      for (int o = 0; o < kLanes; ++o) {
        const int oc = b * t12::kBlockOut + grp * kLanes + o;
        dst[grp * t12::kGroupBias + p * kLanes + o] = bias ? bias[oc] : 0.f;
      }
    }
  }
  float* rows = dst + t12::kBiasFloats;
  for (size_t j = 0; j < kb; ++j) {
    for (int grp = 0; grp < t12::kGroups; ++grp) {
      for (int r = 0; r < kLanes; ++r) {
        for (int o = 0; o < kLanes; ++o) {
          const size_t oc = static_cast<size_t>(b * t12::kBlockOut + grp * kLanes + o);
          rows[(j * t12::kGroups + grp) * 16 + r * kLanes + o] = weight[oc * k + j * kLanes + r];
        }
      }
    }
  }
}

// The 12-channel blocks, then the rest in 8 x 8 blocks. A half-weight twin stores each
// block with its weights as halves, packing one block of floats at a time (no fp32
// copy of the layer at load).
template <class A>
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  constexpr bool kHalves = std::is_same_v<A, uint16_t>;
  const size_t kb = in_blocks(g), k = static_cast<size_t>(g.in_c);
  const Split s = split(g.out_c);
  const size_t stride = kHalves ? half_layout(kb).stored_floats() : t12::block_floats(kb);
  std::vector<float> block(kHalves ? t12::block_floats(kb) : 0);
  for (int b = 0; b < s.blocks; ++b) {
    if constexpr (kHalves) {
      pack_block(g, weight, bias, b, block.data());
      half_layout(kb).narrow(block.data(), packed + b * stride);
    } else {
      pack_block(g, weight, bias, b, packed + b * stride);
    }
  }
  const size_t first = static_cast<size_t>(s.blocks) * t12::kBlockOut;
  auto weight_at = [&](size_t oc, size_t c) { return weight[(first + oc) * k + c]; };
  const float* rest_bias = bias ? bias + first : nullptr;
  if constexpr (kHalves) {
    conv_pack4::pack_half_blocks(s.rest, kb, weight_at, rest_bias, packed + s.blocks * stride);
  } else {
    conv_pack4::pack_blocks(s.rest, kb, weight_at, rest_bias, packed + s.blocks * stride);
  }
}

size_t no_workspace(const ConvGeometry&) { return 0; }

size_t half_room(const ConvGeometry& g) {
  const size_t kb = in_blocks(g);
  const Split s = split(g.out_c);
  return std::max(half_blocks::room_bytes(s.blocks, t12::block_floats(kb)), conv_pack4::half_room_bytes(kb, s.rest));
}

using Plan = conv_pack4::TilePlan<t12::kTilePixels, t12::kBlockOut>;

// The tile's activation: ReLU, Clip and LeakyReLU in its assembly, any other applied
// to the values stored (Epilogue::finish).
template <class Epi>
constexpr t12::Act act_of() {
  using gemm::Act;
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<Act::kReLU>>) return t12::Act::kReLU;
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<Act::kClip>>) return t12::Act::kClip;
  if constexpr (std::is_same_v<Epi, gemm::Epilogue<Act::kLeaky>>) return t12::Act::kLeaky;
  return t12::Act::kNone;
}

template <int N, Body kBody, class Epi>
__attribute__((always_inline)) inline void tile(const t12::Loop& lp, const float* w, const float*& x, float*& o0,
                                                float*& o1, float*& o2, const float* act, const Epi& epi) {
  float* const f0 = o0;
  float* const f1 = o1;
  float* const f2 = o2;
  t12::tile<N, kBody, act_of<Epi>()>(lp, w, x, o0, o1, o2, act);
  epi.finish(f0, N * kLanes);
  epi.finish(f1, N * kLanes);
  epi.finish(f2, N * kLanes);
}

struct Blocks {
  const float* w;    // the first block (its bias, then its weights)
  size_t wstep;      // floats from one block to the next
  const float* x;    // the first tile's input
  float* out;        // the first block's output at the first tile
  size_t cstep;      // floats from one output block of 4 channels to the next
  const float* act;  // the activation's constants: alpha x 4, beta x 4
  size_t nblocks, nfull;
  int rest;  // pixels of a last tile after the nfull (0: none)
};

// Blocks over the same tiles: for each, its 7-pixel tiles, then a last one of `rest`.
// One function for a run of work items (the 8 x 8 driver's reason: per item, GCC
// spent ~60 instructions on setup).
template <Body kBody, class Epi>
__attribute__((noinline)) void run_blocks(const t12::Loop& loop, const Blocks& blocks, const Epi& epi) {
  const t12::Loop lp = loop;
  const Blocks bl = blocks;
  const float* w = bl.w;
  float* o = bl.out;
  for (size_t b = 0; b < bl.nblocks; ++b, w += bl.wstep, o += t12::kGroups * bl.cstep) {
    const float* x = bl.x;
    float* o0 = o;
    float* o1 = o + bl.cstep;
    float* o2 = o + 2 * bl.cstep;
    for (size_t n = bl.nfull; n != 0; --n) tile<t12::kTilePixels, kBody>(lp, w, x, o0, o1, o2, bl.act, epi);
    switch (bl.rest) {
      case 1: tile<1, Body::kEntered>(lp, w, x, o0, o1, o2, bl.act, epi); break;
      case 2: tile<2, Body::kEntered>(lp, w, x, o0, o1, o2, bl.act, epi); break;
      case 3: tile<3, Body::kEntered>(lp, w, x, o0, o1, o2, bl.act, epi); break;
      case 4: tile<4, Body::kEntered>(lp, w, x, o0, o1, o2, bl.act, epi); break;
      case 5: tile<5, Body::kEntered>(lp, w, x, o0, o1, o2, bl.act, epi); break;
      case 6: tile<6, Body::kEntered>(lp, w, x, o0, o1, o2, bl.act, epi); break;
      default: break;
    }
  }
}

// Blocks [b0, b1) of the fp32 blocks at w (wstep floats apart) over tiles [t0, t1).
template <class Epi>
__attribute__((always_inline)) inline void run_span(const t12::Loop& lp, const conv_pack4::Args& a, const Plan& pl,
                                                    const float* w, size_t wstep, const float* act, size_t b0,
                                                    size_t b1, size_t t0, size_t t1, const Epi& epi) {
  const size_t first = t0 * kPixelFloats;
  const Blocks bl{w + b0 * wstep, wstep, a.x + first, a.out + b0 * t12::kGroups * a.out_cstep + first,
                  a.out_cstep, act, b1 - b0, std::min(t1, pl.full) - t0, t1 > pl.full ? pl.rest : 0};
  if (lp.kb % t12::kLongBodySteps == 0) {
    run_blocks<Body::kWhole32>(lp, bl, epi);
  } else if (lp.skip == 0) {
    run_blocks<Body::kWhole16>(lp, bl, epi);
  } else if (lp.skip == t12::kBodySteps / 2) {
    run_blocks<Body::kHalf>(lp, bl, epi);
  } else {
    run_blocks<Body::kEntered>(lp, bl, epi);
  }
}

template <class A, class Epi>
void run_range(const conv_pack4::Args& a, const Plan& pl, const float* act, size_t i0, size_t i1, const Epi& epi) {
  const t12::Loop lp(pl.kb, a.xstep);
  const size_t wstep = t12::block_floats(pl.kb);
  if constexpr (std::is_same_v<A, float>) {
    for (size_t i = i0; i < i1;) {
      const size_t b0 = i % pl.nblocks, t0 = i / pl.nblocks * pl.run_tiles;
      const size_t b1 = std::min(pl.nblocks, b0 + (i1 - i));
      run_span(lp, a, pl, a.weights, wstep, act, b0, b1, t0, std::min(pl.tiles, t0 + pl.run_tiles), epi);
      i += b1 - b0;
    }
  } else {
    const size_t stored = half_layout(pl.kb).stored_floats();
    float* room = static_cast<float*>(a.ctx->scratch_of(omp_get_thread_num()));
    half_blocks::for_items(
        pl.nblocks, i0, i1, wstep, room,
        [&](size_t b, float* dst) { half_layout(pl.kb).widen(a.weights + b * stored, dst); },
        [&](size_t b0, size_t lo, size_t hi, size_t r) {
          conv_pack4::Args w = a;
          w.out = a.out + b0 * t12::kGroups * a.out_cstep;
          const size_t t0 = r * pl.run_tiles;
          run_span(lp, w, pl, room, wstep, act, lo, hi, t0, std::min(pl.tiles, t0 + pl.run_tiles), epi);
        });
  }
}

template <class A>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const size_t kb = in_blocks(g), pixels = static_cast<size_t>(g.out_h) * g.out_w;
  const Split s = split(g.out_c);
  const Plan pl(kb, pixels, static_cast<size_t>(s.blocks));
  const conv_pack4::Args a{s.blocks * t12::kBlockOut, packed, in, in_cstep, out, out_cstep, &ctx};
  // The rest: 8 x 8 blocks after the 12-channel ones, in weights and in the output.
  const size_t first = static_cast<size_t>(s.blocks) * t12::kGroups;
  const size_t block = std::is_same_v<A, float> ? t12::block_floats(kb) : half_layout(kb).stored_floats();
  const conv_pack4::Args r{s.rest, packed + s.blocks * block, in, in_cstep, out + first * out_cstep, out_cstep, &ctx};
  const conv_pack4::Plan rpl(kb, pixels, s.rest);
  alignas(16) const float act[8] = {g.act.alpha, g.act.alpha, g.act.alpha, g.act.alpha,
                                    g.act.beta,  g.act.beta,  g.act.beta,  g.act.beta};
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    parallel_region(ctx.num_threads, [&] {
      const size_t items = pl.nblocks * pl.runs;
      const int nt = omp_get_num_threads();
#pragma omp for schedule(static)
      for (int c = 0; c < nt; ++c) run_range<A>(a, pl, act, items * c / nt, items * (c + 1) / nt, epi);
      if (s.rest > 0) conv_pack4::run_items<kLanes, A>(r, rpl, epi);
    });
  });
}

}  // namespace

const ConvKernel kF32Conv1x1Pack4_12x7_Neon = {
    "f32_conv1x1_pack4_12x7_neon", Isa::kNeon, supports<float>, packed_floats<float>, pack<float>, no_workspace,
    no_workspace, 1e-4, run<float>, kLanes,
};
const ConvKernel kF32Conv1x1Pack4_12x7_F16w_Neon = {
    "f32_conv1x1_pack4_12x7_f16w_neon", Isa::kNeon, supports<uint16_t>, packed_floats<uint16_t>, pack<uint16_t>,
    no_workspace, half_room, 1e-4, run<uint16_t>, kLanes, false, true,
};

}  // namespace kestrel::kernels::arm
