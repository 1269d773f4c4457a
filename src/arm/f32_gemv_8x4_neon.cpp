// InnerProduct as a GEMV over weights packed once at Net load: blocks of 8 outputs,
// [k][8] inside a block (zeros for the missing outputs of the last block), then the
// bias of every block. An input of several channel planes is first gathered into one
// contiguous vector in the workspace (num_input floats, against num_output times as
// many weight floats): a classifier's [1024,1,1] input would otherwise run as 1024
// one-value planes through the microkernel's scalar tail. Threads take whole blocks,
// so every output is summed in the same order whatever the thread count; bias and
// activation are applied in registers before the store. Its half-weight twin
// (A = uint16_t) keeps the weights as halves and widens them as it streams them.
#include "arm/f32_gemv_8x4_neon.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "arm/f32_activation_neon.h"
#include "kernels/fc_gemv_pack.h"
#include "kernels/fc_kernels.h"

namespace kestrel::kernels::arm {
namespace {

constexpr int kBlock = 8;

size_t blocks(const FcGeometry& g) { return gemv_blocks(g, kBlock); }

template <class A>
constexpr bool kHalves = std::is_same_v<A, uint16_t>;

template <class A>
bool supports(const FcGeometry& g) {
  return gemv_supports(g) && (!kHalves<A> || g.half_weights);
}

template <class A>
size_t packed_floats(const FcGeometry& g) {
  return gemv_packed_floats(g, kBlock, kHalves<A>);
}

template <class A>
void pack(const FcGeometry& g, const float* weight, const float* bias, float* packed) {
  gemv_pack(g, kBlock, weight, bias, packed, kHalves<A>);
}

size_t workspace_bytes(const FcGeometry& g) { return gemv_workspace_bytes(g); }

size_t no_workspace(const FcGeometry&) { return 0; }

template <class A, fb::ActivationType T>
void run_act(const FcGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
             const KernelContext& ctx) {
  const size_t k_total = g.num_input();
  const int nb = static_cast<int>(blocks(g));
  const float* bias = packed + gemv_weight_floats(g, kBlock, kHalves<A>);
  const ActivationQ p(g.act);
  const float* x = in;
  if (g.in_planes > 1) {
    float* gathered = static_cast<float*>(ctx.workspace);
    for (int q = 0; q < g.in_planes; ++q) {
      std::memcpy(gathered + q * g.in_plane, in + q * in_cstep, g.in_plane * sizeof(float));
    }
    x = gathered;
  }
  parallel_for(ctx.num_threads, nb, [&](int b) {
    float32x4_t acc[8];
    for (float32x4_t& a : acc) a = vdupq_n_f32(0.f);
    const A* w = reinterpret_cast<const A*>(packed) + static_cast<size_t>(b) * kBlock * k_total;
    gemv_8x4_q(w, x, k_total, acc);
    float32x4_t lo = vaddq_f32(vaddq_f32(acc[0], acc[2]), vaddq_f32(acc[4], acc[6]));
    float32x4_t hi = vaddq_f32(vaddq_f32(acc[1], acc[3]), vaddq_f32(acc[5], acc[7]));
    lo = activate_q<T>(vaddq_f32(lo, vld1q_f32(bias + b * kBlock)), p);
    hi = activate_q<T>(vaddq_f32(hi, vld1q_f32(bias + b * kBlock + 4)), p);
    float* dst = out + static_cast<size_t>(b) * kBlock;
    const int left = g.num_output - b * kBlock;
    if (left >= kBlock) {
      vst1q_f32(dst, lo);
      vst1q_f32(dst + 4, hi);
    } else {
      store_partial(dst, lo, static_cast<size_t>(std::min(left, 4)));
      if (left > 4) store_partial(dst + 4, hi, static_cast<size_t>(left - 4));
    }
  });
}

template <class A>
void run(const FcGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
         const KernelContext& ctx) {
  activation_detail::dispatch(g.act.type, [&](auto tag) {
    run_act<A, decltype(tag)::value>(g, packed, in, in_cstep, out, ctx);
  });
}

}  // namespace

const FcKernel kF32Gemv8x4_Neon = {
    "f32_gemv_8x4_neon", Isa::kNeon, supports<float>, packed_floats<float>, pack<float>, workspace_bytes,
    no_workspace, 1e-4, run<float>,
};
const FcKernel kF32Gemv8x4_F16w_Neon = {
    "f32_gemv_8x4_f16w_neon", Isa::kNeon, supports<uint16_t>, packed_floats<uint16_t>, pack<uint16_t>,
    workspace_bytes, no_workspace, 1e-4, run<uint16_t>, true,
};

}  // namespace kestrel::kernels::arm
