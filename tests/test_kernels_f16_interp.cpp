// fp16 Interp: the NEON kernel on pack8 halves (f16_interp_pack8_neonfp16) against its
// binary16 twin interp_reference_f16, bit for bit, NaN payloads included; the twin
// against the fp32 interp (within fp16's error) and hand-computed values, so that it is
// not wrong in the same way as the kernel; and Interp layers of an fp16 net.
// Swept: every coordinate mapping (nearest PyTorch / half-pixel / asymmetric; bilinear
// align_corners, PyTorch's half-pixel, asymmetric, half-pixel), upsampling x2 (MoveNet's
// 64 channels 6->12, 32 12->24, 24 24->48), odd sizes, 1xN and Nx1 maps, downsampling,
// the identity; 1 to 4 channel blocks; 1 and 4 threads. Inputs: random values; a mix of quiet NaNs of
// both signs with payloads, signalling NaNs, +0 and -0, values up to 65504 of both signs
// (differences overflow to inf) and infinities; +-0 alone; NaN alone. The inputs'
// channel padding is NaN (a kernel reading it shows) and the outputs' holds a sentinel
// (one writing it shows). Where the CPU has no fp16 arithmetic (cortex-a72, x86) no
// fp16 Interp kernel may be selected, and the cases say so.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "f16_test_util.h"
#include "kernel_test_util.h"
#include "kernels/f16_arith.h"
#include "kernels/interp_kernels.h"
#include "kernels/isa.h"
#include "test_util.h"

namespace {

using kestrel::fb::InterpCoords;
using kestrel::fb::InterpMode;
using kestrel::kernels::InterpGeometry;
using kt::Fill;
using kt::kFills;
using kestrel::kernels::InterpKernel;
using kestrel::kernels::InterpTap;

constexpr int kLanes = 8;
constexpr uint16_t kNanHalf = 0x7e00;
constexpr uint16_t kSentinel = 0x7e5a;  // a NaN payload no input of these cases has

bool fp16_arith() { return kt::fp16_kernels_run(); }

// A coordinate mapping of InterpParam.
struct Mapping {
  InterpMode mode;
  bool align_corners;
  InterpCoords coords;
  const char* name;
};

const Mapping kMappings[] = {
    {InterpMode::Nearest, false, InterpCoords::PyTorch, "nearest"},
    {InterpMode::Nearest, false, InterpCoords::HalfPixel, "nearest half-pixel"},
    {InterpMode::Nearest, false, InterpCoords::Asymmetric, "nearest asymmetric"},
    {InterpMode::Bilinear, true, InterpCoords::PyTorch, "bilinear align_corners"},
    {InterpMode::Bilinear, false, InterpCoords::PyTorch, "bilinear"},
    {InterpMode::Bilinear, false, InterpCoords::Asymmetric, "bilinear asymmetric"},
    {InterpMode::Bilinear, false, InterpCoords::HalfPixel, "bilinear half-pixel"},
};

// A resize of `channels` planes and its taps, made as the layer makes them.
struct Resize {
  int channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  Mapping mapping{};
  std::vector<InterpTap> rows, columns;

  Resize(int c, int ih, int iw, int oh, int ow, const Mapping& m)
      : channels(c), in_h(ih), in_w(iw), out_h(oh), out_w(ow), mapping(m) {
    using kestrel::kernels::interp_tap;
    for (int i = 0; i < oh; ++i) rows.push_back(interp_tap(m.mode, m.align_corners, m.coords, i, ih, oh));
    for (int i = 0; i < ow; ++i) columns.push_back(interp_tap(m.mode, m.align_corners, m.coords, i, iw, ow));
  }

  // Planar fp32 operands; pack8 halves where f16.
  InterpGeometry geometry(bool f16) const {
    InterpGeometry g;
    g.channels = channels;
    g.in_h = in_h;
    g.in_w = in_w;
    g.out_h = out_h;
    g.out_w = out_w;
    g.bilinear = mapping.mode == InterpMode::Bilinear;
    g.rows = rows.data();
    g.columns = columns.data();
    g.f16 = f16;
    g.in_pack = g.out_pack = f16 ? kLanes : 1;
    return g;
  }

