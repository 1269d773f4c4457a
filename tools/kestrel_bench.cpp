// kestrel-bench: latency and memory of a .kst model on seeded random input (or inputs
// read from .npy files, so that peers can be timed on the same data).
#include <sys/resource.h>
#include <unistd.h>

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

#include "fma_peak.h"
#include "kestrel/net.h"
#include "npy.h"
#include "precision_arg.h"

// --insn-marks: bench/arm/insn_count.py counts the guest instructions between calls of
// this function under qemu-aarch64 (its plugin's mark=kestrel_insn_mark), which the
// bench makes once before each inference and once after every layer. noinline and the
// asm's memory clobber keep every call, in its place; without --insn-marks nothing calls
// it and no observer is installed, so the counted code is the plain inference.
extern "C" __attribute__((noinline)) void kestrel_insn_mark(int step) { asm volatile("" : : "r"(step) : "memory"); }

namespace {

// Every call goes through this pointer: a direct call with a constant argument lets the
// compiler call a clone (kestrel_insn_mark.constprop.0) that the plugin does not watch.
void (*volatile insn_mark)(int) = kestrel_insn_mark;

struct Args {
  std::string model;
  int threads = 1;
  int loops = 10;
  int warmup = 2;
  bool light = true;
  bool fuse = true;
  bool blocked = true;
  bool int8_maps = true;
  kestrel::MemoryStrategy memory = kestrel::MemoryStrategy::kPool;
  kestrel::KernelSet kernels = kestrel::KernelSet::kFast;
  kestrel::Option precision;  // precision and layer_precision only
  std::map<std::string, std::string> npy_inputs;  // input name -> .npy path
  std::map<std::string, kestrel::Shape> shapes;   // --shape overrides
  bool profile = false;
  bool insn_marks = false;
  std::string json;          // write the results here too
  std::string memory_trace;  // CSV of bytes after every layer of 3 fresh inferences
  bool against = false;      // --against: a second Net at against_precision, interleaved
  kestrel::Precision against_precision = kestrel::Precision::kFp32;
};

const char* kUsage =
    "usage: kestrel-bench MODEL.kst [--threads N] [--loops N] [--warmup N]\n"
    "                     [--light on|off] [--memory none|pool|plan] [--kernels ref|fast] [--fuse on|off]\n"
    "                     [--blocked on|off] [--int8-maps on|off] [--precision fp32|fp16|bf16|int8]\n"
    "                     [--layer-precision NAME=fp32|fp16|bf16|int8 ...]\n"
    "                     [--shape NAME=C,H,W ...] [--input NAME=FILE.npy ...] [--profile]\n"
    "                     [--json OUT.json] [--memory-trace OUT.csv] [--insn-marks]\n"
    "                     [--against fp32|fp16|bf16|int8]\n"
    "Inputs not given as .npy are seeded uniform random in [-1, 1]. Latency is the wall\n"
    "time of input + extract of every output, per inference, after the warm-up runs.\n"
    "--shape prepares an input for another shape (C,H,W or 1,C,H,W). --profile then runs\n"
    "the loops again with a per-layer timer: median time per layer and per layer type,\n"
    "GFLOP/s and % of the measured FMA peak at this thread count. --memory-trace records\n"
    "feature-map bytes in use and held after every layer of three inferences of a fresh\n"
    "Extractor (the paper's Figure 7). --insn-marks calls kestrel_insn_mark() before each\n"
    "inference and after every layer of the warm-up and timed loops, and lists the layers\n"
    "in the order of their marks (bench/arm/insn_count.py counts instructions between them).\n"
    "--against P loads the model a second time at precision P (no --layer-precision) and\n"
    "times the two in alternation, one inference each (A B, then B A), so that the host's\n"
    "slow spells fall on both alike: each one's median and the median of the pairs' B / A.\n";

// "C,H,W" or "1,C,H,W" (the batch of one that kestrel-convert's --input-shape takes).
bool parse_shape(const std::string& v, kestrel::Shape* shape) {
  std::vector<int> dims;
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t comma = std::min(v.find(',', pos), v.size());
    const std::string item = v.substr(pos, comma - pos);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 9) return false;
    dims.push_back(std::atoi(item.c_str()));
    pos = comma + 1;
  }
  if (dims.size() == 4 && dims[0] == 1) dims.erase(dims.begin());
  if (dims.size() != 3 || dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0) return false;
  *shape = kestrel::Shape::make3(dims[2], dims[1], dims[0]);
  return true;
}

