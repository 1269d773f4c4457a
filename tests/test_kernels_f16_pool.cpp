// The fp16-storage pooling kernels on pack8 halves (f16_pool_global_pack8_neonfp16,
// f16_pool2d_pack8_neonfp16) against their reference: pool_reference on the widened
// halves, its results rounded to halves (float_to_half), bit for bit, NaN included.
// Swept: channels 8, 16, 24 and 40 (1 to 5 blocks); maps 1 to 17 wide and 1 to 9 high
// (windows clipped on either side, groups of inside outputs with every remainder);
// windows 2x2 and 3x3 with strides 1 and 2 (the grouped paths), 2x3, 3x2, 1x1, 4x4 and
// 5x5 and a stride of 3 (taps one by one); padding 0, 1 and 2; ceil mode; count_include_pad
// both ways; max and average; global max and average up to 17x17 and MobileNet's 7x7.
// Inputs: random values; a mix of NaNs of both signs with payloads, +0 and -0, values up
// to 65504 (sums past it: the fp32 sum holds them, a rounded result may be inf) and
// infinities; +-0 alone (max keeps the first zero's sign, an average of -0 is +0);
// NaN alone (all-NaN windows). 1 and 4 threads. The inputs' channel padding is NaN (a
// kernel reading it shows) and the outputs' holds a sentinel (one writing it shows).
// Where the CPU has no fp16 arithmetic (cortex-a72, x86) no f16 pool kernel may be
// selected, and the cases say so.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "f16_test_util.h"
#include "kernel_test_util.h"
#include "kernels/isa.h"
#include "kernels/pool_kernels.h"
#include "layers/layers.h"
#include "test_util.h"

namespace {

using kestrel::fb::PoolType;
using kestrel::kernels::PoolGeometry;
using kestrel::kernels::PoolKernel;
using kt::Fill;
using kt::kFills;

constexpr int kLanes = 8;
constexpr uint16_t kNanHalf = 0x7e00;
constexpr uint16_t kSentinel = 0x3c01;  // 1.0009765625: no pooling of these inputs writes it by chance

bool fp16_arith() { return kt::fp16_kernels_run(); }

// The f16 pool kernels this build has and this CPU runs: none without fp16 arithmetic.
// An aarch64 build that has it must list both (a kernel dropped from the registry fails).
std::vector<const PoolKernel*> runnable_f16_pool_kernels() {
  std::vector<const PoolKernel*> ks;
  if (!fp16_arith()) return ks;
  for (const PoolKernel* k : kestrel::kernels::pool_kernels()) {
    if (k->f16) ks.push_back(k);
  }
  if (kestrel::kernels::active_isa() == kestrel::kernels::Isa::kNeon) CHECK(ks.size() == 2);
  return ks;
}

std::string describe(const PoolGeometry& g) {
  std::ostringstream o;
  o << (g.pool == PoolType::Max ? "max " : "avg ") << (g.global ? "global " : "") << g.channels << "x" << g.in_h
    << "x" << g.in_w << " -> " << g.out_h << "x" << g.out_w << " k" << g.kh << "x" << g.kw << " s" << g.sh << "x"
    << g.sw << " pad " << g.pad_top << "," << g.pad_left << "," << g.pad_bottom << "," << g.pad_right
    << (g.count_include_pad ? " include_pad" : " exclude_pad");
  return o.str();
}

// A windowed pack8 geometry of halves resolved as the layer resolves it (Caffe's ceil
// rule included); false where the window does not fit.
bool windowed(PoolGeometry* g, bool ceil_mode) {
  kestrel::layer_util::AxisGeometry gy, gx;
  const auto mode = kestrel::fb::PadMode::Explicit;
  if (!kestrel::layer_util::axis_geometry("h", g->in_h, g->kh, g->sh, 1, g->pad_top, g->pad_bottom, mode, ceil_mode,
                                          &gy).ok() ||
      !kestrel::layer_util::axis_geometry("w", g->in_w, g->kw, g->sw, 1, g->pad_left, g->pad_right, mode, ceil_mode,
                                          &gx).ok()) {
    return false;
  }
  g->pad_bottom = gy.pad_end;
  g->pad_right = gx.pad_end;
  g->out_h = gy.out;
  g->out_w = gx.out;
  return g->out_h >= 1 && g->out_w >= 1;
}

// Pooling reads maps of halves only, whose NaNs are quiet.
std::vector<uint16_t> make_input(Fill fill, size_t n, std::mt19937& rng) {
  return kt::random_half_fill(fill, n, rng, /*signalling=*/false);
}

std::string hex(uint16_t h) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%04x", h);
  return s;
}

