// Per-layer microbenchmarks (Google Benchmark): the layer shapes of the paper's
// Tables 2, 3 and 4 (1x1 convolution, 3x3 depthwise stride 1 and 2), 5x5 depthwise
// stride 1 and 2 (MobileNet v3, CenterNet), plus MobileNet v1's stem convolution and
// classifier, each with the reference kernel ("ref") and the fast kernel the registry
// selects for the active ISA ("opt"), at 1, 2 and 4 threads. Names read `conv1x1/112x112x32-64/opt/threads:2` (input W x H x C, then
// output channels). Every run reports GFLOP/s (2 x multiply-adds / real time) and
// %peak: that rate as a share of the measured FMA peak at the same thread count
// (bench/peak). bench/micro/tables.py turns the JSON output into the paper's tables.
//
//   kestrel-microbench [--benchmark_filter=REGEX] [--benchmark_min_time=SECONDS] ...
//
// The minimum time per benchmark defaults to 0.2 s (the full run takes a few minutes).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "fma_peak.h"
#include "kernels/conv_kernels.h"
#include "kernels/fc_kernels.h"
#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "kestrel/mat.h"

namespace {

using kestrel::kAlignment;
using kestrel::kOverreadBytes;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;
using kestrel::kernels::FcGeometry;
using kestrel::kernels::FcKernel;
using kestrel::kernels::KernelContext;

constexpr int kThreadCounts[] = {1, 2, 4};
constexpr const char* kDefaultMinTime = "0.2";

size_t align_floats(size_t n) {
  const size_t a = kAlignment / sizeof(float);
  return (n + a - 1) / a * a;
}

// kAlignment-aligned, zero-filled floats with kOverreadBytes of readable slack past
// the end (kernels may read, never write, that far past a channel's last value).
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n) {
    const size_t bytes = align_floats(n) * sizeof(float) + kOverreadBytes;
    p_.reset(static_cast<float*>(::operator new(bytes, std::align_val_t(kAlignment))));
    std::memset(p_.get(), 0, bytes);
  }
  float* data() const { return p_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { ::operator delete(p, std::align_val_t(kAlignment)); }
  };
  std::unique_ptr<float, Free> p_;
};

// Shared + per-thread scratch laid out as the Extractor lays it out.
struct Scratch {
  AlignedFloats mem;
  KernelContext make(size_t shared_bytes, size_t per_thread_bytes, int threads) {
    const size_t shared = align_floats((shared_bytes + sizeof(float) - 1) / sizeof(float));
    const size_t stride = align_floats((per_thread_bytes + sizeof(float) - 1) / sizeof(float));
    mem = AlignedFloats(shared + stride * threads + 1);
    KernelContext ctx;
    ctx.num_threads = threads;
    ctx.workspace = mem.data();
    ctx.thread_scratch = reinterpret_cast<char*>(mem.data() + shared);
    ctx.thread_scratch_stride = stride * sizeof(float);
    return ctx;
  }
};

void fill_random(float* p, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (size_t i = 0; i < n; ++i) p[i] = dist(rng);
}

std::vector<float> random_vector(size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  fill_random(v.data(), n, rng);
  return v;
}

// The measured FMA peak (GFLOP/s) at the active ISA, once per thread count.
std::map<int, double>& peak_cache() {
  static std::map<int, double> cache;
  return cache;
}

double fma_peak(int threads) {
  auto& cache = peak_cache();
  auto it = cache.find(threads);
  if (it == cache.end()) {
    it = cache.emplace(threads, kestrel::bench::fma_peak_gflops(kestrel::kernels::active_isa(), threads)).first;
  }
  return it->second;
}

// Runs `fn` once untimed (page faults, the OpenMP pool), then times it under
// Google Benchmark's loop and sets the rate counters from the real time.
void time_layer(benchmark::State& state, double flops, int threads, const std::function<void()>& fn) {
  fn();
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  for (auto _ : state) {
    fn();
    benchmark::ClobberMemory();
  }
  const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
  if (state.iterations() == 0 || seconds <= 0) return;
  const double gflops = flops * double(state.iterations()) / seconds * 1e-9;
  state.counters["GFLOP/s"] = gflops;
  const double peak = fma_peak(threads);
  if (peak > 0) state.counters["%peak"] = gflops / peak * 100.0;
}

