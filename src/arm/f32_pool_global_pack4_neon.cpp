// Global max and average pooling of pack4 maps (4 channels per pixel vector) into a
// pack4 or a planar 1x1 output, bit-identical to f32_pool_global_neon on the planar
// map. That kernel reduces a plane of n floats in 4 vector accumulators, 16 floats per
// step (accumulator k lane l takes the floats i = 4k + l mod 16), then 4 per step into
// accumulator 0, combines (a0 op a1) op (a2 op a3), reduces the lanes pairwise (FADDP,
// FMAXV: (l0 op l1) op (l2 op l3)) and takes the last n % 4 floats one by one. Here
// float i of every channel is pixel i, one vector: 16 accumulators, one per residue
// mod 16, replay those steps for 4 channels at once, one load and one op per pixel
// like the planar loop. Threads over 4-channel blocks.
#include <arm_neon.h>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "arm/f32_pool2d_neon.h"
#include "kernels/pool_kernels.h"

namespace kestrel::kernels::arm {
namespace {

constexpr int kLanes = 4;

// The planar scalar tail: m = (isnan(x) || x > m) ? x : m, lane by lane.
struct MaxTail {
  static float32x4_t apply(float32x4_t m, float32x4_t x) {
    const uint32x4_t take = vorrq_u32(vcgtq_f32(x, m), vmvnq_u32(vceqq_f32(x, x)));
    return vbslq_f32(take, x, m);
  }
};
struct SumTail {
  static float32x4_t apply(float32x4_t s, float32x4_t x) { return vaddq_f32(s, x); }
};

// The planar kernel's result for the 4 channels of one block of n pixels at p. Always
// inline: called from parallel_for's one-thread loop and its OpenMP loop, GCC left it
// out of line, and the call took MobileNet v1's pool6 from 41 K to 54 K instructions.
template <class Op, class Tail>
__attribute__((always_inline)) inline float32x4_t reduce_block(const float* p, size_t n) {
  const float32x4_t id = vdupq_n_f32(Op::kIdentity);
  float32x4_t a[16];
  for (float32x4_t& v : a) v = id;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int r = 0; r < 16; ++r) a[r] = Op::apply(a[r], vld1q_f32(p + (i + r) * kLanes));
  }
  for (; i + 4 <= n; i += 4) {
    for (int r = 0; r < 4; ++r) a[r] = Op::apply(a[r], vld1q_f32(p + (i + r) * kLanes));
  }
  // Lane l of (a0 op a1) op (a2 op a3) there is residues l, 4 + l, 8 + l, 12 + l here.
  float32x4_t t[4];
  for (int l = 0; l < 4; ++l) t[l] = Op::apply(Op::apply(a[l], a[4 + l]), Op::apply(a[8 + l], a[12 + l]));
  float32x4_t s = Op::apply(Op::apply(t[0], t[1]), Op::apply(t[2], t[3]));
  for (; i < n; ++i) s = Tail::apply(s, vld1q_f32(p + i * kLanes));
  return s;
}

bool supports(const PoolGeometry& g) {
  return g.global && g.in_pack == kLanes && (g.out_pack == kLanes || g.out_pack == 1) && g.channels >= kLanes &&
         g.channels % kLanes == 0 && g.in_h >= 1 && g.in_w >= 1;
}

size_t no_workspace(const PoolGeometry&) { return 0; }

void run(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const size_t n = static_cast<size_t>(g.in_h) * g.in_w;
  const bool avg = g.pool == fb::PoolType::Average;
  // The planar kernel divides (s / n), it does not multiply by 1 / n.
  const float32x4_t count = vdupq_n_f32(static_cast<float>(n));
  const int blocks = g.channels / kLanes;
  parallel_for(ctx.num_threads, blocks, [&](int q) {
    const float* p = in + q * in_cstep;
    const float32x4_t v = avg ? vdivq_f32(reduce_block<SumPoolQ, SumTail>(p, n), count)
                              : reduce_block<MaxPoolQ, MaxTail>(p, n);
    if (g.out_pack == kLanes) {
      vst1q_f32(out + q * out_cstep, v);
    } else {
      float lanes[kLanes];
      vst1q_f32(lanes, v);
      for (int l = 0; l < kLanes; ++l) out[(static_cast<size_t>(q) * kLanes + l) * out_cstep] = lanes[l];
    }
  });
}

}  // namespace

const PoolKernel kF32PoolGlobalPack4_Neon = {
    "f32_pool_global_pack4_neon", Isa::kNeon, supports, no_workspace, no_workspace, 1e-4, run, kLanes,
};

}  // namespace kestrel::kernels::arm