// Runs k on g (pack8 halves in and out) at 1 and 4 threads against pool_reference on the
// widened halves, rounded to halves (CHECKs).
void check_against_reference(const PoolKernel* k, PoolGeometry g, Fill fill, std::mt19937& rng) {
  g.in_pack = g.out_pack = kLanes;
  g.f16 = true;
  const int in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const std::vector<uint16_t> x = make_input(fill, static_cast<size_t>(g.channels) * in_plane, rng);
  std::vector<float> wide(x.size());
  for (size_t i = 0; i < x.size(); ++i) wide[i] = kestrel::half_to_float(x[i]);
  PoolGeometry planar = g;
  planar.in_pack = planar.out_pack = 1;
  planar.f16 = false;
  std::vector<float> ref(static_cast<size_t>(g.channels) * out_plane);
  kestrel::kernels::pool_reference(planar, wide.data(), in_plane, ref.data(), out_plane, 1);
  for (float& r : ref) r = kestrel::half_to_float(kestrel::float_to_half(r));

  const size_t in_cstep = kt::block_units(g.in_w, g.in_h), out_cstep = kt::block_units(g.out_w, g.out_h);
  const std::vector<uint16_t> xin = kt::to_pack8_bits(x, g.channels, in_plane, in_cstep, kNanHalf);
  for (int threads : {1, 4}) {
    std::vector<uint16_t> y(out_cstep * 2 * (g.channels / kLanes) + 64, kSentinel);
    kestrel::kernels::KernelContext ctx;
    ctx.num_threads = threads;
    k->run(g, reinterpret_cast<const float*>(xin.data()), in_cstep, reinterpret_cast<float*>(y.data()), out_cstep,
           ctx);
    const std::vector<float> got = kt::from_pack8(y, g.channels, out_plane, out_cstep);
    size_t first = got.size();
    for (size_t i = 0; i < got.size() && first == got.size(); ++i) {
      if (std::memcmp(&got[i], &ref[i], sizeof(float)) != 0) first = i;
    }
    bool padding_kept = true;
    for (int b = 0; b < g.channels / kLanes; ++b) {
      for (size_t i = b * out_cstep * 2 + static_cast<size_t>(out_plane) * kLanes; i < (b + 1) * out_cstep * 2; ++i) {
        padding_kept = padding_kept && y[i] == kSentinel;
      }
    }
    for (size_t i = y.size() - 64; i < y.size(); ++i) padding_kept = padding_kept && y[i] == kSentinel;
    INFO(k->name << " " << describe(g) << " fill " << static_cast<int>(fill) << " threads " << threads);
    if (first != got.size()) {
      const size_t c = first / out_plane, p = first % out_plane;
      const uint16_t bits = y[(c / kLanes) * out_cstep * 2 + p * kLanes + c % kLanes];
      INFO("channel " << c << " pixel " << p << ": got " << hex(bits) << ", want "
                      << hex(kestrel::float_to_half(ref[first])));
      CHECK(first == got.size());
    }
    CHECK(padding_kept);
  }
}