// ---- Convolution ----

void bench_conv(benchmark::State& state, const ConvGeometry& planar, bool opt, int threads) {
  ConvGeometry g = planar;
  // KESTREL_BENCH_BF16=1 asks for bf16 arithmetic (Precision::kBf16) on the layers it
  // takes (kernels::bf16_pointwise), as the Net would.
  const char* bf16 = opt ? std::getenv("KESTREL_BENCH_BF16") : nullptr;
  g.bf16 = bf16 && std::string(bf16) == "1" && kestrel::kernels::bf16_pointwise(g);
  std::mt19937 rng(20261122u + unsigned(g.in_c * 131 + g.out_c * 7 + g.in_h));
  const ConvKernel* k = opt ? kestrel::kernels::select_conv_kernel(g, kestrel::kernels::active_isa()) : nullptr;
  // KESTREL_BENCH_BLOCKED gives a kernel that takes blocked operands (Option::
  // blocked_layout; a block of W channels is one plane of W-float pixels) those it
  // takes: "in" or "out" only that one, any other value both where it takes both, else
  // the one it takes (as the Net's layout pass would leave a map between two layers).
  const char* blocked = opt ? std::getenv("KESTREL_BENCH_BLOCKED") : nullptr;
  if (blocked && !*blocked) blocked = nullptr;
  auto with_blocks = [&](const ConvKernel* c) {
    const int w = c->blocked_lanes;
    if (!blocked || w == 0) return g;
    const std::string side = blocked;
    std::vector<std::pair<int, int>> tries = {{w, w}, {w, 1}, {1, w}};
    if (side == "in") tries = {{w, 1}};
    if (side == "out") tries = {{1, w}};
    for (const auto& [in_pack, out_pack] : tries) {
      ConvGeometry t = g;
      t.in_pack = in_pack;
      t.out_pack = out_pack;
      if (c->supports(t)) return t;
    }
    return g;
  };
  // KESTREL_BENCH_KERNEL=name times that kernel wherever it claims the geometry (in the
  // layouts KESTREL_BENCH_BLOCKED asks for), to compare kernels side by side before
  // choosing which claims what.
  if (const char* want = opt ? std::getenv("KESTREL_BENCH_KERNEL") : nullptr) {
    for (const ConvKernel* c : kestrel::kernels::conv_kernels()) {
      if (std::string(c->name) == want && (c->supports(g) || c->supports(with_blocks(c)))) k = c;
    }
  } else if (blocked && opt) {
    // The kernel the registry picks for the blocked layouts, where one takes them.
    for (const ConvKernel* c : kestrel::kernels::conv_kernels()) {
      const ConvGeometry t = with_blocks(c);
      const bool picked = c == kestrel::kernels::select_conv_kernel(t, kestrel::kernels::active_isa());
      if (!t.planar() && c->supports(t) && picked) {
        k = c;
        break;
      }
    }
  }
  if (k) g = with_blocks(k);
  const size_t in_plane = size_t(g.in_h) * g.in_w * g.in_pack;
  // The channel strides a Net's maps have (Shape::cstep pads those that alias in the caches).
  const size_t in_cstep = kestrel::Shape::make3(g.in_w * g.in_pack, g.in_h, 1).cstep();
  const size_t out_cstep = kestrel::Shape::make3(g.out_w * g.out_pack, g.out_h, 1).cstep();
  const int in_planes = g.in_c / g.in_pack, out_planes = g.out_c / g.out_pack;
  AlignedFloats in(in_cstep * in_planes), out(out_cstep * out_planes);
  for (int c = 0; c < in_planes; ++c) fill_random(in.data() + c * in_cstep, in_plane, rng);
  const std::vector<float> w = random_vector(size_t(g.out_c) * (g.in_c / g.group) * g.kh * g.kw, rng);
  const std::vector<float> b = random_vector(g.out_c, rng);
  const float* bias = g.bias ? b.data() : nullptr;

  if (!opt) {
    state.SetLabel("conv_reference");
    time_layer(state, g.flops(), threads, [&] {
      kestrel::kernels::conv_reference(g, w.data(), bias, in.data(), in_cstep, out.data(), out_cstep, threads);
    });
    return;
  }
  if (!k) {
    state.SkipWithError("no fast kernel claims this geometry at the active ISA");
    return;
  }
  const std::string packs = std::to_string(g.in_pack) + ">" + std::to_string(g.out_pack);
  state.SetLabel(std::string(k->name) + (g.planar() ? "" : " blocked " + packs));
  AlignedFloats packed(k->packed_floats(g));
  k->pack(g, w.data(), bias, packed.data());  // once, outside the timed loop
  Scratch scratch;
  const KernelContext ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
  time_layer(state, g.flops(), threads,
             [&] { k->run(g, packed.data(), in.data(), in_cstep, out.data(), out_cstep, ctx); });
}