bool parse(int argc, char** argv, Args* a) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) return false;
  a->model = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--profile") {
      a->profile = true;
      continue;
    }
    if (f == "--insn-marks") {
      a->insn_marks = true;
      continue;
    }
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
    } else if (f == "--fuse" && (v == "on" || v == "off")) {
      a->fuse = v == "on";
    } else if (f == "--blocked" && (v == "on" || v == "off")) {
      a->blocked = v == "on";
    } else if (f == "--int8-maps" && (v == "on" || v == "off")) {
      a->int8_maps = v == "on";
    } else if (f == "--memory" && v == "none") {
      a->memory = kestrel::MemoryStrategy::kNone;
    } else if (f == "--memory" && v == "pool") {
      a->memory = kestrel::MemoryStrategy::kPool;
    } else if (f == "--memory" && v == "plan") {
      a->memory = kestrel::MemoryStrategy::kPlan;
    } else if (f == "--input" && v.find('=') != std::string::npos) {
      a->npy_inputs[v.substr(0, v.find('='))] = v.substr(v.find('=') + 1);
    } else if (f == "--shape" && v.find('=') != std::string::npos &&
               parse_shape(v.substr(v.find('=') + 1), &a->shapes[v.substr(0, v.find('='))])) {
    } else if (f == "--json") {
      a->json = v;
    } else if (f == "--memory-trace") {
      a->memory_trace = v;
    } else if (f == "--kernels" && (v == "ref" || v == "fast")) {
      a->kernels = v == "ref" ? kestrel::KernelSet::kReference : kestrel::KernelSet::kFast;
    } else if (f == "--precision" && kestrel_tools::parse_precision(v, &a->precision.precision)) {
    } else if (f == "--layer-precision" && kestrel_tools::parse_layer_precision(v, &a->precision)) {
    } else if (f == "--against" && kestrel_tools::parse_precision(v, &a->against_precision)) {
      a->against = true;
    } else {
      std::fprintf(stderr, "kestrel-bench: bad option %s %s\n", f.c_str(), v.c_str());
      return false;
    }
  }
  return true;
}

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Per-layer wall time between observer callbacks: each layer's time runs from the
// previous layer's end (or the start of the inference) to its own end.
struct LayerTimes {
  std::vector<std::string> name, type, kernel;
  std::vector<double> macs;
  std::vector<std::vector<double>> ms;  // per layer, one entry per inference
  std::chrono::steady_clock::time_point last;
};

// The layers in the order their marks come in one inference (--insn-marks).
struct MarkedLayer {
  int index;
  std::string name, type, kernel;
  double macs;
};

// Whitespace and quotes in names would break the JSON; model names are identifiers.
std::string json_str(const std::string& v) {
  std::string o = "\"";
  for (char c : v) o += (c == '"' || c == '\\') ? '_' : c;
  return o + "\"";
}

// The process's resident set now (VmRSS), in KiB; 0 where /proc is absent.
long resident_kib() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(f >> pages_total >> pages_resident)) return 0;
  return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

class Bench {
 public:
  explicit Bench(const Args& a) : a_(a) {}

  bool load() {
    net_.option().kernels = a_.kernels;
    net_.option().precision = a_.precision.precision;
    net_.option().layer_precision = a_.precision.layer_precision;
    net_.option().num_threads = a_.threads;
    net_.option().light_mode = a_.light;
    net_.option().fuse_layers = a_.fuse;
    net_.option().blocked_layout = a_.blocked;
    net_.option().int8_maps = a_.int8_maps;
    net_.option().memory = a_.memory;
    for (const auto& [name, shape] : a_.shapes) net_.set_input_shape(name, shape);
    const auto t0 = std::chrono::steady_clock::now();
    kestrel::Status s = net_.load(a_.model);
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rss_after_load_kib_ = resident_kib();
    if (!s.ok()) return fail(s.message());
    return make_inputs();
  }

