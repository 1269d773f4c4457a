// Internal: pinning an Extractor's OpenMP team to a CpuSet for one inference.
#pragma once
#include <sched.h>

#include "kestrel/cpu.h"
#include "kestrel/status.h"

namespace kestrel::detail {

// InvalidArgument naming the first bad id when `cpus` is empty or holds a CPU that is
// not online on this machine.
Status check_cpu_set(const CpuSet& cpus);

// Pins the calling thread and the workers of its OpenMP pool to a CpuSet while it
// lives, and gives the calling thread its own mask back when destroyed.
//
// libgomp keeps one pool of worker threads per calling thread and reuses it for every
// parallel region that thread starts, so the workers are pinned from inside a parallel
// region, and only when this thread's team last got another set or fewer threads
// (remembered per calling thread). The workers stay pinned between inferences: they
// only run OpenMP work of this calling thread.
class ScopedPin {
 public:
  ScopedPin() = default;
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;
  ~ScopedPin();
  // InvalidArgument with the system's reason when the kernel refuses the mask (for
  // example CPUs outside the process's cgroup cpuset); the calling thread still gets
  // its mask back, and the next pin() redoes the whole team.
  Status pin(const CpuSet& cpus, int num_threads);

 private:
  cpu_set_t saved_{};
  bool restore_ = false;
};

}  // namespace kestrel::detail
