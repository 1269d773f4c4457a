// CPU topology from sysfs, CPU sets, and pinning of OpenMP teams (core/cpu_affinity.h).
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "core/cpu_affinity.h"
#include "kestrel/cpu.h"

namespace kestrel {

// ---- CpuSet -------------------------------------------------------------------------

CpuSet CpuSet::of(const std::vector<int>& cpus) {
  CpuSet s;
  for (int c : cpus) s.enable(c);
  return s;
}

void CpuSet::enable(int cpu) {
  if (cpu >= 0 && cpu < kMaxCpus) bits_[cpu / 64] |= uint64_t{1} << (cpu % 64);
}

void CpuSet::disable(int cpu) {
  if (cpu >= 0 && cpu < kMaxCpus) bits_[cpu / 64] &= ~(uint64_t{1} << (cpu % 64));
}

bool CpuSet::contains(int cpu) const {
  return cpu >= 0 && cpu < kMaxCpus && ((bits_[cpu / 64] >> (cpu % 64)) & 1u) != 0;
}

int CpuSet::count() const {
  int n = 0;
  for (uint64_t w : bits_) n += __builtin_popcountll(w);
  return n;
}

std::vector<int> CpuSet::cpus() const {
  std::vector<int> r;
  for (int c = 0; c < kMaxCpus; ++c) {
    if (contains(c)) r.push_back(c);
  }
  return r;
}

std::string CpuSet::to_string() const {
  std::string r;
  const std::vector<int> ids = cpus();
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!r.empty()) r += ",";
    r += std::to_string(ids[i]);
    if (j > i) r += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return r;
}

bool CpuSet::operator==(const CpuSet& o) const { return std::equal(bits_, bits_ + kWords, o.bits_); }

// ---- topology -----------------------------------------------------------------------

namespace {

struct Topology {
  int online = 1;
  CpuSet all, big, little;
};

// -1 when the file is absent or unreadable (no cpufreq driver).
long read_max_freq(int cpu) {
  std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/cpuinfo_max_freq");
  long khz = -1;
  if (!(f >> khz)) return -1;
  return khz;
}

// Online CPUs are numbered 0..n-1 on the boards we target; a hot-unplugged CPU in
// between shows up as a missing cpufreq file and is then counted as big, which only
// ever widens the big set.
Topology detect() {
  Topology t;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  t.online = static_cast<int>(std::clamp(n, 1L, static_cast<long>(CpuSet::kMaxCpus)));
  std::vector<long> freq(t.online);
  long top = -1;
  bool any_missing = false;
  for (int c = 0; c < t.online; ++c) {
    t.all.enable(c);
    freq[c] = read_max_freq(c);
    any_missing = any_missing || freq[c] < 0;
    top = std::max(top, freq[c]);
  }
  for (int c = 0; c < t.online; ++c) {
    if (any_missing || freq[c] == top) {
      t.big.enable(c);
    } else {
      t.little.enable(c);
    }
  }
  return t;
}

const Topology& topology() {
  static const Topology t = detect();
  return t;
}

WaitPolicy parse_wait_policy(const char* v) {
  if (v == nullptr) return WaitPolicy::kDefault;
  std::string s(v);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (s == "active") return WaitPolicy::kActive;
  if (s == "passive") return WaitPolicy::kPassive;
  return WaitPolicy::kDefault;
}

// Captured during static initialisation, as libgomp's own constructor (which ran
// before ours: libgomp is a dependency of this library) saw it.
const WaitPolicy g_wait_policy_at_start = parse_wait_policy(std::getenv("OMP_WAIT_POLICY"));

}  // namespace

int cpu_count() { return topology().online; }
int big_cpu_count() { return topology().big.count(); }
int little_cpu_count() { return topology().little.count(); }

CpuSet cpu_set(PowerSave which) {
  const Topology& t = topology();
  if (which == PowerSave::kBig) return t.big;
  if (which == PowerSave::kLittle && !t.little.empty()) return t.little;
  return t.all;
}

WaitPolicy openmp_wait_policy() { return g_wait_policy_at_start; }

// ---- pinning --------------------------------------------------------------------------

namespace detail {

namespace {

cpu_set_t to_mask(const CpuSet& cpus) {
  cpu_set_t m;
  CPU_ZERO(&m);
  for (int c : cpus.cpus()) CPU_SET(c, &m);
  return m;
}

// What this calling thread's OpenMP team was last pinned to (libgomp's pool is per
// calling thread, so is this).
thread_local CpuSet t_team_cpus;
thread_local int t_team_threads = 0;

}  // namespace

Status check_cpu_set(const CpuSet& cpus) {
  if (cpus.empty()) return Status(ErrorCode::kInvalidArgument, "empty CPU set");
  const CpuSet& all = topology().all;
  for (int c : cpus.cpus()) {
    if (!all.contains(c)) {
      return Status(ErrorCode::kInvalidArgument, "CPU " + std::to_string(c) + " is not online on this machine (online: " +
                                                     all.to_string() + ")");
    }
  }
  return Status::Ok();
}

Status ScopedPin::pin(const CpuSet& cpus, int num_threads) {
  if (!restore_) {
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) {
      return Status(ErrorCode::kInvalidArgument, std::string("sched_getaffinity: ") + std::strerror(errno));
    }
    restore_ = true;
  }
  const cpu_set_t mask = to_mask(cpus);
  if (sched_setaffinity(0, sizeof(mask), &mask) != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot pin to CPUs " + cpus.to_string() + ": " + std::strerror(errno));
  }
  if (num_threads <= 1 || (t_team_cpus == cpus && t_team_threads >= num_threads)) return Status::Ok();
  std::atomic<int> error{0};
#pragma omp parallel num_threads(num_threads)
  {
    if (sched_setaffinity(0, sizeof(mask), &mask) != 0) error.store(errno);
  }
  if (error.load() != 0) {
    t_team_threads = 0;
    return Status(ErrorCode::kInvalidArgument,
                  "cannot pin worker threads to CPUs " + cpus.to_string() + ": " + std::strerror(error.load()));
  }
  t_team_cpus = cpus;
  t_team_threads = num_threads;
  return Status::Ok();
}

ScopedPin::~ScopedPin() {
  if (restore_) sched_setaffinity(0, sizeof(saved_), &saved_);
}

}  // namespace detail

}  // namespace kestrel