int out_extent(int in, int k, int s, int pad, int pad_end) { return (in + pad + pad_end - k) / s + 1; }

// A MobileNet-style convolution: square k x k kernel, `pad` before and `pad_end` after
// (symmetric unless given), bias, fused ReLU.
ConvGeometry conv_geometry(int w, int h, int c, int out_c, int k, int s, int pad, bool depthwise, int pad_end = -1) {
  if (pad_end < 0) pad_end = pad;
  ConvGeometry g;
  g.in_w = w;
  g.in_h = h;
  g.in_c = c;
  g.out_c = depthwise ? c : out_c;
  g.group = depthwise ? c : 1;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.pad_top = g.pad_left = pad;
  g.out_h = out_extent(h, k, s, pad, pad_end);
  g.out_w = out_extent(w, k, s, pad, pad_end);
  g.bias = true;
  g.act.type = kestrel::fb::ActivationType::ReLU;
  return g;
}

// ---- Inner product ----

void bench_fc(benchmark::State& state, const FcGeometry& g, bool opt, int threads) {
  std::mt19937 rng(1024u + unsigned(g.num_output));
  // The classifier's input is a 1 x 1 x C blob (after global pooling): C planes of
  // one value, each on its own kAlignment boundary.
  const size_t in_cstep = align_floats(g.in_plane);
  AlignedFloats in(in_cstep * g.in_planes), out(g.num_output);
  for (int p = 0; p < g.in_planes; ++p) fill_random(in.data() + p * in_cstep, g.in_plane, rng);
  const std::vector<float> w = random_vector(size_t(g.num_output) * g.num_input(), rng);
  const std::vector<float> b = random_vector(g.num_output, rng);
  const float* bias = g.bias ? b.data() : nullptr;

  if (!opt) {
    state.SetLabel("fc_reference");
    time_layer(state, g.flops(), threads, [&] {
      kestrel::kernels::fc_reference(g, w.data(), bias, in.data(), in_cstep, out.data(), threads);
    });
    return;
  }
  const FcKernel* k = kestrel::kernels::select_fc_kernel(g, kestrel::kernels::active_isa());
  if (!k) {
    state.SkipWithError("no fast kernel claims this geometry at the active ISA");
    return;
  }
  state.SetLabel(k->name);
  AlignedFloats packed(k->packed_floats(g));
  k->pack(g, w.data(), bias, packed.data());
  Scratch scratch;
  const KernelContext ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
  time_layer(state, g.flops(), threads, [&] { k->run(g, packed.data(), in.data(), in_cstep, out.data(), ctx); });
}

// ---- Registration ----

