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
#include "core/parallel.h"
#include "arm/f32_softmax_lines_neon.h"
#include "kernels/softmax_kernels.h"

namespace kestrel::kernels::arm {
namespace {

constexpr int kColumns = 16;  // lines per block in the strided case (4 vectors)
constexpr int kShortVectors = 8, kShortLine = 4 * kShortVectors;

using Run = void (*)(const SoftmaxGeometry&, const float*, const SoftmaxStrides&, float*, const SoftmaxStrides&,
                     const KernelContext&);

// fn(input line, output line) for every line [o0][o1], split over the threads. The
// strides are copied into the loop (by value): through the references GCC reloaded them
// for every line.
template <class Fn>
void for_lines(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
               const SoftmaxStrides& os, int threads, const Fn& fn) {
  const long long outer1 = g.outer1;
  const size_t is0 = is.outer0, is1 = is.outer1, os0 = os.outer0, os1 = os.outer1;
  parallel_for(threads, g.outer0 * outer1, [=, &fn](long long l) {
    const size_t o0 = static_cast<size_t>(l / outer1), o1 = static_cast<size_t>(l % outer1);
    fn(in + o0 * is0 + o1 * is1, out + o0 * os0 + o1 * os1);
  });
}

// Every line of `len` values, 4 <= len <= 4V (as [o0][o1][len] with stride-1 axis).
template <int V, bool Log>
void run_short(const SoftmaxGeometry& g, const float* in, const SoftmaxStrides& is, float* out,
               const SoftmaxStrides& os, const KernelContext& ctx) {
  for_lines(g, in, is, out, os, ctx.num_threads, [len = static_cast<size_t>(g.len)](const float* src, float* dst) {
    softmax_short_line_q<V, Log>(src, dst, len);
  });
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
  const size_t is_axis = is.axis, os_axis = os.axis, len = static_cast<size_t>(g.len);
  for_lines(g, in, is, out, os, ctx.num_threads, [=](const float* src, float* dst) {
    softmax_strided_line_q<Log>(src, is_axis, dst, os_axis, len);
  });
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
    for_lines(g, in, is, out, os, ctx.num_threads, [&](const float* src, float* dst) {
      softmax_line_q(src, dst, static_cast<size_t>(g.len), g.log);
    });
    return;
  }
  const long long blocks = (g.inner + kColumns - 1) / kColumns;
  parallel_for(ctx.num_threads, outer * blocks, [&](long long it) {
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
  });
}

}  // namespace

const SoftmaxKernel kF32Softmax_Neon = {"f32_softmax_neon", Isa::kNeon, supports, 1e-4, run};

}  // namespace kestrel::kernels::arm
