// Allocation-failure injection (issue "Reliability"): every allocation of a
// MobileNet-SSD load from memory plus two inferences is made to fail in turn. The
// failing call must return kOutOfMemory with a message naming what failed, nothing
// may leak, and the next attempt with working memory must give the reference bits.
//
// Its own executable: it replaces the global operator new/delete (all variants) with
// counting versions that share one counter with the kestrel::Allocator handed to the
// Extractors, so "the i-th allocation" counts both kinds. Extractors run with one
// thread (plus a subset with two, whose OpenMP workers must not allocate).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>
#include <atomic>

#include <execinfo.h>
#include <unistd.h>

#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "../mat_util.h"

// ---- counting global allocation ------------------------------------------------------

namespace {

std::atomic<long> g_count{0};        // allocations since the last reset (new + Allocator)
std::atomic<long> g_fail_at{0};      // the allocation number to fail; 0: none
std::atomic<long> g_injected{0};     // failures injected since the last reset
std::atomic<long> g_live{0};         // blocks obtained and not yet returned
std::atomic<long long> g_live_bytes{0};

// Every block carries its size in a header so that live bytes are exact. The header
// is kHeader bytes (or the alignment, if larger) before the pointer handed out.
constexpr size_t kHeader = 16;

bool g_trace = false;  // KESTREL_ALLOC_ONLY set: print where the failure is injected

// Nonzero while the test's own bookkeeping allocates (output vectors): those are not
// the library's and are neither counted nor failed.
thread_local int t_uncounted = 0;
struct Uncounted {
  Uncounted() { ++t_uncounted; }
  ~Uncounted() { --t_uncounted; }
};

bool should_fail() {
  if (t_uncounted) return false;
  const long n = g_count.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n == g_fail_at.load(std::memory_order_relaxed)) {
    g_injected.fetch_add(1, std::memory_order_relaxed);
    if (g_trace) {
      void* frames[64];
      const int depth = backtrace(frames, 64);
      backtrace_symbols_fd(frames, depth, STDERR_FILENO);
    }
    return true;
  }
  return false;
}

void* raw_alloc(size_t size, size_t align) {
  if (should_fail()) return nullptr;
  const size_t head = align > kHeader ? align : kHeader;
  void* base = nullptr;
  if (align > kHeader) {
    const size_t total = (head + size + align - 1) / align * align;
    base = std::aligned_alloc(align, total);
  } else {
    base = std::malloc(head + size);
  }
  if (!base) return nullptr;
  char* p = static_cast<char*>(base) + head;
  std::memcpy(p - sizeof(size_t), &size, sizeof(size_t));
  g_live.fetch_add(1, std::memory_order_relaxed);
  g_live_bytes.fetch_add(static_cast<long long>(size), std::memory_order_relaxed);
  return p;
}

void raw_free(void* ptr, size_t align) {
  if (!ptr) return;
  const size_t head = align > kHeader ? align : kHeader;
  char* p = static_cast<char*>(ptr);
  size_t size = 0;
  std::memcpy(&size, p - sizeof(size_t), sizeof(size_t));
  g_live.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(static_cast<long long>(size), std::memory_order_relaxed);
  std::free(p - head);
}