// The kernel the registry picks for g as pack8 halves; it must be one of the f16 ones.
const PoolKernel* selected(PoolGeometry g) {
  g.in_pack = g.out_pack = kLanes;
  g.f16 = true;
  const PoolKernel* k = kestrel::kernels::select_pool_kernel(g, kestrel::kernels::active_isa());
  if (k) CHECK(k->f16);
  return k;
}

// False (and a message) where this CPU runs no f16 pool kernel: then none may be selected.
bool have_kernels(const char* what) {
  if (!runnable_f16_pool_kernels().empty()) return true;
  PoolGeometry g;
  g.channels = 16;
  g.in_h = g.in_w = 7;
  g.kh = g.kw = 3;
  g.sh = g.sw = 2;
  g.out_h = g.out_w = 3;
  CHECK(selected(g) == nullptr);
  g.kh = g.kw = 7;
  g.sh = g.sw = 1;
  g.out_h = g.out_w = 1;
  g.global = true;
  g.pool = PoolType::Average;
  CHECK(selected(g) == nullptr);
  MESSAGE("no fp16 arithmetic on this CPU (active features: '" << std::string(kestrel::kernels::active_features())
                                                                << "'): no f16 pool kernel selected; "
                                                                << std::string(what) << " skipped");
  return false;
}