  std::string describe() const {
    std::ostringstream o;
    o << mapping.name << " " << channels << "x" << in_h << "x" << in_w << " -> " << out_h << "x" << out_w;
    return o.str();
  }
};

std::vector<uint16_t> make_input(Fill fill, size_t n, std::mt19937& rng) {
  return kt::random_half_fill(fill, n, rng, /*signalling=*/true);
}

std::string hex(uint32_t bits, int digits) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%0*x", digits, static_cast<unsigned>(bits));
  return s;
}

// The twin on the widened halves x (planar), its results as floats.
std::vector<float> twin(const Resize& r, const std::vector<float>& x, int threads) {
  std::vector<float> out(static_cast<size_t>(r.channels) * r.out_h * r.out_w);
  kestrel::kernels::interp_reference_f16(r.geometry(false), x.data(), static_cast<size_t>(r.in_h) * r.in_w,
                                         out.data(), static_cast<size_t>(r.out_h) * r.out_w, threads);
  return out;
}

// Runs k on r (pack8 halves in and out) at 1 and 4 threads against the twin (CHECKs).
void check_against_twin(const InterpKernel* k, const Resize& r, Fill fill, std::mt19937& rng) {
  const InterpGeometry g = r.geometry(true);
  const int in_plane = r.in_h * r.in_w, out_plane = r.out_h * r.out_w;
  const std::vector<uint16_t> x = make_input(fill, static_cast<size_t>(r.channels) * in_plane, rng);
  std::vector<float> wide(x.size());
  for (size_t i = 0; i < x.size(); ++i) wide[i] = kestrel::half_to_float(x[i]);
  const std::vector<float> ref = twin(r, wide, 1);
  CHECK(kt::first_difference(twin(r, wide, 4), ref) == -1);

  const size_t in_cstep = kt::block_units(r.in_w, r.in_h), out_cstep = kt::block_units(r.out_w, r.out_h);
  const std::vector<uint16_t> xin = kt::to_pack8_bits(x, r.channels, in_plane, in_cstep, kNanHalf);
  for (int threads : {1, 4}) {
    std::vector<uint16_t> y(out_cstep * 2 * (r.channels / kLanes) + 64, kSentinel);
    kestrel::kernels::KernelContext ctx;
    ctx.num_threads = threads;
    k->run(g, reinterpret_cast<const float*>(xin.data()), in_cstep, reinterpret_cast<float*>(y.data()), out_cstep,
           ctx);
    const std::vector<float> got = kt::from_pack8(y, r.channels, out_plane, out_cstep);
    const long first = kt::first_difference(got, ref);
    bool padding_kept = true;
    for (int b = 0; b < r.channels / kLanes; ++b) {
      for (size_t i = b * out_cstep * 2 + static_cast<size_t>(out_plane) * kLanes; i < (b + 1) * out_cstep * 2; ++i) {
        padding_kept = padding_kept && y[i] == kSentinel;
      }
    }
    for (size_t i = y.size() - 64; i < y.size(); ++i) padding_kept = padding_kept && y[i] == kSentinel;
    const std::string what = std::string(k->name) + " " + r.describe() + " fill " +
                             std::to_string(static_cast<int>(fill)) + " threads " + std::to_string(threads);
    INFO(what);
    if (first >= 0) {
      const long c = first / out_plane, p = first % out_plane;
      const uint16_t bits = y[(c / kLanes) * out_cstep * 2 + p * kLanes + c % kLanes];
      uint32_t want;
      std::memcpy(&want, &ref[first], sizeof want);
      INFO("channel " << c << " pixel " << p << ": got half " << hex(bits, 4) << ", want the float " << hex(want, 8));
      CHECK(first == -1);
    }
    CHECK(padding_kept);
  }
}

// The kernel the registry picks for r as pack8 halves; it must be an fp16 one.
const InterpKernel* selected(const Resize& r) {
  const InterpKernel* k = kestrel::kernels::select_interp_kernel(r.geometry(true), kestrel::kernels::active_isa());
  if (k) CHECK(k->f16);
  return k;
}

// False (and a message) where this CPU runs no fp16 Interp kernel: then none may be
// selected. An aarch64 build on a CPU with fp16 arithmetic must have it.
bool have_kernel(const char* what) {
  if (fp16_arith() && kestrel::kernels::active_isa() == kestrel::kernels::Isa::kNeon) return true;
  for (const Mapping& m : kMappings) CHECK(selected(Resize(16, 6, 6, 12, 12, m)) == nullptr);
  MESSAGE("no fp16 arithmetic on this CPU (active features: '" << std::string(kestrel::kernels::active_features())
                                                                << "'): no fp16 Interp kernel selected; "
                                                                << std::string(what) << " skipped");
  return false;
}

