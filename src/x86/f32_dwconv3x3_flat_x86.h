// 3x3 depthwise convolution, stride 1, "same" padding (pad 1, output the size of the
// input), on small maps: the channel plane read flattened, in place. The planar kernel
// (f32_dwconv3x3_x86.h) works row by row through a ring of padded row copies, and on
// 7- and 14-pixel rows that per-row work dominates (a 14x14 layer ran at 8% of the FMA
// peak, twice ONNX Runtime's time). With the output the size of the input, output
// pixel q = y * w + x reads tap (ky, kx) at input q + (ky - 1) * w + (kx - 1): a plain
// shift of q. So a channel is one run of vectors over q with no copies, each tap a
// masked load whose mask drops the lanes whose tap falls outside the map (x = 0 for
// kx = 0, x = w - 1 for kx = 2, the first row for ky = 0, the last for ky = 2, and the
// lanes past the map). Masked-off lanes are never read (the loads suppress faults), so
// the shifted reads may point before or after the channel. The 9 masks of every vector
// are made once per run, in the shared workspace.
//
// Same packed weights and the same fma order (bias, then ky = 0..2, kx = 0..2) as the
// planar kernel, so the two agree bit for bit and neither depends on the thread count.
// Instantiated in f32_dwconv3x3_flat_avx512.cpp and f32_dwconv3x3_flat_avx2.cpp over the
// traits of f32_dwconv_avx512.h / f32_dwconv_avx2.h (internal linkage, as
// f32_dwconv3x3_x86.h explains); the traits add Mask, mask_of(bits) and
// load_masked(p, mask).
#pragma once
#include <omp.h>

#include <algorithm>

#include "x86/f32_dwconv3x3_x86.h"

#define KESTREL_DW3X3_INLINE __attribute__((always_inline))

namespace kestrel::kernels::x86::dwconv3x3 {

// Maps at most this wide take the flat kernel: measured with kestrel-microbench
// (14x14x512 0.053 ms flat against 0.061 planar, 7x7x1024 0.025-0.034 against 0.056;
// 28x28x256 0.110 against 0.092, and 56x56 and 112x112 2x to 5x slower flat, where
// the planar kernel's vectors are full and the mask table grows with the map).
constexpr int kFlatMaxWidth = 16;

inline bool supports_flat(const ConvGeometry& g) {
  return supports(g) && g.sh == 1 && g.sw == 1 && g.pad_top == 1 && g.pad_left == 1 && g.out_h == g.in_h &&
         g.out_w == g.in_w && g.out_w <= kFlatMaxWidth;
}

template <class V>
size_t flat_vectors_of(const ConvGeometry& g) {
  return (static_cast<size_t>(g.out_h) * g.out_w + V::kW - 1) / V::kW;
}

template <class V>
size_t flat_workspace(const ConvGeometry& g) {
  return 9 * flat_vectors_of<V>(g) * sizeof(typename V::Mask);
}

// masks[k * nv + v]: the lanes of vector v whose tap k = ky * 3 + kx is inside the map.
template <class V>
void flat_masks(const ConvGeometry& g, typename V::Mask* masks) {
  constexpr int W = V::kW;
  const size_t nv = flat_vectors_of<V>(g);
  const int h = g.out_h, w = g.out_w;
  for (size_t v = 0; v < nv; ++v) {
    for (int ky = 0; ky < 3; ++ky) {
      for (int kx = 0; kx < 3; ++kx) {
        unsigned bits = 0;
        for (int i = 0; i < W; ++i) {
          const long q = static_cast<long>(v) * W + i;
          const long y = q / w, x = q % w;
          const bool inside = q < static_cast<long>(h) * w && y + ky - 1 >= 0 && y + ky - 1 < h && x + kx - 1 >= 0 &&
                              x + kx - 1 < w;
          bits |= static_cast<unsigned>(inside) << i;
        }
        masks[(ky * 3 + kx) * nv + v] = V::mask_of(bits);
      }
    }
  }
}

// U vectors of outputs from vector v on.
template <class V, int U, Epilogue E>
inline KESTREL_DW3X3_INLINE void flat_vectors(const float* in, int w, const typename V::Mask* masks, size_t nv,
                                              const typename V::T wt[9], typename V::T bias, const Act<V>& act,
                                              size_t v, float* out, size_t pixels) {
  using T = typename V::T;
  constexpr int W = V::kW;
  T acc[U];
  nine_taps<V, U>(acc, wt, bias, [&](auto ky, auto kx, auto u) KESTREL_DW3X3_INLINE {
    constexpr int k = decltype(ky)::value * 3 + decltype(kx)::value;
    const long shift = static_cast<long>(decltype(ky)::value - 1) * w + (decltype(kx)::value - 1);
    const float* p = in + static_cast<long>((v + u) * W) + shift;
    return V::load_masked(p, masks[k * nv + v + u]);
  });
  unroll<U>([&](auto u) KESTREL_DW3X3_INLINE {
    const size_t q = (v + u) * W;
    const T y = activate<V, E>(acc[u], act);
    if (q + W <= pixels) {
      V::storeu(out + q, y);
    } else {
      V::store_n(out + q, y, static_cast<int>(pixels - q));
    }
  });
}

template <class V, Epilogue E>
void flat_channels(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
                   size_t out_cstep, const KernelContext& ctx, const Act<V>& act, bool activate_after) {
  constexpr int U = 4;  // 4 independent chains cover the FMA latency
  const size_t nv = flat_vectors_of<V>(g), pixels = static_cast<size_t>(g.out_h) * g.out_w;
  auto* masks = static_cast<typename V::Mask*>(ctx.workspace);
  flat_masks<V>(g, masks);
#pragma omp parallel for num_threads(ctx.num_threads) schedule(static)
  for (int c = 0; c < g.in_c; ++c) {
    const float* pk = packed + static_cast<size_t>(c) * kPackFloats;
    typename V::T wt[9];
    for (int k = 0; k < 9; ++k) wt[k] = V::set1(pk[k]);
    const typename V::T bias = V::set1(pk[9]);
    const float* src = in + static_cast<size_t>(c) * in_cstep;
    float* dst = out + static_cast<size_t>(c) * out_cstep;
    size_t v = 0;
    for (; v + U <= nv; v += U) flat_vectors<V, U, E>(src, g.in_w, masks, nv, wt, bias, act, v, dst, pixels);
    for (; v < nv; ++v) flat_vectors<V, 1, E>(src, g.in_w, masks, nv, wt, bias, act, v, dst, pixels);
    if (activate_after) activate_channel(dst, pixels, g.act);
  }
}

template <class V>
void run_flat(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx) {
  with_epilogue<V>(g, [&](auto e, const Act<V>& act, bool after) {
    flat_channels<V, decltype(e)::value>(g, packed, in, in_cstep, out, out_cstep, ctx, act, after);
  });
}

// The registry entry of the kernel over V; an ISA's translation unit names only its traits.
template <class V>
constexpr ConvKernel flat_kernel(const char* name, Isa isa) {
  return {name, isa, supports_flat, packed_floats, pack, flat_workspace<V>, no_workspace, 1e-4, run_flat<V>};
}

}  // namespace kestrel::kernels::x86::dwconv3x3

#undef KESTREL_DW3X3_INLINE
