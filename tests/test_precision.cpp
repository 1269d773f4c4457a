// Option::precision kFp16: exact fp16 arithmetic (kernels/f16_arith.h) against an
// integer model of it, the fp32 <-> fp16 array kernels against the reference, the fp16
// reference convolution, and the Net: halves between fp16 layers, per-layer overrides,
// and the errors of bad weights and unknown layers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/f16_arith.h"
#include "kernels/f16_reference.h"
#include "kernels/half_kernels.h"
#include "kernel_test_util.h"
#include "mat_util.h"
#include "test_util.h"

namespace {

// Channel by channel: the padding between channels holds whatever the pool left there.
bool all_halves(const kestrel::Mat& m) {
  const size_t n = static_cast<size_t>(m.w) * m.h * m.d * m.elempack;
  for (int q = 0; q < (m.dims >= 3 ? m.c : 1); ++q) {
    const float* p = m.channel(q);
    for (size_t i = 0; i < n; ++i) {
      if (!kestrel::is_exact_half(p[i])) return false;
    }
  }
  return true;
}

kestrel::Mat run_blob(const kestrel::Net& net, const kestrel::Mat& in, const char* blob, int threads = 1) {
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat out;
  REQUIRE(ex.extract(blob, out).ok());
  return out.clone();
}

kestrel::Mat rounded(const kestrel::Mat& m) {
  kestrel::Mat r = m.clone();
  for (size_t i = 0; i < r.total(); ++i) r.data[i] = kestrel::half_to_float(kestrel::float_to_half(r.data[i]));
  return r;
}

// A 5x5 stride-2 stem (3 -> 8 channels, padded) and a 1x1 after it; the stem's weights
// and bias rounded to halves where `halves`.
kestrel::ModelBuilder stem_net(bool halves) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> w(8 * 3 * 5 * 5), bias(8);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (std::vector<float>* v : {&w, &bias}) {
    for (float& x : *v) x = halves ? kestrel::half_to_float(kestrel::float_to_half(x)) : x;
  }
  kestrel::ModelBuilder b;
  b.add_input("data", {3, 19, 23});
  const uint32_t wi = b.add_weight("a/w", {8, 3, 5, 5}, w);
  const uint32_t bi = b.add_weight("a/b", {8}, bias);
  b.add_layer("Convolution", "a", {"data"}, {"a"}, kt::conv_params(8, 5, 2, 2, true), {wi, bi});
  kt::add_conv(b, "b", "a", 8, 8, 1);
  b.add_output("b");
  return b;
}

}  // namespace

