// Kestrel: which CPUs inference runs on. CPU counts, big and little cores, CPU sets
// for pinning an Extractor's worker threads (Extractor::set_cpu_set), and what can and
// cannot be controlled about OpenMP's idle waiting.
//
// Linux: the topology comes from sysfs, pinning is sched_setaffinity.
//
// Threads: the query functions read sysfs once (first call, thread-safe) and then only
// return cached values; any thread may call them. CpuSet is a plain value type.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kestrel/status.h"

namespace kestrel {

// A set of CPU ids 0..kMaxCpus-1 (the kernel's CPU_SETSIZE). A value type: no heap
// memory, copies are independent. Ids outside the range are ignored by enable() and
// never reported as enabled.
class CpuSet {
 public:
  static constexpr int kMaxCpus = 1024;

  CpuSet() = default;
  // The set {cpus...}; out-of-range ids are dropped (check with contains()).
  static CpuSet of(const std::vector<int>& cpus);

  void enable(int cpu);
  void disable(int cpu);
  bool contains(int cpu) const;
  int count() const;
  bool empty() const { return count() == 0; }
  // The ids in increasing order.
  std::vector<int> cpus() const;
  // "0-3,6" (the kernel's cpulist format); "" when empty.
  std::string to_string() const;
  bool operator==(const CpuSet& o) const;
  bool operator!=(const CpuSet& o) const { return !(*this == o); }

 private:
  static constexpr int kWords = kMaxCpus / 64;
  uint64_t bits_[kWords] = {};
};

// CPUs of this machine that are online (sysconf(_SC_NPROCESSORS_ONLN)); at least 1.
// This counts the machine, not the process's affinity mask or cgroup quota.
int cpu_count();

// Big and little cores, from /sys/devices/system/cpu/cpuN/cpufreq/cpuinfo_max_freq:
// the CPUs with the highest maximum frequency are big, all others little. On a
// homogeneous machine, or where cpufreq is absent (containers, many VMs, x86 servers),
// every online CPU is big and there are no little ones.
int big_cpu_count();
int little_cpu_count();

// Which cores to run on, as ncnn's set_cpu_powersave(0|1|2).
enum class PowerSave {
  kAll = 0,     // every online CPU
  kLittle = 1,  // little cores only (all CPUs when there are none)
  kBig = 2,     // big cores only
};

// The online CPUs of a class. Never empty: kLittle falls back to all CPUs on a machine
// without little cores, so that a powersave choice always leaves something to run on.
CpuSet cpu_set(PowerSave which);

// OpenMP's idle waiting. libgomp (the OpenMP run-time Kestrel is built with on Linux)
// reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in a constructor that runs when the
// program starts, and has no call to change them later; setenv() from main() therefore
// has no effect. Set them in the environment of the process (a launcher script,
// systemd's Environment=): "passive" makes idle workers sleep at once (lower power and
// less interference with other threads of a robot, slower wake-up), "active" spins
// (lowest latency between layers, a busy core between frames). Unset means libgomp's
// default: spin about 300000 iterations, then sleep.
enum class WaitPolicy { kDefault, kActive, kPassive };

// The policy the OpenMP run-time was started with (OMP_WAIT_POLICY as found in the
// environment when libkestrel's static initialisers ran, which is after libgomp's).
WaitPolicy openmp_wait_policy();

}  // namespace kestrel
