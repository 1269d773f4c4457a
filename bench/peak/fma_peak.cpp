#include "fma_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace kestrel::bench {

namespace {
volatile float g_sink;  // keeps the loops' results alive
}

double fma_peak_gflops(kernels::Isa isa, int threads) {
  int lanes = 0;
  const detail::FmaLoop loop = detail::fma_loop_for(isa, &lanes);
  if (!loop || !kernels::isa_allows(kernels::host_isa(), isa)) return 0;
  threads = std::max(1, threads);
  const long iters = 2'000'000;  // ~10 ms per run at a few GHz
  double best = 0;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    g_sink = loop(iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(iters) * detail::kChains * lanes * threads / s * 1e-9);
  }
  return best;
}

}  // namespace kestrel::bench