kestrel::fb::LayerParamsUnion pool_params(PoolType pool, int k, int stride, int pad, bool global, bool ceil_mode,
                                          bool include_pad) {
  kestrel::fb::PoolingParamT p;
  p.pool = pool;
  p.global = global;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.round_mode = ceil_mode ? kestrel::fb::RoundMode::Ceil : kestrel::fb::RoundMode::Floor;
  p.count_include_pad = include_pad;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// 1x1 layers (the fp16 1x1 kernel) around a 3x3 stride-2 max pool, a 2x2 ceil-mode
// average that leaves the padding out, and a global average.
kestrel::ModelBuilder pool_chain() {
  kestrel::ModelBuilder b;
  b.add_input("data", {16, 13, 11});
  kt::add_conv(b, "a", "data", 16, 16, 1);
  b.add_layer("Pooling", "p1", {"a"}, {"p1"}, pool_params(PoolType::Max, 3, 2, 1, false, false, true));
  kt::add_conv(b, "b", "p1", 16, 24, 1);
  b.add_layer("Pooling", "p2", {"b"}, {"p2"}, pool_params(PoolType::Average, 2, 2, 0, false, true, false));
  kt::add_conv(b, "c", "p2", 24, 16, 1);
  b.add_layer("Pooling", "g", {"c"}, {"g"}, pool_params(PoolType::Average, 0, 1, 0, true, false, true));
  kt::add_conv(b, "d", "g", 16, 8, 1);
  b.add_output("d");
  return b;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("fp16 storage: pooling layers of an fp16 net run on halves, equal to the fp16 oracle bit for bit") {
  const kestrel::ModelBuilder builder = pool_chain();
  kestrel::Net oracle, fast;
  oracle.option().kernels = kestrel::KernelSet::kReference;
  oracle.option().precision = fast.option().precision = kestrel::Precision::kFp16;
  // Named: a layer reading the network input is fp32 by default (net_precision.cpp).
  oracle.option().layer_precision["a"] = fast.option().layer_precision["a"] = kestrel::Precision::kFp16;
  REQUIRE(kt::load(oracle, builder).ok());
  REQUIRE(kt::load(fast, builder).ok());
  const kestrel::Mat in = kt::random_input(fast, "data", 5);
  std::map<std::string, std::string> kernel;
  for (int threads : {1, 4}) {
    // With fp16 arithmetic every blob up to "g" comes from fp16 kernels only (the output
    // layer "d" stays fp32).
    for (const char* blob : {"a", "p1", "b", "p2", "c", "g"}) {
      INFO("blob " << std::string(blob) << " threads " << threads);
      kestrel::Extractor ex = fast.create_extractor();
      ex.set_num_threads(threads);
      ex.set_observer([&](const kestrel::LayerEvent& e) { kernel[e.layer_name] = e.kernel; });
      REQUIRE(ex.input("data", in).ok());
      kestrel::Mat got, want;
      REQUIRE(ex.extract(blob, got).ok());
      kestrel::Extractor ox = oracle.create_extractor();
      REQUIRE(ox.input("data", in).ok());
      REQUIRE(ox.extract(blob, want).ok());
      REQUIRE(got.shape() == want.shape());
      // Without fp16 arithmetic the fp32 kernels' results are rounded: no exact match.
      if (fp16_arith()) CHECK(kt::same_bits(got, want));
    }
  }
  if (!fp16_arith()) {
    for (const char* l : {"p1", "p2", "g"}) CHECK_MESSAGE(kernel[l].rfind("f16_", 0) != 0, l << " ran " << kernel[l]);
    MESSAGE("no fp16 arithmetic on this CPU: the pooling layers stay fp32");
    return;
  }
  for (const char* l : {"p1", "p2", "g"}) CHECK_MESSAGE(kernel[l].rfind("f16_pool", 0) == 0, l << " ran " << kernel[l]);
}

TEST_CASE("fp16 storage: pooling 2x2 and 3x3 windows, strides 1 and 2, equal pool_reference rounded to halves") {
  if (!have_kernels("windows")) return;
  std::mt19937 rng(71);
  const int channel_counts[] = {8, 16, 24, 40};
  int n = 0, ran = 0;
  for (PoolType pool : {PoolType::Max, PoolType::Average}) {
    for (int k : {2, 3}) {
      for (int s : {1, 2}) {
        for (int pad : {0, 1}) {
          for (bool ceil_mode : {false, true}) {
            for (bool include_pad : {true, false}) {
              if (pool == PoolType::Max && !include_pad) continue;  // no divisor
              for (int h : {1, 2, 3, 5, 9}) {
                for (int w = 1; w <= 17; ++w, ++n) {
                  PoolGeometry g;
                  g.channels = channel_counts[n % 4];
                  g.in_h = h;
                  g.in_w = w;
                  g.kh = g.kw = k;
                  g.sh = g.sw = s;
                  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
                  g.pool = pool;
                  g.count_include_pad = include_pad;
                  if (!windowed(&g, ceil_mode)) continue;
                  const PoolKernel* kernel = selected(g);
                  REQUIRE(kernel != nullptr);
                  CHECK(std::string(kernel->name) == "f16_pool2d_pack8_neonfp16");
                  check_against_reference(kernel, g, kFills[n % 4], rng);
                  ++ran;
                }
              }
            }
          }
        }
      }
    }
  }
  MESSAGE(ran << " geometries x 2 thread counts");
}

TEST_CASE("fp16 storage: pooling other windows and strides (taps one by one) equal pool_reference rounded") {
  if (!have_kernels("other windows")) return;
  std::mt19937 rng(72);
  struct Case {
    int kh, kw, sh, sw, pad_top, pad_left, pad_bottom, pad_right;
  };
  const Case cases[] = {
      {2, 3, 1, 2, 0, 1, 1, 0}, {3, 2, 2, 1, 1, 0, 0, 1}, {1, 1, 1, 1, 0, 0, 0, 0}, {1, 1, 2, 2, 0, 0, 0, 0},
      {4, 4, 2, 2, 1, 2, 2, 1}, {5, 5, 1, 1, 2, 2, 2, 2}, {3, 3, 3, 3, 1, 1, 1, 1}, {2, 2, 3, 3, 0, 1, 0, 1},
      {3, 3, 1, 2, 2, 2, 2, 2}, {3, 3, 2, 1, 0, 2, 1, 0},
  };
  const int channel_counts[] = {8, 16, 24, 40};
  int n = 0;
  for (const Case& c : cases) {
    for (PoolType pool : {PoolType::Max, PoolType::Average}) {
      for (bool ceil_mode : {false, true}) {
        for (bool include_pad : {true, false}) {
          for (int h : {1, 4, 7}) {
            for (int w : {1, 2, 5, 8, 13, 17}) {
              ++n;
              PoolGeometry g;
              g.channels = channel_counts[n % 4];
              g.in_h = h;
              g.in_w = w;
              g.kh = c.kh;
              g.kw = c.kw;
              g.sh = c.sh;
              g.sw = c.sw;
              g.pad_top = c.pad_top;
              g.pad_left = c.pad_left;
              g.pad_bottom = c.pad_bottom;
              g.pad_right = c.pad_right;
              g.pool = pool;
              g.count_include_pad = include_pad;
              if (!windowed(&g, ceil_mode)) continue;
              const PoolKernel* kernel = selected(g);
              REQUIRE(kernel != nullptr);
              check_against_reference(kernel, g, kFills[n % 4], rng);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("fp16 storage: pooling global max and average equal pool_reference rounded to halves") {
  if (!have_kernels("global pooling")) return;
  std::mt19937 rng(73);
  int n = 0;
  for (PoolType pool : {PoolType::Max, PoolType::Average}) {
    for (int channels : {8, 16, 24, 40}) {
      for (int h : {1, 2, 3, 5, 7, 17}) {
        for (int w : {1, 2, 3, 4, 5, 7, 9, 17}) {
          for (Fill fill : kFills) {
            PoolGeometry g;
            g.channels = channels;
            g.in_h = g.kh = h;
            g.in_w = g.kw = w;
            g.out_h = g.out_w = 1;
            g.global = true;
            g.pool = pool;
            const PoolKernel* kernel = selected(g);
            REQUIRE(kernel != nullptr);
            CHECK(std::string(kernel->name) == "f16_pool_global_pack8_neonfp16");
            check_against_reference(kernel, g, fill, rng);
            ++n;
          }
        }
      }
    }
  }
  // MobileNet's pool6: 1024 channels of 7x7.
  PoolGeometry g;
  g.channels = 1024;
  g.in_h = g.in_w = g.kh = g.kw = 7;
  g.out_h = g.out_w = 1;
  g.global = true;
  g.pool = PoolType::Average;
  for (Fill fill : kFills) check_against_reference(selected(g), g, fill, rng);
  MESSAGE((n + 4) << " global geometries x 2 thread counts");
}

TEST_CASE("fp16 storage: pooling kernels take only pack8 halves") {
  PoolGeometry g;
  g.channels = 16;
  g.in_h = g.in_w = 6;
  g.kh = g.kw = 2;
  g.sh = g.sw = 2;
  g.out_h = g.out_w = 3;
  for (const PoolKernel* k : kestrel::kernels::pool_kernels()) {
    if (!k->f16) continue;
    INFO(k->name);
    CHECK(k->blocked_lanes == kLanes);
    for (bool global : {false, true}) {
      PoolGeometry q = g;
      q.global = global;
      q.f16 = true;
      q.in_pack = q.out_pack = kLanes;
      q.channels = 12;  // not whole blocks
      CHECK_FALSE(k->supports(q));
      q.channels = 16;
      q.out_pack = 1;
      CHECK_FALSE(k->supports(q));
      q.out_pack = kLanes;
      q.f16 = false;  // fp32 maps
      CHECK_FALSE(k->supports(q));
    }
  }
  // No fp32 geometry ever gets an f16 kernel, whatever the CPU.
  for (int pack : {1, 4, 8}) {
    PoolGeometry q = g;
    q.in_pack = q.out_pack = pack;
    const PoolKernel* k = kestrel::kernels::select_pool_kernel(q, kestrel::kernels::active_isa());
    if (k) CHECK_FALSE(k->f16);
  }
  if (!fp16_arith()) MESSAGE("no fp16 arithmetic on this CPU: no f16 pool kernel runs");
}

}  // TEST_SUITE
