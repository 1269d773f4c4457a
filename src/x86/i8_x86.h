// What the x86 int8 kernels share at any vector width (V: F32x8 or F32x16, x86_vec.h).
//
// An int8 output's requantization (kernels/i8_reference.h): per output channel the
// factors of fma(float(sum), m, c), m = dequant * scale and c = bias * scale; the bounds
// [lo, hi] of the activation once per layer, as floats.
//
// The oracle turns a NaN (a NaN or infinite factor's) into 0 before the clamp. Where
// lo <= 0 <= hi (every activation but a Clip whose range leaves out 0), a NaN passes
// the clamp (max(lo, v) and min(hi, v) return v) and converts to 0x80000000, whose low
// byte, the one every store keeps, is that 0: no compare and mask per vector (5% of
// MobileNet v2's int8 time, Intel Xeon).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "x86/f32_gemm_x86.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN

// The int8 kernels' per-width vector operations, specialized by i8_avx512.h (F32x16) and
// i8_avx2.h (F32x8), for the templates written once over V (the depthwise kernel
// i8_dwconv_planar_x86.h, the map passes i8_map_x86.h):
//   using Requant; Requant requant(act, scale)
//   reg load_row(const float* / const int8_t* in, int n, reg scale): n (<= W) values as
//       integer-valued floats (quantized, or widened bytes); lanes past n zero. Bytes are
//       read a whole vector's worth whatever n: maps are followed by kOverreadBytes
//   void split_store(float* even, float* odd, reg a, reg b, int n): the even and the odd
//       ones of the 2W values a, b (the first n of them valid), (n + 1) / 2 and n / 2 stored
//   void store_sums(float* / int8_t* dst, reg sum, reg d, reg b, int n, rq, epi): the
//       first n (<= W) sums out, as i8_avx512.h's store_sums_x16
template <class V>
struct I8Ops;

template <class V>
struct RequantV {
  float scale;
  typename V::reg lo, hi;
  bool nan_to_zero;  // the compare and mask needed: 0 is outside [lo, hi]
};

template <class V>
inline RequantV<V> requant_of(const ActivationSpec& act, float scale) {
  int lo = 0, hi = 0;
  i8_output_bounds(act, scale, &lo, &hi);
  return {scale, V::set1(static_cast<float>(lo)), V::set1(static_cast<float>(hi)), lo > 0 || hi < 0};
}

// The dot-product GEMM kernels' run, in one parallel region: the source's planes (an
// im2col kernel's; threads take a share of the channels), then a share of the pixel
// groups each, then of the (panel, group) pairs, panel by panel: mostly the groups the
// thread filled, where the map has more groups than panels. Src<T> (T the input's
// element) is built over the workspace past the groups' bytes; fill_groups(src, g0, g1)
// and pair(panel, group, out, epi) are the kernel's.
template <class V, template <class> class Src, class FillGroups, class Pair>
void run_dot_maps(const ConvGeometry& g, const I8Operands& io, const KernelContext& ctx, size_t group_bytes,
                  size_t panels, size_t ngroups, const FillGroups& fill_groups, const Pair& pair) {
  with_i8_operands(io, [&](const auto* in, auto* out) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
    const Src<T> src(g, in, io.in_cstep, static_cast<uint8_t*>(ctx.workspace) + group_bytes);
    gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
#pragma omp parallel num_threads(std::max(1, ctx.num_threads))
      {
        const size_t t = omp_get_thread_num(), n = omp_get_num_threads();
        src.fill(static_cast<int>(g.in_c * t / n), static_cast<int>(g.in_c * (t + 1) / n), io.in_scale);
#pragma omp barrier
        fill_groups(src, ngroups * t / n, ngroups * (t + 1) / n);
#pragma omp barrier
        const size_t total = panels * ngroups;
        for (size_t i = total * t / n, end = total * (t + 1) / n; i < end; ++i) {
          pair(static_cast<int>(i / ngroups), i % ngroups, out, epi);
        }
      }
    });
  });
}

KESTREL_X86_NS_END