TEST_SUITE("precision") {
  TEST_CASE("fp32 <-> fp16 array kernels match the reference, tails included") {
    std::mt19937 rng(7);
    std::vector<float> src(77);
    for (float& v : src) {
      const uint32_t bits = rng();
      std::memcpy(&v, &bits, sizeof v);
      if (rng() % 2) v = std::ldexp(static_cast<float>(rng() % 4096) - 2048.f, static_cast<int>(rng() % 40) - 30);
    }
    src[3] = std::numeric_limits<float>::infinity();
    src[5] = 65520.f;  // rounds to infinity
    src[6] = 65519.f;  // rounds to 65504
    src[7] = 1e-8f;    // below half the smallest subnormal: zero
    const auto& ref = kestrel::kernels::kHalfReference;
    for (const kestrel::kernels::HalfKernel* k : kestrel::kernels::half_kernels()) {
      if (!kestrel::kernels::isa_allows(kestrel::kernels::active_isa(), k->isa)) continue;
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, src.size()}) {
        INFO(k->name << " n=" << n);
        std::vector<uint16_t> h(n), hr(n);
        std::vector<float> f(n), fr(n), r(n), rr(n);
        k->to_half(src.data(), h.data(), n);
        ref.to_half(src.data(), hr.data(), n);
        k->to_float(hr.data(), f.data(), n);
        ref.to_float(hr.data(), fr.data(), n);
        k->round(src.data(), r.data(), n);
        ref.round(src.data(), rr.data(), n);
        for (size_t i = 0; i < n; ++i) {
          if (std::isnan(src[i])) {
            CHECK((std::isnan(f[i]) && std::isnan(r[i]) && (h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff) != 0));
            continue;
          }
          CHECK(h[i] == hr[i]);
          CHECK(std::memcmp(&f[i], &fr[i], sizeof(float)) == 0);
          CHECK(std::memcmp(&r[i], &rr[i], sizeof(float)) == 0);
        }
      }
    }
  }

  TEST_CASE("fp16 reference convolution accumulates in fp16 from the bias") {
    kestrel::kernels::ConvGeometry g;
    g.in_c = 3;
    g.in_h = g.in_w = 1;
    g.out_c = 1;
    g.out_h = g.out_w = 1;
    g.bias = true;
    // 2048 + 1 + 1 + 1: each 1 is lost to the half spacing of 2 (ties to even), where
    // fp32 keeps 2051.
    const float w[3] = {1.f, 1.f, 1.f}, x[3] = {1.f, 1.f, 1.f}, bias = 2048.f;
    float y = 0.f;
    kestrel::kernels::conv_reference_f16(g, w, &bias, x, 1, &y, 1, 1);
    CHECK(y == 2048.f);
    kestrel::kernels::conv_reference(g, w, &bias, x, 1, &y, 1, 1);
    CHECK(y == 2051.f);
    // Small integers add exactly: fp16 and fp32 agree.
    const float x2[3] = {3.f, -5.f, 7.f}, w2[3] = {2.f, 4.f, -1.f}, b2 = 9.f;
    kestrel::kernels::conv_reference_f16(g, w2, &b2, x2, 1, &y, 1, 1);
    CHECK(y == 9.f + 6.f - 20.f - 7.f);
  }

  TEST_CASE("precision fp16: halves between fp16 layers, on both kernel sets and any thread count") {
    const kestrel::ModelBuilder b = kt::branch_net();
    kestrel::Net f32;
    REQUIRE(kt::load(f32, b).ok());
    const kestrel::Mat in = kt::random_input(f32, "data", 11);
    const kestrel::Mat in_copy = in.clone();
    for (kestrel::KernelSet kernels : {kestrel::KernelSet::kReference, kestrel::KernelSet::kFast}) {
      INFO((kernels == kestrel::KernelSet::kFast ? "fast" : "reference"));
      kestrel::Net h;
      h.option().kernels = kernels;
      h.option().precision = kestrel::Precision::kFp16;
      REQUIRE(kt::load(h, b).ok());
      for (const char* blob : {"a", "b", "c", "d", "e", "f"}) {
        INFO("blob " << blob);
        const kestrel::Mat got = run_blob(h, in, blob);
        // "a" weighs the input: fp32 unless named (next test), its outputs rounded for
        // its readers, all fp16.
        CHECK(all_halves(got));
        CHECK(kt::same_bits(got, run_blob(h, in, blob, 3)));
        // Within fp16's error of fp32 (values of order 1, 8-36 terms).
        const kestrel::Mat want = run_blob(f32, in, blob);
        REQUIRE(got.total() == want.total());
        float worst = 0.f;
        for (size_t i = 0; i < got.total(); ++i) worst = std::max(worst, std::fabs(got.data[i] - want.data[i]));
        CHECK(worst < 0.03f);
      }
      // The caller's input is read, never rounded in place.
      CHECK(kt::same_bits(in, in_copy));
    }
  }

  // Why (net_precision.h, fp32_stem): products of halves are exact in fp32, so the
  // stem's sums are the same function under any fma or contraction; the ARM fp16
  // kernels then equal the oracle end to end (test_kernels_f16_binary.cpp).
  TEST_CASE("precision fp16: the fp32 stem reads its input and weights as halves") {
    const kestrel::ModelBuilder plain = stem_net(false), halves = stem_net(true);
    kestrel::Net f32, f32_halves;
    f32.option().kernels = f32_halves.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(kt::load(f32, plain).ok());
    REQUIRE(kt::load(f32_halves, halves).ok());
    const kestrel::Mat in = kt::random_input(f32, "data", 31);
    const kestrel::Mat in_h = rounded(in);
    // What the test tells apart: at fp32 the input's and the weights' rounding show.
    REQUIRE_FALSE(kt::same_bits(run_blob(f32, in, "a"), run_blob(f32, in_h, "a")));
    REQUIRE_FALSE(kt::same_bits(run_blob(f32, in_h, "a"), run_blob(f32_halves, in_h, "a")));
    const kestrel::Mat want = rounded(run_blob(f32_halves, in_h, "a"));
    for (kestrel::KernelSet kernels : {kestrel::KernelSet::kReference, kestrel::KernelSet::kFast}) {
      const bool ref = kernels == kestrel::KernelSet::kReference;
      INFO(std::string(ref ? "reference" : "fast"));
      kestrel::Net h;
      h.option().kernels = kernels;
      h.option().precision = kestrel::Precision::kFp16;
      REQUIRE(kt::load(h, plain).ok());
      for (int threads : {1, 3}) {
        INFO("threads " << threads);
        const kestrel::Mat a = run_blob(h, in, "a", threads);
        // The input is rounded before the stem reads it: its rounded copy gives the same.
        CHECK(kt::same_bits(a, run_blob(h, in_h, "a", threads)));
        CHECK(kt::same_bits(run_blob(h, in, "b", threads), run_blob(h, in_h, "b", threads)));
        // The reference stem is the fp32 reference on halves, its outputs rounded for b.
        // The fast kernels sum in their own order, and on ARMv8.2 hand the stem's fp32
        // outputs to b through a conversion (HalfConvert) that rounds them.
        if (ref) {
          CHECK(all_halves(a));
          CHECK(kt::same_bits(a, want));
        } else {
          CHECK(kt::relative_error(rounded(a), want) < 2e-3);
        }
      }
    }
  }

  TEST_CASE("precision overrides: per layer, reported to observers; unknown names fail the load") {
    const kestrel::ModelBuilder b = kt::branch_net();
    kestrel::Net h;
    h.option().kernels = kestrel::KernelSet::kReference;
    h.option().precision = kestrel::Precision::kFp16;
    h.option().layer_precision["c"] = kestrel::Precision::kFp32;
    REQUIRE(kt::load(h, b).ok());
    kestrel::Extractor ex = h.create_extractor();
    std::map<std::string, kestrel::Precision> seen;
    ex.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = e.precision; });
    const kestrel::Mat in = kt::random_input(h, "data", 4);
    REQUIRE(ex.input("data", in).ok());
    kestrel::Mat c, f;
    REQUIRE(ex.extract("c", c).ok());
    c = c.clone();  // c lives inside d (zero-copy concat), which e rewrites in place
    REQUIRE(ex.extract("f", f).ok());
    CHECK(seen.at("a") == kestrel::Precision::kFp32);  // it weighs the network input
    CHECK(seen.at("b") == kestrel::Precision::kFp16);
    CHECK(seen.at("c") == kestrel::Precision::kFp32);
    CHECK(seen.at("f") == kestrel::Precision::kFp16);
    // c computes in fp32; its one reader (the concat d) in fp16, for which it rounds.
    CHECK(all_halves(c));
    CHECK(all_halves(f));

    // Named, the layer weighing the input computes in fp16 too; a layer reading the
    // input through one that does not weigh (a ReLU) is still the stem.
    kestrel::Net named;
    named.option().kernels = kestrel::KernelSet::kReference;
    named.option().precision = kestrel::Precision::kFp16;
    named.option().layer_precision["a"] = kestrel::Precision::kFp16;
    REQUIRE(kt::load(named, b).ok());
    kestrel::Extractor nx = named.create_extractor();
    nx.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = e.precision; });
    REQUIRE(nx.input("data", in).ok());
    kestrel::Mat a;
    REQUIRE(nx.extract("a", a).ok());
    CHECK(seen.at("a") == kestrel::Precision::kFp16);
    CHECK(all_halves(a));
    kestrel::ModelBuilder r;
    r.add_input("data", {4, 8, 8});
    r.add_layer("Activation", "r", {"data"}, {"r"}, kt::relu_params());
    kt::add_conv(r, "s", "r", 4, 4);
    kt::add_conv(r, "t", "s", 4, 4);
    r.add_output("t");
    kestrel::Net rn;
    rn.option().kernels = kestrel::KernelSet::kReference;
    rn.option().precision = kestrel::Precision::kFp16;
    REQUIRE(kt::load(rn, r).ok());
    kestrel::Extractor rx = rn.create_extractor();
    rx.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = e.precision; });
    REQUIRE(rx.input("data", in).ok());
    kestrel::Mat t;
    REQUIRE(rx.extract("t", t).ok());
    CHECK(seen.at("s") == kestrel::Precision::kFp32);
    CHECK(seen.at("t") == kestrel::Precision::kFp16);

    kestrel::Net bad;
    bad.option().layer_precision["no_such_layer"] = kestrel::Precision::kFp16;
    const kestrel::Status s = kt::load(bad, b);
    CHECK(s.code() == kestrel::ErrorCode::kInvalidArgument);
    CHECK(s.message().find("no_such_layer") != std::string::npos);
    CHECK(std::string(kestrel::precision_name(kestrel::Precision::kFp16)) == "fp16");
  }

  TEST_CASE("precision fp16 refuses NaN, infinite and out-of-range weights by name; fp32 keeps them") {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e6f}) {
      INFO("weight value " << bad);
      kestrel::ModelBuilder b = kt::branch_net();
      auto& w = *b.model().weights[2];  // layer b's weight
      std::memcpy(w.data.data() + 4 * sizeof(float), &bad, sizeof bad);
      kestrel::Net net;
      REQUIRE(kt::load(net, kt::branch_net()).ok());  // a model that stays loaded
      net.option().precision = kestrel::Precision::kFp16;
      const kestrel::Status s = kt::load(net, b);
      CHECK(s.code() == kestrel::ErrorCode::kInvalidArgument);
      CHECK(s.message().find("'b'") != std::string::npos);
      CHECK(s.message().find("fp16") != std::string::npos);
      CHECK(!net.empty());  // the previous model is kept
      kestrel::Net f32;
      CHECK(kt::load(f32, b).ok());
    }
  }
}

