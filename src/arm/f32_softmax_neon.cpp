// Softmax and LogSoftmax along any axis. The axis innermost: one contiguous line per
// thread iteration, held in registers when it is at most kShortLine values long. An
// outer axis (channels of a feature map, rows of a matrix): blocks of 16 neighbouring
// lines per iteration, vectorised across them; with no neighbours (the channels of a
// [C][1][1] map), the one line gathered four values at a time. Every line is reduced
// in the same order whatever the thread count.
#include "arm/f32_softmax_neon.h"

#include <algorithm>
#include <utility>

#include "arm/arm_kernels.h"
#include "arm/f32_softmax_lines_neon.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::arm {
namespace {

constexpr int kColumns = 16;  // lines per block in the strided case (4 vectors)
constexpr int kShortVectors = 8, kShortLine = 4 * kShortVectors;

using Run = void (*)(const SoftmaxGeometry&, const float*, const SoftmaxStrides&, float*, const SoftmaxStrides&,
                     const KernelContext&);

// Every line of `len` values, 4 <= len <= 4V (as [o0][o1][len] with stride-1 axis).
template <int V, bool Log>
void run_short(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
               const SoftmaxStrides& os, const KernelContext& ctx) {
  const long long outer = static_cast<long long>(g.outer0) * g.outer1;
#pragma omp parallel for num_threads(ctx.num_threads)
  for (long long l = 0; l < outer; ++l) {
    const size_t o0 = static_cast<size_t>(l / g.outer1), o1 = static_cast<size_t>(l % g.outer1);
    softmax_short_line_q<V, Log>(in + o0 * is.outer0 + o1 * is.outer1, out + o0 * os.outer0 + o1 * os.outer1,
                                 static_cast<size_t>(g.len));
  }
}

template <int... V>
constexpr Run short_runs(bool log, int v, std::integer_sequence<int, V...>) {
  constexpr Run plain[] = {run_short<V + 1, false>...}, logs[] = {run_short<V + 1, true>...};
  return log ? logs[v - 1] : plain[v - 1];
}

// Every line of `len` values `axis` apart, with nothing beside them (inner == 1).
template <bool Log>
void run_strided(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
                 const SoftmaxStrides& os, const KernelContext& ctx) {
  const long long outer = static_cast<long long>(g.outer0) * g.outer1;
#pragma omp parallel for num_threads(ctx.num_threads)
  for (long long l = 0; l < outer; ++l) {
    const size_t o0 = static_cast<size_t>(l / g.outer1), o1 = static_cast<size_t>(l % g.outer1);
    softmax_strided_line_q<Log>(in + o0 * is.outer0 + o1 * is.outer1, is.axis, out + o0 * os.outer0 + o1 * os.outer1,
                                os.axis, static_cast<size_t>(g.len));
  }
}

bool supports(const SoftmaxGeometry& g) {
  return g.outer0 >= 1 && g.outer1 >= 1 && g.len >= 1 && g.inner >= 1;
}

void run(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out, const SoftmaxStrides& os,
         const KernelContext& ctx) {
  const long long outer = static_cast<long long>(g.outer0) * g.outer1;
  if (g.inner == 1 && is.axis == 1 && os.axis == 1 && g.len >= 4 && g.len <= kShortLine) {
    short_runs(g.log, (g.len + 3) / 4, std::make_integer_sequence<int, kShortVectors>())(g, in, is, out, os, ctx);
    return;
  }
  if (g.inner == 1 && (is.axis != 1 || os.axis != 1)) {
    (g.log ? run_strided<true> : run_strided<false>)(g, in, is, out, os, ctx);
    return;
  }
  if (g.inner == 1 && is.axis == 1 && os.axis == 1) {
#pragma omp parallel for num_threads(ctx.num_threads)
    for (long long l = 0; l < outer; ++l) {
      const size_t o0 = static_cast<size_t>(l / g.outer1), o1 = static_cast<size_t>(l % g.outer1);
      softmax_line_q(in + o0 * is.outer0 + o1 * is.outer1, out + o0 * os.outer0 + o1 * os.outer1,
                     static_cast<size_t>(g.len), g.log);
    }
    return;
  }
  const long long blocks = (g.inner + kColumns - 1) / kColumns;
#pragma omp parallel for num_threads(ctx.num_threads)
  for (long long it = 0; it < outer * blocks; ++it) {
    const long long l = it / blocks;
    const size_t j = static_cast<size_t>(it % blocks) * kColumns;
    const size_t o0 = static_cast<size_t>(l / g.outer1), o1 = static_cast<size_t>(l % g.outer1);
    const size_t cols = std::min<size_t>(kColumns, static_cast<size_t>(g.inner) - j);
    const float* src = in + o0 * is.outer0 + o1 * is.outer1 + j;
    float* dst = out + o0 * os.outer0 + o1 * os.outer1 + j;
    if (cols > 4) {
      softmax_columns_q<kColumns / 4>(src, is.axis, dst, os.axis, g.len, cols, g.log);
    } else {
      softmax_columns_q<1>(src, is.axis, dst, os.axis, g.len, cols, g.log);
    }
  }
}

}  // namespace

const SoftmaxKernel kF32Softmax_Neon = {"f32_softmax_neon", Isa::kNeon, supports, 1e-4, run};

}  // namespace kestrel::kernels::arm