  bool infer(kestrel::Extractor& ex) {
    for (size_t i = 0; i < in_names_.size(); ++i) {
      kestrel::Status st = ex.input(in_names_[i], inputs_[i]);
      if (!st.ok()) return fail(st.message());
    }
    for (size_t i = 0; i < out_names_.size(); ++i) {
      kestrel::Status st = ex.extract(out_names_[i], outs_[i]);
      if (!st.ok()) return fail(st.message());
    }
    return true;
  }

  // Warm-up, then the timed loops: fills ms_ and the memory stats.
  bool time_loops() {
    kestrel::Extractor ex = net_.create_extractor();
    if (a_.insn_marks) install_insn_marks(ex);
    for (int i = 0; i < a_.warmup; ++i) {
      if (a_.insn_marks) insn_mark(-1);
      if (!infer(ex)) return false;
      marks_listed_ = true;
    }
    ex.reset_memory_stats();
    for (int i = 0; i < a_.loops; ++i) {
      if (a_.insn_marks) insn_mark(-1);
      const auto t0 = std::chrono::steady_clock::now();
      if (!infer(ex)) return false;
      marks_listed_ = true;
      ms_.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    stats_ = ex.memory_stats();
    std::sort(ms_.begin(), ms_.end());
    return true;
  }

  // One inference's wall time in ms, or a negative value on failure.
  double timed_inference(kestrel::Extractor& ex) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!infer(ex)) return -1;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  kestrel::Extractor create_extractor() const { return net_.create_extractor(); }

  // The same loops again, with an observer timing every layer.
  bool profile_loops() {
    kestrel::Extractor ex = net_.create_extractor();
    LayerTimes& t = times_;
    int inference = -1;
    ex.set_observer([&](const kestrel::LayerEvent& ev) {
      const auto now = std::chrono::steady_clock::now();
      const size_t i = static_cast<size_t>(ev.layer_index);
      if (t.ms.size() <= i) {
        t.ms.resize(i + 1);
        t.name.resize(i + 1);
        t.type.resize(i + 1);
        t.kernel.resize(i + 1);
        t.macs.resize(i + 1);
      }
      if (inference >= 0) t.ms[i].push_back(std::chrono::duration<double, std::milli>(now - t.last).count());
      t.name[i] = ev.layer_name;
      t.type[i] = ev.layer_type;
      t.kernel[i] = *ev.kernel ? ev.kernel : "reference";
      t.macs[i] = ev.multiply_adds;
      t.last = std::chrono::steady_clock::now();  // the observer's own time is not charged
    });
    for (int i = -a_.warmup; i < a_.loops; ++i) {
      inference = i;
      t.last = std::chrono::steady_clock::now();
      if (!infer(ex)) return false;
    }
    peak_gflops_ = kestrel::bench::fma_peak_gflops(kestrel::kernels::active_isa(), a_.threads);
    return true;
  }

  // A mark after every layer; the first inference's layers are kept for the listing.
  void install_insn_marks(kestrel::Extractor& ex) {
    ex.set_observer([this](const kestrel::LayerEvent& ev) {
      insn_mark(ev.layer_index);
      if (marks_listed_) return;
      marked_.push_back({ev.layer_index, ev.layer_name, ev.layer_type, *ev.kernel ? ev.kernel : "reference",
                         ev.multiply_adds});
    });
  }

  // Three inferences of a fresh Extractor, bytes after every layer.
  bool trace_memory() {
    std::ofstream f(a_.memory_trace);
    f << "inference,step,layer,type,in_use_bytes,held_bytes\n";
    kestrel::Extractor ex = net_.create_extractor();
    int inference = 0, step = 0;
    ex.set_observer([&](const kestrel::LayerEvent& ev) {
      f << inference << ',' << step++ << ',' << ev.layer_name << ',' << ev.layer_type << ',' << ev.in_use_bytes << ','
        << ev.held_bytes << '\n';
    });
    for (inference = 0; inference < 3; ++inference) {
      if (!infer(ex)) return false;
    }
    if (!f) return fail("cannot write " + a_.memory_trace);
    return true;
  }

