// What a fast kernel gets at run time besides its operands: the thread count and the
// scratch the Extractor owns (sized at Net load from the kernels' own requests).
#pragma once
#include <cstddef>

namespace kestrel::kernels {

struct KernelContext {
  int num_threads = 1;
  // Shared scratch of the layer's workspace_bytes (kAlignment-aligned).
  void* workspace = nullptr;
  // Per-thread scratch: thread t (omp_get_thread_num()) owns
  // [thread_scratch + t * thread_scratch_stride, + workspace_per_thread_bytes);
  // there are num_threads of them. Aligned to kAlignment.
  char* thread_scratch = nullptr;
  size_t thread_scratch_stride = 0;

  void* scratch_of(int thread) const { return thread_scratch + static_cast<size_t>(thread) * thread_scratch_stride; }
};

}  // namespace kestrel::kernels
