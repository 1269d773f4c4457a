// Global max and average pooling: one reduction per channel plane, 16 floats per
// step in 4 accumulators, threads over channels.
#include <arm_neon.h>

#include <cmath>

#include "arm/arm_kernels.h"
#include "arm/f32_pool2d_neon.h"
#include "kernels/pool_kernels.h"

namespace kestrel::kernels::arm {
namespace {

template <class Op>
float32x4_t reduce_plane(const float* p, size_t n, size_t* done) {
  const float32x4_t id = vdupq_n_f32(Op::kIdentity);
  float32x4_t a0 = id, a1 = id, a2 = id, a3 = id;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = Op::apply(a0, vld1q_f32(p + i));
    a1 = Op::apply(a1, vld1q_f32(p + i + 4));
    a2 = Op::apply(a2, vld1q_f32(p + i + 8));
    a3 = Op::apply(a3, vld1q_f32(p + i + 12));
  }
  for (; i + 4 <= n; i += 4) a0 = Op::apply(a0, vld1q_f32(p + i));
  *done = i;
  return Op::apply(Op::apply(a0, a1), Op::apply(a2, a3));
}

float global_max(const float* p, size_t n) {
  size_t i = 0;
  // FMAXV, like FMAX, returns NaN if any lane is NaN; the tail keeps that rule.
  float m = vmaxvq_f32(reduce_plane<MaxPoolQ>(p, n, &i));
  for (; i < n; ++i) m = (std::isnan(p[i]) || p[i] > m) ? p[i] : m;
  return m;
}

float global_average(const float* p, size_t n) {
  size_t i = 0;
  float s = vaddvq_f32(reduce_plane<SumPoolQ>(p, n, &i));
  for (; i < n; ++i) s += p[i];
  return s / static_cast<float>(n);
}

bool supports(const PoolGeometry& g) { return g.planar() && g.global && g.in_h >= 1 && g.in_w >= 1; }

size_t no_workspace(const PoolGeometry&) { return 0; }

void run(const PoolGeometry& g, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const size_t n = static_cast<size_t>(g.in_h) * g.in_w;
  const bool avg = g.pool == fb::PoolType::Average;
#pragma omp parallel for num_threads(ctx.num_threads)
  for (int q = 0; q < g.channels; ++q) {
    const float* p = in + q * in_cstep;
    out[q * out_cstep] = avg ? global_average(p, n) : global_max(p, n);
  }
}

}  // namespace

const PoolKernel kF32PoolGlobal_Neon = {
    "f32_pool_global_neon", Isa::kNeon, supports, no_workspace, no_workspace, 1e-4, run,
};

}  // namespace kestrel::kernels::arm
