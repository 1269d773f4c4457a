// kestrel-bench: latency and memory of a .kst model on seeded random input (or inputs
// read from .npy files, so that peers can be timed on the same data).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kestrel/net.h"
#include "npy.h"

namespace {

struct Args {
  std::string model;
  int threads = 1;
  int loops = 10;
  int warmup = 2;
  bool light = true;
  kestrel::MemoryStrategy memory = kestrel::MemoryStrategy::kPool;
  kestrel::KernelSet kernels = kestrel::KernelSet::kFast;
  std::map<std::string, std::string> npy_inputs;  // input name -> .npy path
  std::string json;                               // write the results here too
};

const char* kUsage =
    "usage: kestrel-bench MODEL.kst [--threads N] [--loops N] [--warmup N]\n"
    "                     [--light on|off] [--memory none|pool|plan] [--kernels ref|fast]\n"
    "                     [--input NAME=FILE.npy ...] [--json OUT.json]\n"
    "Inputs not given as .npy are seeded uniform random in [-1, 1]. Latency is the wall\n"
    "time of input + extract of every output, per inference, after the warm-up runs.\n";

bool parse(int argc, char** argv, Args* a) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) return false;
  a->model = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (f == "--threads") {
      a->threads = std::atoi(v.c_str());
    } else if (f == "--loops") {
      a->loops = std::max(1, std::atoi(v.c_str()));
    } else if (f == "--warmup") {
      a->warmup = std::max(0, std::atoi(v.c_str()));
    } else if (f == "--light" && (v == "on" || v == "off")) {
      a->light = v == "on";
    } else if (f == "--memory" && v == "none") {
      a->memory = kestrel::MemoryStrategy::kNone;
    } else if (f == "--memory" && v == "pool") {
      a->memory = kestrel::MemoryStrategy::kPool;
    } else if (f == "--memory" && v == "plan") {
      a->memory = kestrel::MemoryStrategy::kPlan;
    } else if (f == "--input" && v.find('=') != std::string::npos) {
      a->npy_inputs[v.substr(0, v.find('='))] = v.substr(v.find('=') + 1);
    } else if (f == "--json") {
      a->json = v;
    } else if (f == "--kernels" && (v == "ref" || v == "fast")) {
      a->kernels = v == "ref" ? kestrel::KernelSet::kReference : kestrel::KernelSet::kFast;
    } else {
      std::fprintf(stderr, "kestrel-bench: bad option %s %s\n", f.c_str(), v.c_str());
      return false;
    }
  }
  return true;
}

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  kestrel::Net net;
  net.option().kernels = a.kernels;
  net.option().num_threads = a.threads;
  net.option().light_mode = a.light;
  net.option().memory = a.memory;
  kestrel::Status s = net.load(a.model);
  if (!s.ok()) {
    std::fprintf(stderr, "kestrel-bench: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<kestrel::Mat> inputs;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const std::string& name : net.input_names()) {
    kestrel::Shape shape;
    s = net.input_shape(name, &shape);
    kestrel::Mat m;
    if (!s.ok() || !m.create(shape)) {
      std::fprintf(stderr, "kestrel-bench: cannot create input '%s'\n", name.c_str());
      return 1;
    }
    const size_t plane = size_t(m.w) * m.h * m.d;
    const auto npy = a.npy_inputs.find(name);
    if (npy != a.npy_inputs.end()) {
      kt::NpyArray arr;
      const std::string why = kt::read_npy(npy->second, &arr);
      if (!why.empty() || arr.data.size() != plane * m.c) {
        std::fprintf(stderr, "kestrel-bench: input '%s': %s\n", name.c_str(),
                     why.empty() ? "the .npy holds a different number of values than the input's shape" : why.c_str());
        return 1;
      }
      for (int q = 0; q < m.c; ++q) std::memcpy(m.channel(q), arr.data.data() + q * plane, plane * sizeof(float));
      a.npy_inputs.erase(npy);
    } else {
      for (int q = 0; q < m.c; ++q) {
        float* p = m.channel(q);
        for (size_t i = 0; i < plane; ++i) p[i] = dist(rng);
      }
    }
    inputs.push_back(m);
  }
  if (!a.npy_inputs.empty()) {
    std::fprintf(stderr, "kestrel-bench: the model has no input '%s'\n", a.npy_inputs.begin()->first.c_str());
    return 1;
  }
  const std::vector<std::string> in_names = net.input_names();
  const std::vector<std::string> out_names = net.output_names();

  kestrel::Extractor ex = net.create_extractor();
  std::vector<kestrel::Mat> outs(out_names.size());
  auto infer = [&]() -> kestrel::Status {
    for (size_t i = 0; i < in_names.size(); ++i) {
      kestrel::Status st = ex.input(in_names[i], inputs[i]);
      if (!st.ok()) return st;
    }
    for (size_t i = 0; i < out_names.size(); ++i) {
      kestrel::Status st = ex.extract(out_names[i], outs[i]);
      if (!st.ok()) return st;
    }
    return kestrel::Status::Ok();
  };
  for (int i = 0; i < a.warmup; ++i) {
    if (!(s = infer()).ok()) {
      std::fprintf(stderr, "kestrel-bench: %s\n", s.message().c_str());
      return 1;
    }
  }
  ex.reset_memory_stats();
  std::vector<double> ms;
  for (int i = 0; i < a.loops; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    s = infer();
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      std::fprintf(stderr, "kestrel-bench: %s\n", s.message().c_str());
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const kestrel::MemoryStats st = ex.memory_stats();
  std::sort(ms.begin(), ms.end());
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const char* mem = a.memory == kestrel::MemoryStrategy::kNone   ? "none"
                    : a.memory == kestrel::MemoryStrategy::kPool ? "pool"
                                                                 : "plan";
  std::printf("model            %s\n", a.model.c_str());
  std::printf("config           threads=%d light=%s memory=%s kernels=%s loops=%d warmup=%d\n", a.threads,
              a.light ? "on" : "off", mem, a.kernels == kestrel::KernelSet::kFast ? "fast" : "ref", a.loops,
              a.warmup);
  std::printf("latency ms       min %.2f  median %.2f  max %.2f\n", ms.front(), ms[ms.size() / 2], ms.back());
  std::printf("feature maps     peak held %.2f MiB  peak in use %.2f MiB\n", mib(st.peak_held_bytes),
              mib(st.peak_in_use_bytes));
  std::printf("static plan      arena %.2f MiB  lower bound %.2f MiB\n", mib(st.planned_bytes),
              mib(st.lower_bound_bytes));
  std::printf("allocations      %.2f system allocations per inference (%zu pool hits)\n",
              static_cast<double>(st.system_allocations) / a.loops, st.pool_hits);
  std::printf("weights          %.2f MiB\n", mib(net.weight_bytes()));
  std::printf("peak RSS         %.2f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  if (!a.json.empty()) {
    std::ofstream j(a.json);
    j << "{\"model\": \"" << a.model << "\", \"threads\": " << a.threads << ", \"kernels\": \""
      << (a.kernels == kestrel::KernelSet::kFast ? "fast" : "ref") << "\", \"memory\": \"" << mem
      << "\", \"light\": " << (a.light ? "true" : "false") << ", \"loops\": " << a.loops
      << ", \"min_ms\": " << ms.front() << ", \"median_ms\": " << ms[ms.size() / 2] << ", \"max_ms\": " << ms.back()
      << ", \"peak_held_bytes\": " << st.peak_held_bytes << ", \"peak_in_use_bytes\": " << st.peak_in_use_bytes
      << ", \"system_allocations_per_inference\": " << static_cast<double>(st.system_allocations) / a.loops
      << ", \"weight_bytes\": " << net.weight_bytes() << ", \"peak_rss_kib\": " << ru.ru_maxrss << "}\n";
    if (!j) {
      std::fprintf(stderr, "kestrel-bench: cannot write %s\n", a.json.c_str());
      return 1;
    }
  }
  return 0;
}
