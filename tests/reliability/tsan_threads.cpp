// Concurrency test for ThreadSanitizer (issue "Reliability"): one Net shared by 4
// std::threads, each with its own Extractor, 50 inferences each on different inputs,
// outputs bit-identical to single-threaded results computed first. Then the same with
// the Extractors of all threads drawing every feature map from ONE pool allocator behind
// a std::mutex (Option::allocator, MemoryStrategy::kNone so that nothing is cached
// per Extractor).
//
// Extractors use num_threads = 1: libgomp is not built with TSan, so its barriers
// and team handoffs look like races to it. With one thread GOMP_parallel runs the body
// on the calling thread and starts no team (see tools/sanitize_reliability.sh).
// Also runs in a normal build (ctest tsan_threads).
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "../mat_util.h"

namespace {

using kestrel::Mat;
using kestrel::Net;

constexpr int kThreads = 4;
constexpr int kRuns = 50;
constexpr int kInputSize = 32;  // MobileNet v1 at 32x32: fast enough under TSan

using kestrel_test::same_bits;

Mat random_mat(const kestrel::Shape& s, uint32_t seed) { return kestrel_test::random_mat_or_abort(s, seed); }

// A simple shared pool: freed blocks are kept per exact size and handed out again;
// every operation under one mutex. Blocks go back to the system when it is destroyed.
class LockedPool final : public kestrel::Allocator {
 public:
  ~LockedPool() override {
    for (Block& b : free_) kestrel::default_allocator()->deallocate(b.ptr);
  }
  void* allocate(size_t size) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++requests_;
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].size == size) {
        void* p = free_[i].ptr;
        free_[i] = free_.back();
        free_.pop_back();
        used_.push_back({p, size});
        ++hits_;
        return p;
      }
    }
    void* p = kestrel::default_allocator()->allocate(size);
    if (p) used_.push_back({p, size});
    return p;
  }
  void deallocate(void* ptr) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < used_.size(); ++i) {
      if (used_[i].ptr == ptr) {
        free_.push_back(used_[i]);
        used_[i] = used_.back();
        used_.pop_back();
        return;
      }
    }
    std::fprintf(stderr, "LockedPool: unknown block %p\n", ptr);
    std::abort();
  }
  long requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  long hits() {
    std::lock_guard<std::mutex> lock(mutex_);
    return hits_;
  }
  size_t in_use() {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_.size();
  }

 private:
  struct Block {
    void* ptr;
    size_t size;
  };
  std::mutex mutex_;
  std::vector<Block> free_, used_;
  long requests_ = 0, hits_ = 0;
};

// Threads of this process now (/proc/self/task), -1 if unknown.
int process_threads() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Most threads the process had while the workers ran: the threads before them (main,
// and TSan's background thread) plus kThreads means that no OpenMP team was started
// (each Extractor's thread runs its parallel regions itself).
std::atomic<int> g_max_threads{0};

// Runs kThreads threads, each kRuns inferences on its own inputs; returns the number
// of outputs that differ from `expected` (or failed).
int run_threads(const Net& net, const std::vector<Mat>& inputs, const std::vector<Mat>& expected,
                kestrel::Allocator* shared) {
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      // Two Extractors per thread, alternating, so that sessions also overlap in time.
      kestrel::Extractor ex[2] = {net.create_extractor(), net.create_extractor()};
      for (kestrel::Extractor& e : ex) e.set_num_threads(1);
      (void)shared;  // the Net's option carries it into every Extractor
      for (int r = 0; r < kRuns; ++r) {
        const size_t k = static_cast<size_t>(t * kRuns + r);
        Mat out;
        kestrel::Extractor& e = ex[r % 2];
        if (!e.input("data", inputs[k]).ok() || !e.extract("prob", out).ok() || !same_bits(out, expected[k])) {
          ++bad[t];
        }
      }
      const int n = process_threads();
      int seen = g_max_threads.load();
      while (n > seen && !g_max_threads.compare_exchange_weak(seen, n)) {
      }
    });
  }
  for (std::thread& th : pool) th.join();
  int total = 0;
  for (int b : bad) total += b;
  return total;
}

}  // namespace

int main() {
  const auto t0 = std::chrono::steady_clock::now();
  Net net;
  net.option().num_threads = 1;
  net.set_input_shape("data", kestrel::Shape::make3(kInputSize, kInputSize, 3));
  const std::vector<uint8_t> bytes = kestrel::mobilenet_v1({3, 0}).serialize();
  kestrel::Status s = net.load(bytes.data(), bytes.size());
  if (!s.ok()) {
    std::fprintf(stderr, "load: %s\n", s.message().c_str());
    return 1;
  }
  kestrel::Shape shape;
  if (!net.input_shape("data", &shape).ok()) return 1;

  // Single-threaded reference, one input per (thread, run).
  std::vector<Mat> inputs, expected;
  {
    kestrel::Extractor ex = net.create_extractor();
    ex.set_num_threads(1);
    for (int i = 0; i < kThreads * kRuns; ++i) {
      inputs.push_back(random_mat(shape, static_cast<uint32_t>(1000 + i)));
      Mat out;
      if (!ex.input("data", inputs.back()).ok() || !ex.extract("prob", out).ok()) return 1;
      expected.push_back(out.clone());
    }
  }
  // Different inputs must give different outputs, or the comparison proves little.
  if (same_bits(expected[0], expected[1])) {
    std::fprintf(stderr, "two inputs gave the same output\n");
    return 1;
  }
  const auto t1 = std::chrono::steady_clock::now();

  int failures = 0;
  // TSan starts its background thread at the first thread creation: have it counted.
  std::thread([] {}).join();
  const int before = process_threads();
  const int own = run_threads(net, inputs, expected, nullptr);
  std::printf("own memory: %d threads x %d inferences, %d mismatches\n", kThreads, kRuns, own);
  failures += own;
  const auto t2 = std::chrono::steady_clock::now();

  {
    LockedPool pool;  // outlives the Extractors and the outputs made from it
    net.option().allocator = &pool;
    // Without the Extractors' own pools every feature map goes to the shared pool and
    // back, so the four threads contend for it at every layer.
    net.option().memory = kestrel::MemoryStrategy::kNone;
    const int shared = run_threads(net, inputs, expected, &pool);
    net.option().allocator = nullptr;
    std::printf("shared locked pool: %d threads x %d inferences, %d mismatches (%ld requests, %ld reused)\n",
                kThreads, kRuns, shared, pool.requests(), pool.hits());
    if (pool.in_use() != 0) {
      std::printf("shared locked pool: %zu blocks still in use after the threads ended\n", pool.in_use());
      ++failures;
    }
    failures += shared;
  }
  std::printf("process threads while the workers ran: at most %d (allowed: %d before them + %d workers, no OpenMP team)\n",
              g_max_threads.load(), before, kThreads);
  if (g_max_threads.load() > before + kThreads) {
    std::printf("more threads than %d + %d: OpenMP started a team\n", before, kThreads);
    ++failures;
  }
  const auto t3 = std::chrono::steady_clock::now();
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("time: reference %.1f s, own memory %.1f s, shared pool %.1f s\n", secs(t0, t1), secs(t1, t2),
              secs(t2, t3));
  std::printf("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