template <class Fn>
void register_variants(const std::string& base, Fn fn) {
  for (const bool opt : {false, true}) {
    for (const int t : kThreadCounts) {
      const std::string name = base + (opt ? "/opt" : "/ref") + "/threads:" + std::to_string(t);
      benchmark::RegisterBenchmark(name.c_str(), [fn, opt, t](benchmark::State& s) { fn(s, opt, t); })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

std::string whc(int w, int h, int c) {
  return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c);
}

void register_conv(const std::string& family, const std::string& shape, const ConvGeometry& g) {
  register_variants(family + "/" + shape,
                    [g](benchmark::State& s, bool opt, int t) { bench_conv(s, g, opt, t); });
}

void register_all() {
  // Table 2: 1x1 convolutions (input W x H x C -> output channels).
  struct Pw {
    int hw, c, out_c;
  };
  for (const Pw& p : {Pw{112, 32, 64}, Pw{56, 64, 128}, Pw{56, 128, 128}, Pw{28, 128, 256}, Pw{28, 256, 256},
                      Pw{14, 256, 512}, Pw{14, 512, 512}, Pw{7, 512, 1024}, Pw{7, 1024, 1024},
                      // CenterNet's MobileNet v3 at 512: trunk, neck and its 128x128 heads.
                      Pw{32, 256, 96}, Pw{16, 720, 120}, Pw{64, 192, 64}, Pw{128, 128, 80}, Pw{128, 128, 4},
                      // MobileNet v2's narrow projections.
                      Pw{56, 144, 24}, Pw{28, 144, 32}, Pw{14, 384, 64}}) {
    register_conv("conv1x1", whc(p.hw, p.hw, p.c) + "-" + std::to_string(p.out_c),
                  conv_geometry(p.hw, p.hw, p.c, p.out_c, 1, 1, 0, false));
  }
  // Table 3: 3x3 depthwise, stride 1, pad 1.
  struct Dw {
    int hw, c;
  };
  for (const Dw& d : {Dw{112, 32}, Dw{56, 128}, Dw{28, 256}, Dw{14, 512}, Dw{7, 1024}}) {
    register_conv("dwconv3x3s1", whc(d.hw, d.hw, d.c), conv_geometry(d.hw, d.hw, d.c, d.c, 3, 1, 1, true));
  }
  // Table 4: 3x3 depthwise, stride 2, pad 1.
  for (const Dw& d : {Dw{112, 64}, Dw{56, 128}, Dw{28, 256}, Dw{14, 512}}) {
    register_conv("dwconv3x3s2", whc(d.hw, d.hw, d.c), conv_geometry(d.hw, d.hw, d.c, d.c, 3, 2, 1, true));
  }
  // 5x5 depthwise (MobileNet v3 at 224, CenterNet's MobileNet v3 trunk and head at
  // 512): stride 1 pad 2, and stride 2 with TF's SAME on even maps (1 before, 2 after).
  for (const Dw& d : {Dw{128, 18}, Dw{64, 96}, Dw{64, 192}, Dw{32, 256}, Dw{28, 120}, Dw{16, 720}, Dw{7, 960}}) {
    register_conv("dwconv5x5s1", whc(d.hw, d.hw, d.c), conv_geometry(d.hw, d.hw, d.c, d.c, 5, 1, 2, true));
  }
  for (const Dw& d : {Dw{128, 72}, Dw{56, 72}, Dw{32, 528}, Dw{14, 672}}) {
    register_conv("dwconv5x5s2", whc(d.hw, d.hw, d.c), conv_geometry(d.hw, d.hw, d.c, d.c, 5, 2, 1, true, 2));
  }
  // MobileNet v1's stem: 3x3 stride 2 pad 1, 224x224x3 -> 32.
  register_conv("conv3x3s2", whc(224, 224, 3) + "-32", conv_geometry(224, 224, 3, 32, 3, 2, 1, false));
  // MobileNet v1's classifier: 1024 -> 1000 with bias, on the pooled 1 x 1 x 1024 blob.
  FcGeometry fc;
  fc.in_planes = 1024;
  fc.in_plane = 1;
  fc.num_output = 1000;
  fc.bias = true;
  register_variants("fc/1024-1000", [fc](benchmark::State& s, bool opt, int t) { bench_fc(s, fc, opt, t); });
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  // Default --benchmark_min_time unless given (a per-benchmark MinTime() would
  // override the command line).
  std::vector<char*> args(argv, argv + argc);
  std::string min_time_arg = std::string("--benchmark_min_time=") + kDefaultMinTime;
  bool has_min_time = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--benchmark_min_time", 20) == 0) has_min_time = true;
  }
  if (!has_min_time) args.insert(args.begin() + 1, min_time_arg.data());
  int n = int(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;

  const kestrel::kernels::Isa isa = kestrel::kernels::active_isa();
  benchmark::AddCustomContext("kestrel_isa", kestrel::kernels::isa_name(isa));
  std::string peaks;
  for (const int t : kThreadCounts) {
    const double p = fma_peak(t);
    benchmark::AddCustomContext("fma_peak_gflops_threads:" + std::to_string(t), fixed(p, 1));
    peaks += (peaks.empty() ? "" : ", ") + std::to_string(t) + "T " + fixed(p, 1);
  }
  benchmark::AddCustomContext("fma_peak", peaks + " GFLOP/s");

  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