  void print() const;
  bool write_json() const;

 private:
  bool fail(const std::string& why) {
    std::fprintf(stderr, "kestrel-bench: %s\n", why.c_str());
    return false;
  }

  bool make_inputs();
  std::string config() const;

  Args a_;
  kestrel::Net net_;
  std::vector<std::string> in_names_, out_names_;
  std::vector<kestrel::Mat> inputs_, outs_;
  std::vector<double> ms_;
  double load_ms_ = 0;
  long rss_after_load_kib_ = 0;
  kestrel::MemoryStats stats_;
  LayerTimes times_;
  double peak_gflops_ = 0;
  std::vector<MarkedLayer> marked_;
  bool marks_listed_ = false;
};

bool Bench::make_inputs() {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  in_names_ = net_.input_names();
  out_names_ = net_.output_names();
  outs_.resize(out_names_.size());
  std::map<std::string, std::string> npy = a_.npy_inputs;
  for (const std::string& name : in_names_) {
    kestrel::Shape shape;
    kestrel::Status s = net_.input_shape(name, &shape);
    kestrel::Mat m;
    if (!s.ok() || !m.create(shape)) return fail("cannot create input '" + name + "'");
    const size_t plane = size_t(m.w) * m.h * m.d;
    const auto it = npy.find(name);
    if (it != npy.end()) {
      kt::NpyArray arr;
      const std::string why = kt::read_npy(it->second, &arr);
      if (!why.empty() || arr.data.size() != plane * m.c) {
        return fail("input '" + name + "': " +
                    (why.empty() ? "the .npy holds a different number of values than the input's shape" : why));
      }
      for (int q = 0; q < m.c; ++q) std::memcpy(m.channel(q), arr.data.data() + q * plane, plane * sizeof(float));
      npy.erase(it);
    } else {
      for (int q = 0; q < m.c; ++q) {
        float* p = m.channel(q);
        for (size_t i = 0; i < plane; ++i) p[i] = dist(rng);
      }
    }
    inputs_.push_back(m);
  }
  if (!npy.empty()) return fail("the model has no input '" + npy.begin()->first + "'");
  return true;
}

const char* memory_name(kestrel::MemoryStrategy m) {
  return m == kestrel::MemoryStrategy::kNone ? "none" : m == kestrel::MemoryStrategy::kPool ? "pool" : "plan";
}

std::string Bench::config() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "threads=%d light=%s fuse=%s blocked=%s int8_maps=%s memory=%s kernels=%s isa=%s features=%s loops=%d "
                "warmup=%d",
                a_.threads, a_.light ? "on" : "off", a_.fuse ? "on" : "off", a_.blocked ? "on" : "off",
                a_.int8_maps ? "on" : "off", memory_name(a_.memory),
                a_.kernels == kestrel::KernelSet::kFast ? "fast" : "ref",
                a_.kernels == kestrel::KernelSet::kFast ? kestrel::kernels::isa_name(kestrel::kernels::active_isa())
                                                        : "ref",
                kestrel::kernels::active_features()[0] ? kestrel::kernels::active_features() : "none", a_.loops,
                a_.warmup);
  return buf;
}

struct rusage self_usage() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru;
}

