// InnerProduct as a GEMV over weights packed once at Net load, written once over the
// traits of x86/x86_math.h: blocks of W = V::kWidth outputs (16 for AVX-512, 8 for
// AVX2), [k][W] inside a block (zeros for the missing outputs of the last block),
// then the bias of every block. Each step takes 4 input values: 4 broadcasts feed 4
// independent FMA chains (one per input lane), so the FMA latency is hidden and the
// weights stream in order; the 4 accumulators are added at the end in a fixed order.
// An input of several channel planes is first gathered into one contiguous vector
// in the workspace. Threads take whole blocks, so every output is summed in the same
// order whatever the thread count; bias and activation are applied in registers
// before the store.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/fc_gemv_pack.h"
#include "kernels/fc_kernels.h"
#include "kernels/kernel_context.h"
#include "x86/f32_activation_x86.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

// A: the packed weights' type, floats or IEEE halves (uint16_t: the half-weight twin,
// which also halves the bytes streamed from DRAM).
template <class V, class A = float>
struct GemvX86 {
  static constexpr size_t kBlock = V::kWidth;
  static constexpr bool kHalves = std::is_same_v<A, uint16_t>;
  using R = typename V::reg;

  static size_t blocks(const FcGeometry& g) { return gemv_blocks(g, kBlock); }
  static bool supports(const FcGeometry& g) { return gemv_supports(g) && (!kHalves || g.half_weights); }
  static size_t packed_floats(const FcGeometry& g) { return gemv_packed_floats(g, kBlock, kHalves); }
  static void pack(const FcGeometry& g, const float* weight, const float* bias, float* packed) {
    gemv_pack(g, kBlock, weight, bias, packed, kHalves);
  }
  static size_t workspace_bytes(const FcGeometry& g) { return gemv_workspace_bytes(g); }
  static size_t no_workspace(const FcGeometry&) { return 0; }

  // The block's W dot products over the n values of x, weights w packed [k][W].
  // The weights come from DRAM in a network (a classifier's several MiB are last read
  // a whole inference ago): fetching 4 KiB ahead of the hardware prefetcher took
  // MobileNet v1's fc7 from 0.18-0.19 to 0.16-0.17 ms (kestrel-bench --profile).
  static constexpr size_t kAheadBytes = 4096, kLine = 64;
  static R dot_block(const A* w, const float* x, size_t n) {
    constexpr size_t W = kBlock;
    R a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    size_t k = 0;
    for (; k + 4 <= n; k += 4, w += 4 * W) {
      const char* ahead = reinterpret_cast<const char*>(w) + kAheadBytes;
      for (size_t l = 0; l < 4 * W * sizeof(A); l += kLine) __builtin_prefetch(ahead + l);
      a0 = V::fmadd(V::load(w), V::set1(x[k]), a0);
      a1 = V::fmadd(V::load(w + W), V::set1(x[k + 1]), a1);
      a2 = V::fmadd(V::load(w + 2 * W), V::set1(x[k + 2]), a2);
      a3 = V::fmadd(V::load(w + 3 * W), V::set1(x[k + 3]), a3);
    }
    for (; k < n; ++k, w += W) a0 = V::fmadd(V::load(w), V::set1(x[k]), a0);
    return V::add(V::add(a0, a1), V::add(a2, a3));
  }

  template <fb::ActivationType T>
  static void run_act(const FcGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                      const KernelContext& ctx) {
    const size_t k_total = g.num_input();
    const long long nb = static_cast<long long>(blocks(g));
    const float* bias = packed + gemv_weight_floats(g, kBlock, kHalves);
    const ActivationV<V> p(g.act);
    const float* x = in;
    if (g.in_planes > 1) {
      float* gathered = static_cast<float*>(ctx.workspace);
      for (int q = 0; q < g.in_planes; ++q) {
        std::memcpy(gathered + q * g.in_plane, in + q * in_cstep, g.in_plane * sizeof(float));
      }
      x = gathered;
    }
#pragma omp parallel for num_threads(ctx.num_threads) schedule(static)
    for (long long b = 0; b < nb; ++b) {
      const A* w = reinterpret_cast<const A*>(packed) + static_cast<size_t>(b) * kBlock * k_total;
      R acc = dot_block(w, x, k_total);
      acc = activate_v<T, V>(V::add(acc, V::load(bias + b * kBlock)), p);
      float* dst = out + static_cast<size_t>(b) * kBlock;
      const size_t left = static_cast<size_t>(g.num_output) - static_cast<size_t>(b) * kBlock;
      if (left >= kBlock) V::store(dst, acc);
      else V::store_partial(dst, acc, left);
    }
  }

  static void run(const FcGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                  const KernelContext& ctx) {
    activation_detail::dispatch(g.act.type, [&](auto tag) {
      run_act<decltype(tag)::value>(g, packed, in, in_cstep, out, ctx);
    });
  }

  // The registry entry; an ISA's translation unit names only its tile.
  static constexpr FcKernel entry(const char* name, Isa isa) {
    return {name, isa, supports, packed_floats, pack, workspace_bytes, no_workspace, 1e-4, run, kHalves};
  }
};

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
