// The machine's multiply-add peak, measured: a loop of independent vector FMAs with
// no memory traffic, per ISA level. Benchmarks report every layer as a share of it.
#pragma once
#include "kernels/isa.h"

namespace kestrel::bench {

// GFLOP/s (one multiply-add = 2 flops) that `threads` threads reach
// together at `isa`, best of a few short runs (~0.1 s in all). 0 if `isa` is not
// available here or has no loop (the reference level has none: it has no fixed
// vector width).
double fma_peak_gflops(kernels::Isa isa, int threads);

// The loops, one per ISA translation unit: `iters` rounds of `kChains` independent
// vector FMAs; returns a value that depends on every result so none is optimized away.
namespace detail {
constexpr int kChains = 12;  // > latency x ports on the cores we target (4 x 2, 4 x 2)
float fma_loop_avx512(long iters);
float fma_loop_avx2(long iters);
float fma_loop_neon(long iters);

using FmaLoop = float (*)(long iters);
// This architecture's loop for `isa` and its lanes per vector; nullptr if none
// (fma_table_<arch>.cpp).
FmaLoop fma_loop_for(kernels::Isa isa, int* lanes);
}  // namespace detail

}  // namespace kestrel::bench
