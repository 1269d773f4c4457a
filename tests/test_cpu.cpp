// kestrel/cpu.h: CPU sets, the topology, and Extractor::set_cpu_set pinning the
// calling thread during extract() and its OpenMP workers, checked with
// sched_getaffinity from inside the threads and with /proc.
#include <dirent.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "kernels/isa.h"
#include "kestrel/cpu.h"
#include "test_util.h"

namespace {

kestrel::CpuSet affinity_of_this_thread() {
  cpu_set_t m;
  CPU_ZERO(&m);
  sched_getaffinity(0, sizeof(m), &m);
  kestrel::CpuSet s;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &m)) s.enable(c);
  }
  return s;
}

// Threads of this process whose Cpus_allowed_list is exactly `list`.
int threads_allowed_exactly(const std::string& list) {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/status");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) n += line.substr(line.find_last_of(" \t") + 1) == list;
    }
  }
  closedir(dir);
  return n;
}

}  // namespace

TEST_SUITE("cpu") {
  // The cpu_in_order / cpu_out_of_order ctests (aarch64 builds) run this under qemu's
  // -cpu cortex-a53 and cortex-a72, saying which answer the model must give.
  TEST_CASE("in-order cores: detected from MIDR_EL1 as the CPU model says (KESTREL_TEST_IN_ORDER)") {
    const bool in_order = kestrel::kernels::host_has_in_order_cores();
    const char* want = std::getenv("KESTREL_TEST_IN_ORDER");
    if (!want) {
      MESSAGE("in-order cores here: " << in_order << " (nothing to compare without KESTREL_TEST_IN_ORDER)");
      return;
    }
    CHECK(in_order == (std::string(want) == "1"));
  }

  // The same ctests (and cpu_fp16, under -cpu cortex-a76) say which extensions the
  // CPU model has: fp16 arithmetic and int8 dot products on the A76, none before.
  TEST_CASE("in-order cores and extensions: fp16, bf16, dot8 as the CPU model says (KESTREL_TEST_FEATURES)") {
    using kestrel::kernels::Feature;
    std::string host;
    for (Feature f : {Feature::kFp16Arith, Feature::kBf16, Feature::kDot8, Feature::kVbmi}) {
      if (!kestrel::kernels::host_has(f)) continue;
      host += (host.empty() ? "" : ",") + std::string(kestrel::kernels::feature_name(f));
      // Only KESTREL_DISABLE or a level capped below the host's turns one off.
      const bool capped = kestrel::kernels::active_isa() != kestrel::kernels::host_isa();
      if (!kestrel::kernels::active_has(f)) CHECK((capped || std::getenv("KESTREL_DISABLE") != nullptr));
    }
    const char* want = std::getenv("KESTREL_TEST_FEATURES");
    MESSAGE("extensions: host '" << host << "', active '" << std::string(kestrel::kernels::active_features()) << "'");
    if (!want) return;
    CHECK(std::string(kestrel::kernels::active_features()) == want);
  }

  TEST_CASE("CpuSet is a value set with the kernel's cpulist spelling") {
    kestrel::CpuSet s = kestrel::CpuSet::of({5, 0, 1, 2, -1, kestrel::CpuSet::kMaxCpus});
    CHECK(s.count() == 4);
    CHECK(s.to_string() == "0-2,5");
    CHECK(s.contains(5));
    CHECK(!s.contains(-1));
    CHECK(!s.contains(kestrel::CpuSet::kMaxCpus));
    kestrel::CpuSet t = s;
    t.disable(5);
    CHECK(t != s);
    CHECK(t.cpus() == std::vector<int>{0, 1, 2});
    CHECK(kestrel::CpuSet().empty());
    CHECK(kestrel::CpuSet().to_string().empty());
  }

  TEST_CASE("topology: big and little cores partition the online CPUs") {
    const int n = kestrel::cpu_count();
    CHECK(n >= 1);
    CHECK(kestrel::big_cpu_count() >= 1);
    CHECK(kestrel::big_cpu_count() + kestrel::little_cpu_count() == n);
    CHECK(kestrel::cpu_set(kestrel::PowerSave::kAll).count() == n);
    CHECK(kestrel::cpu_set(kestrel::PowerSave::kBig).count() == kestrel::big_cpu_count());
    CHECK(!kestrel::cpu_set(kestrel::PowerSave::kLittle).empty());
    MESSAGE("CPUs " << n << ", big " << kestrel::big_cpu_count() << ", little " << kestrel::little_cpu_count());
  }

  TEST_CASE("the wait policy reports the environment the process started with") {
    const char* env = std::getenv("OMP_WAIT_POLICY");
    const kestrel::WaitPolicy expected = env == nullptr                    ? kestrel::WaitPolicy::kDefault
                                         : std::string(env) == "passive" ? kestrel::WaitPolicy::kPassive
                                         : std::string(env) == "active"  ? kestrel::WaitPolicy::kActive
                                                                         : kestrel::WaitPolicy::kDefault;
    CHECK(kestrel::openmp_wait_policy() == expected);
  }

  TEST_CASE("set_cpu_set refuses CPUs that are not online and keeps the previous setting") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kestrel::mobilenet_v1({9, 32})).ok());
    kestrel::Extractor ex = net.create_extractor();
    const int bad = kestrel::cpu_count();
    kestrel::Status s = ex.set_cpu_set(kestrel::CpuSet::of({0, bad}));
    CHECK(s.code() == kestrel::ErrorCode::kInvalidArgument);
    CHECK(s.message().find("CPU " + std::to_string(bad) + " is not online") != std::string::npos);
    MESSAGE(s.message());
    CHECK(ex.set_cpu_set(kestrel::CpuSet()).ok());
    CHECK(ex.set_cpu_set(kestrel::cpu_set(kestrel::PowerSave::kBig)).ok());
    kestrel::Mat out;
    CHECK(ex.input("data", kt::random_input(net, "data", 3)).ok());
    CHECK(ex.extract("prob", out).ok());
  }

  TEST_CASE("pinned: the caller during extract and the OpenMP workers run on the set; the caller gets its mask back") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kestrel::mobilenet_v1({9, 32})).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 7);
    kestrel::Mat expected;
    {
      kestrel::Extractor ex = net.create_extractor();
      ex.set_num_threads(1);
      REQUIRE(ex.input("data", in).ok());
      REQUIRE(ex.extract("prob", expected).ok());
    }
    // A thread of its own: libgomp's worker pool belongs to the calling thread, so the
    // pinned workers do not leak into the other test cases.
    std::thread robot([&] {
      const kestrel::CpuSet before = affinity_of_this_thread();
      const int first = before.cpus().front();  // a CPU this process may use
      const kestrel::CpuSet target = kestrel::CpuSet::of({first});
      kestrel::Extractor ex = net.create_extractor();
      ex.set_num_threads(2);
      REQUIRE(ex.set_cpu_set(target).ok());
      std::mutex m;
      std::vector<kestrel::CpuSet> seen_by_caller;
      ex.set_observer([&](const kestrel::LayerEvent&) {
        std::lock_guard<std::mutex> lock(m);
        seen_by_caller.push_back(affinity_of_this_thread());
      });
      kestrel::Mat out;
      REQUIRE(ex.input("data", in).ok());
      REQUIRE(ex.extract("prob", out).ok());
      CHECK(kt::same_bits(out, expected));
      REQUIRE(!seen_by_caller.empty());
      for (const kestrel::CpuSet& s : seen_by_caller) CHECK(s == target);
      CHECK(affinity_of_this_thread() == before);

      // The same pool, asked from this thread: every worker is on the set.
      std::vector<kestrel::CpuSet> workers(2);
#pragma omp parallel num_threads(2)
      workers[omp_get_thread_num()] = affinity_of_this_thread();
      CHECK(workers[0] == before);  // the calling thread itself
      CHECK(workers[1] == target);
      if (before.count() > 1) CHECK(threads_allowed_exactly(target.to_string()) >= 1);
      MESSAGE("worker pinned to " << workers[1].to_string() << ", caller back on " << before.to_string());
    });
    robot.join();
  }
}