void* throwing_alloc(size_t size, size_t align) {
  void* p = raw_alloc(size == 0 ? 1 : size, align);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(size_t n) { return throwing_alloc(n, 0); }
void* operator new[](size_t n) { return throwing_alloc(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return throwing_alloc(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return throwing_alloc(n, static_cast<size_t>(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return raw_alloc(n == 0 ? 1 : n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return raw_alloc(n == 0 ? 1 : n, 0); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return raw_alloc(n == 0 ? 1 : n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return raw_alloc(n == 0 ? 1 : n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { raw_free(p, 0); }
void operator delete[](void* p) noexcept { raw_free(p, 0); }
void operator delete(void* p, size_t) noexcept { raw_free(p, 0); }
void operator delete[](void* p, size_t) noexcept { raw_free(p, 0); }
void operator delete(void* p, std::align_val_t a) noexcept { raw_free(p, static_cast<size_t>(a)); }
void operator delete[](void* p, std::align_val_t a) noexcept { raw_free(p, static_cast<size_t>(a)); }
void operator delete(void* p, size_t, std::align_val_t a) noexcept { raw_free(p, static_cast<size_t>(a)); }
void operator delete[](void* p, size_t, std::align_val_t a) noexcept { raw_free(p, static_cast<size_t>(a)); }
void operator delete(void* p, const std::nothrow_t&) noexcept { raw_free(p, 0); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { raw_free(p, 0); }
void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  raw_free(p, static_cast<size_t>(a));
}
void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  raw_free(p, static_cast<size_t>(a));
}

namespace {

using kestrel::ErrorCode;
using kestrel::Mat;
using kestrel::Net;
using kestrel::Status;

// Feature-map memory through the same counter (and the same live count).
class InjectingAllocator final : public kestrel::Allocator {
 public:
  void* allocate(size_t size) override { return raw_alloc(size == 0 ? 1 : size, kestrel::kAlignment); }
  void deallocate(void* p) override { raw_free(p, kestrel::kAlignment); }
};

InjectingAllocator g_allocator;

void arm(long fail_at) {
  g_count = 0;
  g_injected = 0;
  g_fail_at = fail_at;
}

int g_errors = 0;
#define EXPECT(cond, ...)                                    \
  do {                                                       \
    if (!(cond)) {                                           \
      ++g_errors;                                            \
      std::fprintf(stderr, "FAILED %s: ", #cond);            \
      std::fprintf(stderr, __VA_ARGS__);                     \
      std::fprintf(stderr, "\n");                            \
      if (g_errors > 20) std::exit(1);                       \
    }                                                        \
  } while (0)

using kestrel_test::same_bits;

Mat random_mat(const kestrel::Shape& s, uint32_t seed) { return kestrel_test::random_mat_or_abort(s, seed); }

struct Setup {
  const uint8_t* model = nullptr;  // deliberately not 64-byte aligned: load copies it
  size_t model_size = 0;
  std::vector<std::string> outputs;
  Mat inputs[2];
  std::vector<Mat> expected[2];  // per inference, per output
  int threads = 1;
};

// The first failing call of a trial, or ok.
struct Outcome {
  Status status;
  const char* call = "";  // "load", "input", "extract"
  int inference = 0;       // which of the two inferences failed
};

// One inference on `ex`: input, then every output. Outputs go to `got`.
Outcome infer(kestrel::Extractor& ex, const Setup& st, int k, std::vector<Mat>* got) {
  {
    Uncounted test_side;
    got->assign(st.outputs.size(), Mat());
  }
  Status s = ex.input("data", st.inputs[k]);
  if (!s.ok()) return {s, "input"};
  for (size_t o = 0; o < st.outputs.size(); ++o) {
    s = ex.extract(st.outputs[o], (*got)[o]);
    if (!s.ok()) return {s, "extract"};
  }
  return {Status::Ok(), ""};
}

// The counted sequence past load: create an Extractor, two inferences.
Outcome run_inferences(const Net& net, const Setup& st, kestrel::Extractor* keep, bool check_bits) {
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(st.threads);
  std::vector<Mat> got;
  for (int k = 0; k < 2; ++k) {
    Outcome r = infer(ex, st, k, &got);
    if (!r.status.ok()) {
      if (keep) *keep = std::move(ex);
      r.inference = k;
      return r;
    }
    if (check_bits) {
      for (size_t o = 0; o < got.size(); ++o) {
        EXPECT(same_bits(got[o], st.expected[k][o]), "inference %d output '%s' differs from the reference", k,
               st.outputs[o].c_str());
      }
    }
  }
  if (keep) *keep = std::move(ex);
  return {Status::Ok(), ""};
}

// After a failure: the same Extractor, given working memory, repeats the inference
// that failed and gives the reference bits.
void check_recovers(kestrel::Extractor& ex, const Setup& st, long i, int failed) {
  std::vector<Mat> got;
  for (int k = failed; k <= failed; ++k) {
    Outcome r = infer(ex, st, k, &got);
    EXPECT(r.status.ok(), "i=%ld: retry %s failed: %s", i, r.call, r.status.message().c_str());
    if (!r.status.ok()) return;
    for (size_t o = 0; o < got.size(); ++o) {
      EXPECT(same_bits(got[o], st.expected[k][o]), "i=%ld: retry output '%s' of inference %d differs", i,
             st.outputs[o].c_str(), k);
    }
  }
}

// The message says it ran out of memory and names more than the API call: guarded()'s
// bare "Net::load: out of memory" tells the user nothing about what failed.
bool names_something(const std::string& msg) {
  const bool says_oom = msg.find("out of memory") != std::string::npos || msg.find("cannot allocate") != std::string::npos;
  return says_oom && msg != "Net::load: out of memory" && msg != "Extractor::input: out of memory" &&
         msg != "Extractor::extract: out of memory";
}

struct Tally {
  long tried = 0, load_failures = 0, inference_failures = 0;
  long absorbed = 0;  // injected, yet the calls succeeded with exact results
  long retried = 0, fully_checked = 0;  // load phase: reloads, and reloads + inferences
  std::map<std::string, std::string> examples;  // first message per kind
  std::map<std::string, long> kinds;             // how often each kind came up
};

// Bytes and blocks the test's own bookkeeping (Tally) holds: not a leak of the trial.
long g_test_live = 0;
long long g_test_bytes = 0;

void record(Tally& t, const Outcome& r, long i) {
  const long live0 = g_live;
  const long long bytes0 = g_live_bytes;
  EXPECT(r.status.code() == ErrorCode::kOutOfMemory, "i=%ld: %s returned code %d: %s", i, r.call,
         static_cast<int>(r.status.code()), r.status.message().c_str());
  EXPECT(names_something(r.status.message()), "i=%ld: %s message names nothing: '%s'", i, r.call,
         r.status.message().c_str());
  {  // destroyed before the bookkeeping is measured
    // The kind: the message without names and numbers.
    std::string kind = std::string(r.call) + ": ";
    bool quoted = false;
    for (char c : r.status.message()) {
      if (c == '\'') quoted = !quoted;
      if (!quoted && (c < '0' || c > '9')) kind += c;
    }
    if (t.examples.size() < 40 && !t.examples.count(kind)) t.examples[kind] = r.status.message();
    ++t.kinds[kind];
  }
  g_test_live += g_live - live0;
  g_test_bytes += g_live_bytes - bytes0;
}

// Live blocks and bytes the library holds (the test's bookkeeping taken out).
long live_blocks() { return g_live - g_test_live; }
long long live_bytes() { return g_live_bytes - g_test_bytes; }

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  // KESTREL_ALLOC_STRIDE=k tries only every k-th injection point (for slow sanitizer
  // builds); the default 1 tries them all.
  long stride = 1;
  if (const char* e = std::getenv("KESTREL_ALLOC_STRIDE")) stride = std::max(1L, std::atol(e));
  // KESTREL_ALLOC_ONLY=i tries only injection point i (of the whole sequence) and
  // prints the call stack of the failed allocation: for diagnosing one point.
  long only = 0;
  if (const char* e = std::getenv("KESTREL_ALLOC_ONLY")) only = std::atol(e);
  (void)argc;
  (void)argv;

  Setup st;
  // The model in memory twice: 64-byte aligned (used in place: the sweep below) and
  // one byte off (load copies it: one extra trial fails that copy).
  std::vector<uint8_t> storage, storage_unaligned;
  const uint8_t* unaligned = nullptr;
  {
    const std::vector<uint8_t> bytes = kestrel::mobilenet_ssd({7, 0}).serialize();
    for (int off : {0, 1}) {
      std::vector<uint8_t>& v = off ? storage_unaligned : storage;
      v.resize(bytes.size() + kestrel::kAlignment + 1);
      const uintptr_t base = reinterpret_cast<uintptr_t>(v.data());
      const size_t skew = (kestrel::kAlignment - base % kestrel::kAlignment) % kestrel::kAlignment + off;
      std::memcpy(v.data() + skew, bytes.data(), bytes.size());
      (off ? unaligned : st.model) = v.data() + skew;
    }
    st.model_size = bytes.size();
  }

  // Reference: a plain load and two inferences; also warms every one-time allocation
  // (function statics, OpenMP's runtime) so that the counted sequence repeats exactly.
  {
    Net net;
    net.option().allocator = &g_allocator;
    Status s = net.load(st.model, st.model_size);
    if (!s.ok()) {
      std::fprintf(stderr, "reference load failed: %s\n", s.message().c_str());
      return 1;
    }
    st.outputs = net.output_names();
    kestrel::Shape shape;
    if (!net.input_shape("data", &shape).ok()) return 1;
    st.inputs[0] = random_mat(shape, 11);
    st.inputs[1] = random_mat(shape, 12);
    kestrel::Extractor ex = net.create_extractor();
    ex.set_num_threads(1);
    for (int k = 0; k < 2; ++k) {
      Outcome r = infer(ex, st, k, &st.expected[k]);
      if (!r.status.ok()) {
        std::fprintf(stderr, "reference inference failed: %s\n", r.status.message().c_str());
        return 1;
      }
      for (Mat& m : st.expected[k]) m = m.clone(kestrel::default_allocator());
    }
    for (int threads : {1, 2}) {  // warm a team of two as well
      kestrel::Extractor ex2 = net.create_extractor();
      ex2.set_num_threads(threads);
      std::vector<Mat> got;
      (void)infer(ex2, st, 0, &got);
    }
  }

  // Count N: load + create extractor + two inferences, nothing failing.
  long n_load = 0, n_total = 0;
  {
    const long live0 = g_live;
    arm(0);
    {
      Net net;
      net.option().allocator = &g_allocator;
      Status s = net.load(st.model, st.model_size);
      n_load = g_count;
      EXPECT(s.ok(), "counting load: %s", s.message().c_str());
      Outcome r = run_inferences(net, st, nullptr, true);
      EXPECT(r.status.ok(), "counting run: %s", r.status.message().c_str());
      n_total = g_count;
    }
    EXPECT(g_live == live0, "counting run leaked %ld blocks", long(g_live - live0));
  }
  const long n_infer = n_total - n_load;
  g_trace = only != 0;
  std::printf("alloc_failure: MobileNet-SSD 300x300, N = %ld allocations (load %ld, create_extractor + 2 inferences %ld)\n",
              n_total, n_load, n_infer);
  std::fflush(stdout);

  Tally tally;
  // Load phase: fail the i-th allocation of Net::load. The same Net then loads with
  // working memory (a failed load must leave it usable), and every k-th point (and the
  // last) also runs and checks the two inferences.
  // Every injection point is tried; the successful reload after it (a full load,
  // the bulk of the time) runs at every retry_every-th point and the two inferences
  // after it at every full_check_every-th point, both also at the last one.
  const long retry_every = 8, full_check_every = 256;
  {
    // The unaligned buffer: allocation 2 is its copy (1 is the Net's state).
    const long live0 = live_blocks();
    const long long bytes0 = live_bytes();
    {
      Net net;
      arm(2);
      Status s = net.load(unaligned, st.model_size);
      arm(0);
      EXPECT(s.code() == ErrorCode::kOutOfMemory && names_something(s.message()),
             "unaligned buffer, copy failing: %s", s.message().c_str());
      if (!s.ok()) {
        const Outcome failed{std::move(s), "load"};
        record(tally, failed, 2);
        ++tally.tried;
        ++tally.load_failures;
      }
      s = net.load(unaligned, st.model_size);
      EXPECT(s.ok(), "unaligned buffer, retry: %s", s.message().c_str());
    }
    EXPECT(live_blocks() == live0 && live_bytes() == bytes0, "unaligned buffer: %ld blocks leaked",
           live_blocks() - live0);
  }
  const auto t_load = std::chrono::steady_clock::now();
  for (long i = 1; i <= n_load; i += stride) {
    if (only && i != only) continue;
    const long live0 = live_blocks();
    const long long bytes0 = live_bytes();
    {
      Net net;
      net.option().allocator = &g_allocator;
      arm(i);
      Status s = net.load(st.model, st.model_size);
      const long injected = g_injected;
      arm(0);
      ++tally.tried;
      EXPECT(injected == 1, "i=%ld: the failure was not injected during load (sequence not deterministic?)", i);
      if (s.ok()) {
        // A failure the library absorbed (std::stable_sort falls back to an in-place
        // sort when its buffer cannot be had): fine if the results are still exact.
        ++tally.absorbed;
        Outcome r = run_inferences(net, st, nullptr, true);
        EXPECT(r.status.ok(), "i=%ld: inference after an absorbed failure: %s", i, r.status.message().c_str());
      } else {
        ++tally.load_failures;
        const Outcome failed{std::move(s), "load"};  // moved: no allocation outside the trial
        record(tally, failed, i);
        EXPECT(net.empty(), "i=%ld: a failed load left a model", i);
      }
      if (i % retry_every == 0 || i == n_load) {
        ++tally.retried;
        s = net.load(st.model, st.model_size);
        EXPECT(s.ok(), "i=%ld: load with working memory after a failure: %s", i, s.message().c_str());
        if (s.ok() && (i % full_check_every == 0 || i == n_load)) {
          ++tally.fully_checked;
          Outcome r = run_inferences(net, st, nullptr, true);
          EXPECT(r.status.ok(), "i=%ld: inference after a failed load: %s", i, r.status.message().c_str());
        }
      }
    }
    EXPECT(live_blocks() == live0 && live_bytes() == bytes0, "i=%ld (load): %ld blocks / %lld bytes leaked", i,
           live_blocks() - live0, live_bytes() - bytes0);
  }
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  // Inference phase: the Net is immutable and its load's allocations come first, so
  // failing the (n_load + j)-th allocation of the whole sequence is failing the j-th
  // after a load; one loaded Net serves every point. Every point retries on the same
  // Extractor with working memory and checks the bits.
  const auto t_inf = std::chrono::steady_clock::now();
  for (int threads : {1, 2}) {
    st.threads = threads;
    Net net;
    net.option().allocator = &g_allocator;
    if (!net.load(st.model, st.model_size).ok()) return 1;
    long n_run = n_infer;
    if (threads != 1) {  // the count with a team of two (the per-thread scratch differs)
      arm(0);
      Outcome r = run_inferences(net, st, nullptr, true);
      EXPECT(r.status.ok(), "counting run with %d threads: %s", threads, r.status.message().c_str());
      n_run = g_count;
      std::printf("with %d threads: %ld allocations for create_extractor + 2 inferences\n", threads, n_run);
    }
    // Two threads: a subset (every 8th point) checks that OpenMP workers do not allocate.
    const long step = threads == 1 ? stride : stride * 8;
    for (long j = 1; j <= n_run; j += step) {
      const long i = n_load + j;
      if (only && i != only) continue;
      const long live0 = live_blocks();
      const long long bytes0 = live_bytes();
      {
        kestrel::Extractor ex = net.create_extractor();  // replaced below; not counted
        arm(j);
        Outcome r = run_inferences(net, st, &ex, true);
        const long injected = g_injected;
        arm(0);
        ++tally.tried;
        EXPECT(injected == 1, "i=%ld (%d threads): the failure was not injected during inference", i, threads);
        if (r.status.ok()) {
          ++tally.absorbed;  // and run_inferences() checked the bits
        } else {
          ++tally.inference_failures;
          record(tally, r, i);
        }
        // If create_extractor() itself failed, its Extractor reports that on every call
        // (net.h); the retry then starts a new one, as a user would.
        if (r.status.message().find("could not be created") != std::string::npos) ex = net.create_extractor();
        check_recovers(ex, st, i, r.inference);
      }
      EXPECT(live_blocks() == live0 && live_bytes() == bytes0,
             "i=%ld (inference, %d threads): %ld blocks / %lld bytes leaked", i, threads, live_blocks() - live0,
             live_bytes() - bytes0);
    }
  }
  const double inf_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_inf).count();

  std::printf("injection points tried: %ld (stride %ld): load phase %ld + 1 (unaligned copy), inference phase %ld "
              "with 1 thread + every 8th with 2 threads\n",
              tally.tried, stride, n_load, n_infer);
  std::printf("load phase: reload with working memory after %ld points, plus 2 inferences compared bit for bit after "
              "%ld; inference phase: the failed inference repeated and compared bit for bit after every point\n",
              tally.retried, tally.fully_checked);
  std::printf("first failing call returned kOutOfMemory: load %ld, inference %ld; failure absorbed with exact "
              "results: %ld\n", tally.load_failures, tally.inference_failures, tally.absorbed);
  std::printf("messages by kind (count, first example):\n");
  for (const auto& [kind, msg] : tally.examples) std::printf("  %5ld  %s\n", tally.kinds[kind], msg.c_str());
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("time: load phase %.1f s, inference phase %.1f s, total %.1f s\n", load_s, inf_s, total_s);
  std::printf("%s (%d errors)\n", g_errors ? "FAIL" : "PASS", g_errors);
  return g_errors ? 1 : 0;
}