void Bench::print() const {
  const kestrel::MemoryStats& st = stats_;
  std::printf("model            %s\n", a_.model.c_str());
  std::printf("config           %s\n", config().c_str());
  std::printf("latency ms       min %.2f  median %.2f  max %.2f\n", ms_.front(), ms_[ms_.size() / 2], ms_.back());
  std::printf("feature maps     peak held %.2f MiB  peak in use %.2f MiB\n", mib(st.peak_held_bytes),
              mib(st.peak_in_use_bytes));
  std::printf("static plan      arena %.2f MiB  lower bound %.2f MiB\n", mib(st.planned_bytes),
              mib(st.lower_bound_bytes));
  std::printf("allocations      %.2f system allocations per inference (%zu pool hits)\n",
              static_cast<double>(st.system_allocations) / a_.loops, st.pool_hits);
  std::printf("weights          %.2f MiB held (model file: %.2f MiB)\n", mib(net_.weight_bytes()),
              mib(net_.model_weight_bytes()));
  std::printf("load             %.1f ms, RSS after load %.2f MiB\n", load_ms_,
              static_cast<double>(rss_after_load_kib_) / 1024.0);
  std::printf("peak RSS         %.2f MiB\n", static_cast<double>(self_usage().ru_maxrss) / 1024.0);
  if (a_.insn_marks) {
    // Tab-separated, the name last: insn_count.py maps the k-th mark after an
    // inference's first to the k-th line.
    std::printf("insn-marks       %d inferences: a mark before each, then one after each of these %zu layers\n",
                a_.warmup + a_.loops, marked_.size());
    for (size_t k = 0; k < marked_.size(); ++k) {
      const MarkedLayer& m = marked_[k];
      std::printf("insn-mark-layer\t%zu\t%d\t%s\t%s\t%.0f\t%s\n", k, m.index, m.type.c_str(), m.kernel.c_str(), m.macs,
                  m.name.c_str());
    }
  }
  if (!a_.profile) return;
  const LayerTimes& t = times_;
  double total = 0;
  for (const auto& v : t.ms) total += median(v);
  std::printf("\nper layer (median of %d profiled runs; FMA peak %.1f GFLOP/s at %d thread%s)\n", a_.loops,
              peak_gflops_, a_.threads, a_.threads == 1 ? "" : "s");
  std::printf("%4s  %-24s %-14s %-28s %8s %6s %8s %8s %6s\n", "#", "layer", "type", "kernel", "ms", "%time", "MFLOP",
              "GFLOP/s", "%peak");
  std::map<std::string, std::pair<double, int>> by_type;
  for (size_t i = 0; i < t.ms.size(); ++i) {
    if (t.ms[i].empty()) continue;  // not run for these outputs
    const double m = median(t.ms[i]);
    by_type[t.type[i]].first += m;
    by_type[t.type[i]].second += 1;
    // Layer names keep their tail: exporters' names differ at the end.
    const std::string& nm = t.name[i];
    const std::string shown = nm.size() > 24 ? nm.substr(nm.size() - 24) : nm;
    std::printf("%4zu  %-24s %-14.14s %-28.28s %8.3f %6.1f", i, shown.c_str(), t.type[i].c_str(), t.kernel[i].c_str(), m,
                100 * m / total);
    if (t.macs[i] > 0) {
      const double gflops = 2 * t.macs[i] / (m * 1e6);
      std::printf(" %8.1f %8.1f %6.1f\n", 2 * t.macs[i] * 1e-6, gflops,
                  peak_gflops_ > 0 ? 100 * gflops / peak_gflops_ : 0.0);
    } else {
      std::printf("\n");
    }
  }
  std::printf("\nper layer type (sum of layer medians %.3f ms)\n", total);
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [type, v] : by_type) order.push_back({v.first, type});
  std::sort(order.rbegin(), order.rend());
  for (const auto& [ms, type] : order) {
    std::printf("  %-18s %3d layers %9.3f ms %6.1f%%\n", type.c_str(), by_type.at(type).second, ms, 100 * ms / total);
  }
}