// The exact model needs 128-bit integers (64-bit targets; armv7 has none).
#if defined(__SIZEOF_INT128__)
namespace {

float h2f(uint16_t h) { return kestrel::half_to_float(h); }

// a * b + c rounded once to a half, in integers: every half is an integer times 2^-24,
// so the exact value is N * 2^-48 with N a 128-bit integer.
uint16_t exact_fma(uint16_t ha, uint16_t hb, uint16_t hc) {
  auto units = [](uint16_t h) {  // the half as an integer count of 2^-24
    const int e = (h >> 10) & 0x1f;
    const __int128 m = e ? (h & 0x3ff) | 0x400 : (h & 0x3ff);
    const __int128 v = e ? m << (e - 1) : m;
    return (h & 0x8000) ? -v : v;
  };
  const __int128 n = units(ha) * units(hb) + units(hc) * (static_cast<__int128>(1) << 24);  // units of 2^-48
  if (n == 0) {
    // Exact zero: -0 only when both addends are -0 (round to nearest).
    const bool neg_prod = ((ha ^ hb) & 0x8000) != 0;
    return (neg_prod && (hc & 0x8000)) ? 0x8000 : 0;
  }
  const bool neg = n < 0;
  const unsigned __int128 mag = neg ? -static_cast<unsigned __int128>(n) : n;
  // Quantum of the result: 2^(msb - 10) units for normal halves, 2^24 units (2^-24) below.
  int msb = 127;
  while (!((mag >> msb) & 1)) --msb;
  const int shift = std::max(msb - 10, 24);
  unsigned __int128 q = mag >> shift;
  const unsigned __int128 rem = mag - (q << shift), half = static_cast<unsigned __int128>(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  // q * 2^(shift - 48) as a half: the exponent field is shift - 23 for q in [2^10, 2^11).
  int field = shift - 23;
  if (q == 0x800) q >>= 1, ++field;  // rounding carried into the next binade
  uint16_t bits;
  if (q < 0x400) {
    bits = static_cast<uint16_t>(q);  // subnormal (shift 24)
  } else if (field >= 31) {
    bits = 0x7c00;
  } else {
    bits = static_cast<uint16_t>((field << 10) | static_cast<int>(q & 0x3ff));
  }
  return static_cast<uint16_t>(bits | (neg ? 0x8000 : 0));
}

}  // namespace

TEST_SUITE("precision") {
  TEST_CASE("f16::fma rounds a * b + c once, as integers say") {
    std::mt19937 rng(26);
    // Finite halves of every exponent, subnormals included, and products that cancel.
    auto finite = [&] {
      for (;;) {
        const uint16_t h = static_cast<uint16_t>(rng());
        if (((h >> 10) & 0x1f) != 0x1f) return h;
      }
    };
    int checked = 0;
    for (int i = 0; i < 300000; ++i) {
      const uint16_t a = finite(), b = finite();
      uint16_t c = finite();
      if (i % 3 == 0) c = kestrel::float_to_half(-h2f(a) * h2f(b));  // near-cancellation
      if (((c >> 10) & 0x1f) == 0x1f) c = finite();                  // unless that overflowed
      const uint16_t want = exact_fma(a, b, c);
      const float got = kestrel::kernels::f16::fma(h2f(a), h2f(b), h2f(c));
      if (kestrel::float_to_half(got) != want) {
        FAIL_CHECK("fma(" << h2f(a) << ", " << h2f(b) << ", " << h2f(c) << "): got " << got << ", want "
                          << h2f(want));
        break;
      }
      ++checked;
    }
    CHECK(checked == 300000);
    // A tie that rounding the double sum first would break the wrong way: 2049 = 2048 + 1
    // is halfway between the halves 2048 and 2050; a tiny product decides it.
    CHECK(kestrel::kernels::f16::fma(1.f, 2049.f - 2048.f, 2048.f) == 2048.f);  // tie to even
    CHECK(kestrel::kernels::f16::fma(1.f + 1.f / 1024, 1.f, 2048.f) == 2050.f);  // just above the tie
    CHECK(std::isinf(kestrel::kernels::f16::fma(65504.f, 2.f, 0.f)));
  }
}
#endif
