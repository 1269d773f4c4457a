// OpenMP regions that one thread does not enter. libgomp builds and frees a team for
// every parallel region, even of one thread: ~1,150 aarch64 instructions (malloc, free,
// barriers) a region, some 36 K of MobileNet v1's inference at 1 thread and 0.1 M of
// MobileNet-SSD's (bench/arm/INSN_COUNTS.md), for no work.
#pragma once
#include <omp.h>

namespace kestrel {

// body() on `threads` threads; one thread runs it here. body may call
// omp_get_thread_num() (0 here) and contain orphaned `omp for` loops, which a thread
// outside any region runs whole.
template <class F>
inline void parallel_region(int threads, F&& body) {
  if (threads <= 1) {
    body();
    return;
  }
#pragma omp parallel num_threads(threads)
  body();
}

// body(i) for i in [0, n), split statically over `threads` threads.
template <class I, class F>
inline void parallel_for(int threads, I n, F&& body) {
  if (threads <= 1) {
    for (I i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (I i = 0; i < n; ++i) body(i);
}

}  // namespace kestrel