bool Bench::write_json() const {
  std::ofstream j(a_.json);
  j.precision(12);  // multiply-adds and byte counts stay exact
  const kestrel::MemoryStats& st = stats_;
  j << "{\"model\": " << json_str(a_.model) << ", \"threads\": " << a_.threads << ", \"kernels\": \""
    << (a_.kernels == kestrel::KernelSet::kFast ? "fast" : "ref") << "\", \"isa\": \""
    << (a_.kernels == kestrel::KernelSet::kFast ? kestrel::kernels::isa_name(kestrel::kernels::active_isa()) : "ref")
    << "\", \"memory\": \"" << memory_name(a_.memory) << "\", \"light\": " << (a_.light ? "true" : "false")
    << ", \"loops\": " << a_.loops << ", \"warmup\": " << a_.warmup << ", \"min_ms\": " << ms_.front()
    << ", \"median_ms\": " << ms_[ms_.size() / 2] << ", \"max_ms\": " << ms_.back()
    << ", \"peak_held_bytes\": " << st.peak_held_bytes << ", \"peak_in_use_bytes\": " << st.peak_in_use_bytes
    << ", \"planned_bytes\": " << st.planned_bytes << ", \"lower_bound_bytes\": " << st.lower_bound_bytes
    << ", \"system_allocations_per_inference\": " << static_cast<double>(st.system_allocations) / a_.loops
    << ", \"weight_bytes\": " << net_.weight_bytes() << ", \"model_weight_bytes\": " << net_.model_weight_bytes()
    << ", \"load_ms\": " << load_ms_ << ", \"rss_after_load_kib\": " << rss_after_load_kib_
    << ", \"peak_rss_kib\": " << self_usage().ru_maxrss;
  if (a_.profile) {
    j << ", \"fma_peak_gflops\": " << peak_gflops_ << ", \"layers\": [";
    bool first = true;
    for (size_t i = 0; i < times_.ms.size(); ++i) {
      if (times_.ms[i].empty()) continue;
      j << (first ? "" : ", ") << "{\"index\": " << i << ", \"name\": " << json_str(times_.name[i])
        << ", \"type\": " << json_str(times_.type[i]) << ", \"kernel\": " << json_str(times_.kernel[i])
        << ", \"median_ms\": " << median(times_.ms[i])
        << ", \"multiply_adds\": " << times_.macs[i] << "}";
      first = false;
    }
    j << "]";
  }
  j << "}\n";
  if (!j) {
    std::fprintf(stderr, "kestrel-bench: cannot write %s\n", a_.json.c_str());
    return false;
  }
  return true;
}

// --against: `a` and `b` in alternation, one inference each, the order swapped every
// pair; prints each one's median and the median of the pairs' b / a.
bool paired(Bench& a, Bench& b, const Args& args) {
  kestrel::Extractor ea = a.create_extractor(), eb = b.create_extractor();
  for (int i = 0; i < args.warmup; ++i) {
    if (a.timed_inference(ea) < 0 || b.timed_inference(eb) < 0) return false;
  }
  std::vector<double> ma, mb, ratio;
  for (int i = 0; i < args.loops; ++i) {
    const double first = i % 2 ? b.timed_inference(eb) : a.timed_inference(ea);
    const double second = i % 2 ? a.timed_inference(ea) : b.timed_inference(eb);
    if (first < 0 || second < 0) return false;
    ma.push_back(i % 2 ? second : first);
    mb.push_back(i % 2 ? first : second);
    ratio.push_back(mb.back() / ma.back());
  }
  const size_t faster = std::count_if(ratio.begin(), ratio.end(), [](double r) { return r < 1; });
  std::printf("paired ms        %s median %.2f  %s median %.2f  pairs: median %s / %s %.3f, %s faster in %zu of %zu\n",
              kestrel_tools::precision_name(args.precision.precision), median(ma),
              kestrel_tools::precision_name(args.against_precision), median(mb),
              kestrel_tools::precision_name(args.against_precision), kestrel_tools::precision_name(args.precision.precision),
              median(ratio), kestrel_tools::precision_name(args.against_precision), faster, ratio.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  Bench b(a);
  if (!b.load()) return 1;
  if (!a.memory_trace.empty() && !b.trace_memory()) return 1;
  if (a.against) {
    Args other = a;
    other.precision = kestrel::Option();
    other.precision.precision = a.against_precision;
    Bench against(other);
    if (!against.load() || !paired(b, against, a)) return 1;
    return 0;
  }
  if (!b.time_loops()) return 1;
  if (a.profile && !b.profile_loops()) return 1;
  b.print();
  if (!a.json.empty() && !b.write_json()) return 1;
  return 0;
}