struct Size {
  int in_h, in_w, out_h, out_w;
};

const Size kSizes[] = {
    {6, 6, 12, 12}, {12, 12, 24, 24}, {24, 24, 48, 48},  // MoveNet
    {3, 5, 7, 9},   {5, 3, 9, 4},     {1, 1, 3, 5},   {1, 7, 1, 14}, {1, 6, 2, 13}, {7, 1, 13, 3},
    {5, 3, 2, 2},   {9, 9, 4, 5},     {8, 11, 3, 1},  {4, 6, 4, 6},  {2, 2, 4, 4},
};

kestrel::fb::LayerParamsUnion interp_params(const Mapping& m, int out_h, int out_w, float scale = 0.f) {
  kestrel::fb::InterpParamT p;
  p.mode = m.mode;
  p.align_corners = m.align_corners;
  p.coords = m.coords;
  p.output_h = out_h;
  p.output_w = out_w;
  p.scale_h = p.scale_w = scale;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// 1x1 layers (the fp16 1x1 kernel) around MoveNet's upsampling (bilinear x2, PyTorch's
// half-pixel coordinates), a nearest x2 and an align_corners resize to an odd size.
kestrel::ModelBuilder interp_chain() {
  kestrel::ModelBuilder b;
  b.add_input("data", {16, 6, 5});
  kt::add_conv(b, "a", "data", 16, 24, 1);
  b.add_layer("Interp", "i1", {"a"}, {"i1"}, interp_params(kMappings[4], 0, 0, 2.f));
  kt::add_conv(b, "b", "i1", 24, 16, 1);
  b.add_layer("Interp", "i2", {"b"}, {"i2"}, interp_params(kMappings[0], 0, 0, 2.f));
  kt::add_conv(b, "c", "i2", 16, 16, 1);
  b.add_layer("Interp", "i3", {"c"}, {"i3"}, interp_params(kMappings[3], 17, 9));
  kt::add_conv(b, "d", "i3", 16, 8, 1);
  b.add_output("d");
  return b;
}

// A planar map's values, channel padding left out.
std::vector<float> planar(const kestrel::Mat& m) {
  std::vector<float> v;
  for (int q = 0; q < m.c; ++q) v.insert(v.end(), m.channel(q), m.channel(q) + static_cast<size_t>(m.w) * m.h);
  return v;
}

// The largest |x - y| of two planar maps of one shape, channel padding left out.
float worst_difference(const kestrel::Mat& x, const kestrel::Mat& y) {
  float worst = 0.f;
  const size_t plane = static_cast<size_t>(x.w) * x.h;
  for (int q = 0; q < x.c; ++q) {
    for (size_t i = 0; i < plane; ++i) worst = std::max(worst, std::fabs(x.channel(q)[i] - y.channel(q)[i]));
  }
  return worst;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("fp16 interp: interp_reference_f16 rounds as binary16 and stays within fp16 error of the fp32 interp") {
  // Hand-computed: [1, 2] resized to 4 (half-pixel) is [1, 1.25, 1.75, 2]; [1, 3] by
  // align_corners to 4 reads at 0, 1/3, 2/3, 1, weights rounded to halves: 1/3 is
  // 0x3555 = 0.333251953125 and 1 + 2 * that is 1.66650390625, rounded to 1.666015625.
  const Resize up(1, 1, 2, 1, 4, kMappings[4]);
  const std::vector<float> ramp = twin(up, {1.f, 2.f}, 1);
  CHECK(ramp == std::vector<float>{1.f, 1.25f, 1.75f, 2.f});
  const Resize corners(1, 1, 2, 1, 4, kMappings[3]);
  const std::vector<float> thirds = twin(corners, {1.f, 3.f}, 1);
  CHECK(thirds[1] == 1.666015625f);
  CHECK(thirds[1] != kestrel::kernels::f16::round(1.f + 2.f / 3.f));  // the weight's rounding shows
  CHECK(thirds[3] == 3.f);

  // binary16's range: 60000 - -60000 overflows, so resizing a column [60000, -60000]
  // to 4 rows blends to -inf where fp32 says 30000 and -30000, and its first row (a
  // weight of 0: clamped) is 0 * -inf, the default NaN.
  const std::vector<float> wide = twin(Resize(1, 2, 1, 4, 1, kMappings[4]), {60000.f, -60000.f}, 1);
  uint32_t bits;
  std::memcpy(&bits, &wide[0], sizeof bits);
  CHECK(bits == 0x7fc00000u);  // half 0x7e00, widened
  CHECK(wide[1] == -INFINITY);
  CHECK(wide[2] == -INFINITY);
  CHECK(wide[3] == -60000.f);
  // NaNs: a signalling one first, quieted; else the first quiet one, payload kept.
  const float quiet = kestrel::half_to_float(0xfe05), signalling = kestrel::half_to_float(0x7c05);
  const std::vector<float> nans = twin(up, {quiet, signalling}, 1);
  for (int x = 0; x < 4; ++x) {
    std::memcpy(&bits, &nans[x], sizeof bits);
    // Columns 0-2 blend quiet (the addend) with the quieted signalling NaN; column 3
    // reads the signalling one alone.
    CHECK(bits == (x < 3 ? 0xffc0a000u : 0x7fc0a000u));
  }
  const Resize nearest(1, 1, 2, 1, 4, kMappings[0]);
  const std::vector<float> copied = twin(nearest, {-0.f, signalling}, 1);
  CHECK(std::signbit(copied[0]));
  std::memcpy(&bits, &copied[3], sizeof bits);
  uint32_t want;
  std::memcpy(&want, &signalling, sizeof want);
  CHECK(bits == want);

  // Random maps of every mapping and size: within a few roundings of max |input|.
  std::mt19937 rng(81);
  int n = 0;
  for (const Mapping& m : kMappings) {
    for (const Size& s : kSizes) {
      const Resize r(3, s.in_h, s.in_w, s.out_h, s.out_w, m);
      const std::vector<float> x = kt::random_halves(static_cast<size_t>(3) * s.in_h * s.in_w, 8.f, rng);
      const std::vector<float> half = twin(r, x, 1);
      std::vector<float> full(half.size());
      kestrel::kernels::interp_reference(r.geometry(false), x.data(), static_cast<size_t>(s.in_h) * s.in_w,
                                         full.data(), static_cast<size_t>(s.out_h) * s.out_w, 1);
      float biggest = 0.f, worst = 0.f;
      for (float v : x) biggest = std::max(biggest, std::fabs(v));
      for (size_t i = 0; i < half.size(); ++i) {
        worst = std::max(worst, std::fabs(half[i] - full[i]));
        CHECK(kestrel::is_exact_half(half[i]));
      }
      INFO(r.describe() << ": worst " << worst << " of max |x| " << biggest);
      // Five roundings of 2^-11 relative, and the weights': 2^-8 of max |x| is ample.
      CHECK(worst <= biggest / 256.f);
      if (m.mode == InterpMode::Nearest) CHECK(worst == 0.f);
      ++n;
    }
  }
  MESSAGE(n << " resizes: the fp16 twin within 2^-8 of max |x| of the fp32 interp");
}

TEST_CASE("fp16 interp: the NEON kernel equals interp_reference_f16 bit for bit") {
  if (!have_kernel("the kernel sweep")) return;
  std::mt19937 rng(82);
  const int channel_counts[] = {8, 16, 24, 32};
  int n = 0;
  for (const Mapping& m : kMappings) {
    for (const Size& s : kSizes) {
      for (Fill fill : kFills) {
        const Resize r(channel_counts[n % 4], s.in_h, s.in_w, s.out_h, s.out_w, m);
        const InterpKernel* k = selected(r);
        REQUIRE(k != nullptr);
        CHECK(std::string(k->name) == "f16_interp_pack8_neonfp16");
        check_against_twin(k, r, fill, rng);
        ++n;
      }
    }
  }
  // MoveNet's three, with their channels.
  for (const Resize& r : {Resize(64, 6, 6, 12, 12, kMappings[4]), Resize(32, 12, 12, 24, 24, kMappings[4]),
                          Resize(24, 24, 24, 48, 48, kMappings[4])}) {
    check_against_twin(selected(r), r, Fill::kRandom, rng);
    ++n;
  }
  MESSAGE(n << " resizes x 2 thread counts");
}

TEST_CASE("fp16 interp: the kernel takes only pack8 halves, and no fp32 geometry gets it") {
  const Resize r(16, 6, 6, 12, 12, kMappings[4]);
  for (const InterpKernel* k : kestrel::kernels::interp_kernels()) {
    if (!k->f16) continue;
    INFO(std::string(k->name));
    CHECK(k->blocked_lanes == kLanes);
    InterpGeometry g = r.geometry(true);
    CHECK(k->supports(g));
    g.channels = 12;  // not whole blocks
    CHECK_FALSE(k->supports(g));
    g.channels = 16;
    g.out_pack = 1;
    CHECK_FALSE(k->supports(g));
    g.out_pack = kLanes;
    g.f16 = false;
    CHECK_FALSE(k->supports(g));
  }
  for (int pack : {1, 4, 8}) {
    InterpGeometry g = r.geometry(false);
    g.in_pack = g.out_pack = pack;
    const InterpKernel* k = kestrel::kernels::select_interp_kernel(g, kestrel::kernels::active_isa());
    CHECK(k == nullptr);  // no fp32 Interp kernels yet
  }
  if (!fp16_arith()) MESSAGE("no fp16 arithmetic on this CPU: no fp16 Interp kernel runs");
}

TEST_CASE("fp16 interp: Interp layers of an fp16 net run on halves, equal to the fp16 oracle bit for bit") {
  const kestrel::ModelBuilder builder = interp_chain();
  kestrel::Net oracle, fast;
  oracle.option().kernels = kestrel::KernelSet::kReference;
  for (kestrel::Net* net : {&oracle, &fast}) {
    net->option().precision = kestrel::Precision::kFp16;
    // Named, as the stem (which weighs the input) stays fp32 by default: every layer
    // computes in fp16.
    net->option().layer_precision["a"] = kestrel::Precision::kFp16;
    REQUIRE(kt::load(*net, builder).ok());
  }
  const kestrel::Mat in = kt::random_input(fast, "data", 9);

  // Each Interp layer computes the twin on the halves it reads: the oracle's, and the
  // fast net's where the CPU has fp16 arithmetic.
  struct Layer {
    const char* in;
    const char* out;
    Resize resize;
  };
  const Layer layers[] = {
      {"a", "i1", Resize(24, 6, 5, 12, 10, kMappings[4])},
      {"b", "i2", Resize(16, 12, 10, 24, 20, kMappings[0])},
      {"c", "i3", Resize(16, 24, 20, 17, 9, kMappings[3])},
  };
  for (kestrel::Net* net : {&oracle, &fast}) {
    if (net == &fast && !fp16_arith()) continue;
    for (const Layer& l : layers) {
      const std::string what = std::string(net == &oracle ? "oracle " : "fast ") + l.out;
      INFO(what);
      kestrel::Extractor ex = net->create_extractor();
      REQUIRE(ex.input("data", in).ok());
      kestrel::Mat x, y;
      REQUIRE(ex.extract(l.in, x).ok());
      REQUIRE(ex.extract(l.out, y).ok());
      REQUIRE(y.shape() == kestrel::Shape::make3(l.resize.out_w, l.resize.out_h, l.resize.channels));
      CHECK(kt::first_difference(planar(y), twin(l.resize, planar(x), 1)) == -1);
    }
  }

  std::map<std::string, std::string> kernel;
  for (int threads : {1, 4}) {
    for (const char* blob : {"a", "i1", "b", "i2", "c", "i3", "d"}) {
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
      if (fp16_arith()) {
        CHECK(kt::same_bits(got, want));
      } else {
        // fp32 arithmetic on halves, rounded: within fp16's error.
        CHECK(worst_difference(got, want) < 0.05f);
      }
    }
  }
  const char* const interps[] = {"i1", "i2", "i3"};
  if (!fp16_arith()) {
    for (const char* l : interps) CHECK_MESSAGE(kernel[l].rfind("f16_", 0) != 0, l << " ran " << kernel[l]);
    MESSAGE("no fp16 arithmetic on this CPU: the Interp layers stay fp32 on halves");
    return;
  }
  for (const char* l : interps) {
    CHECK_MESSAGE(kernel[l] == "f16_interp_pack8_neonfp16[h8>h8]", l << " ran " << kernel[l]);
  }
  // Halves from layer to layer: no conversion between the input's and the output's.
  for (const char* l : {"a", "i1", "b", "i2", "c", "i3"}) {
    CHECK(kernel.count(std::string(l) + "@fp16") == 0);
    CHECK(kernel.count(std::string(l) + "@fp32") == 0);
  }
}

}  // TEST_SUITE
