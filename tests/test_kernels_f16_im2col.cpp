// The fp16 im2col kernel on pack8 halves (f16_conv_im2col_pack8_neonfp16: any dense
// window, im2col + the 1x1 kernel's 16x8 tiles) against the fp16 reference, bit for bit
// (where a window overhangs the map, up to the sign of a zero: the kernel multiplies the
// padding's zeros). Swept: windows 1x1 (padded or dilated: the 1x1 kernel declines them),
// 3x3, 5x5, 1x3, 3x1, dilation 2; strides 1 and 2; pads 0, 1, 2 and TF's "same" (0
// before, 1 after); widths 1-17 (short last tiles, tiles across rows), heights 1-6; 1 to
// 3 input blocks and 1 to 5 output blocks (last panel of 8 channels); every activation,
// with and without bias; 1 and 4 threads; and MobileNet-SSD's extra layers. NaN in the
// input's channel padding and in the scratch shows a read of either; the output's
// padding must keep its sentinel. The registry must keep the 1x1, depthwise and stem
// kernels' geometries for them. Where the CPU has no fp16 arithmetic no fp16 kernel is
// selected, and the cases say so.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "f16_test_util.h"
#include "kernel_test_util.h"
#include "kernels/f16_reference.h"
#include "kernels/isa.h"

namespace {

using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

constexpr int kLanes = 8;
constexpr uint16_t kNanHalf = 0x7e00;
constexpr const char* kName = "f16_conv_im2col_pack8_neonfp16";

using kt::conv;
using kt::overhangs;
using kt::Window;

std::string describe(const ConvGeometry& g) {
  return std::to_string(g.in_c) + ">" + std::to_string(g.out_c) + " " + std::to_string(g.in_h) + "x" +
         std::to_string(g.in_w) + " -> " + std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + " window " +
         std::to_string(g.kh) + "x" + std::to_string(g.kw) + " dilation " + std::to_string(g.dh) + " stride " +
         std::to_string(g.sh) + " pad top " + std::to_string(g.pad_top) + " left " + std::to_string(g.pad_left) +
         " act " + std::to_string(static_cast<int>(g.act.type)) + " (" + std::to_string(g.act.alpha) + ", " +
         std::to_string(g.act.beta) + ") bias " + std::to_string(g.bias);
}

struct Operands {
  std::vector<float> x, wt, b;
};

Operands random_operands(const ConvGeometry& g, std::mt19937& rng) {
  return {kt::random_halves(static_cast<size_t>(g.in_c) * g.in_h * g.in_w, 2.f, rng),
          kt::random_halves(static_cast<size_t>(g.out_c) * g.in_c * g.kh * g.kw, 0.5f, rng),
          kt::random_halves(g.out_c, 1.f, rng)};
}

const ConvKernel* f16_kernel(const char* name) {
  for (const ConvKernel* k : kt::f16_kernels()) {
    if (std::strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

const ConvKernel* select(const ConvGeometry& g) {
  return kestrel::kernels::select_conv_kernel(g, kestrel::kernels::active_isa());
}

// The registry's first fp16 kernel that claims g is selected: this kernel where no fp16
// kernel before it claims g. True if it is this one.
bool check_selection(const ConvKernel* k, const ConvGeometry& g) {
  const ConvKernel* first = nullptr;
  for (const ConvKernel* other : kt::f16_kernels()) {
    if (other->supports(g)) {
      first = other;
      break;
    }
  }
  REQUIRE(first != nullptr);
  CHECK(select(g) == first);
  return first == k;
}

// Runs k on g at 1 and 4 threads against conv_reference_f16 (CHECKs).
void check_against_reference(const ConvKernel* k, const ConvGeometry& g, const Operands& op) {
  INFO(describe(g));
  REQUIRE(k->supports(g));
  const int in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  std::vector<float> want(static_cast<size_t>(g.out_c) * out_plane);
  kestrel::kernels::conv_reference_f16(g, op.wt.data(), g.bias ? op.b.data() : nullptr, op.x.data(), in_plane,
                                       want.data(), out_plane, 1);
  kestrel::Mat packed;
  REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
  k->pack(g, op.wt.data(), g.bias ? op.b.data() : nullptr, packed.data);
  const size_t in_cstep = kt::block_units(g.in_w, g.in_h), out_cstep = kt::block_units(g.out_w, g.out_h);
  const std::vector<uint16_t> xin = kt::to_pack8(op.x, g.in_c, in_plane, in_cstep, kNanHalf);
  for (int threads : kt::kernel_thread_counts()) {
    INFO(threads << " threads");
    std::vector<uint16_t> y(out_cstep * 2 * (g.out_c / kLanes) + 64, kNanHalf);
    kt::KernelScratch scratch;
    const kestrel::kernels::KernelContext ctx =
        scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
    // The kernel must set up whatever scratch it reads.
    std::memset(scratch.storage.data(), 0x7e, scratch.storage.size() * sizeof(float));
    k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep, reinterpret_cast<float*>(y.data()),
           out_cstep, ctx);
    const std::vector<float> got = kt::from_pack8(y, g.out_c, out_plane, out_cstep);
    const long at = overhangs(g) ? kt::first_difference_but_zero_sign(got, want) : kt::first_difference(got, want);
    INFO("first difference at channel " << (at < 0 ? -1 : at / out_plane) << " pixel " << (at < 0 ? -1 : at % out_plane)
                                        << ": " << (at < 0 ? 0.f : got[at]) << " for " << (at < 0 ? 0.f : want[at]));
    CHECK(at == -1);
    bool padding_kept = true;
    for (int j = 0; j < g.out_c / kLanes; ++j) {
      const size_t block = static_cast<size_t>(j) * out_cstep * 2;
      for (size_t i = block + static_cast<size_t>(out_plane) * kLanes; i < block + out_cstep * 2; ++i) {
        padding_kept = padding_kept && y[i] == kNanHalf;
      }
    }
    for (size_t i = y.size() - 64; i < y.size(); ++i) padding_kept = padding_kept && y[i] == kNanHalf;
    CHECK(padding_kept);
  }
}

kestrel::ActivationSpec activation(int i) {
  const kestrel::ActivationSpec acts[] = {
      {ActivationType::None, 0.f, 0.f},      {ActivationType::ReLU, 0.f, 0.f},
      {ActivationType::Clip, 0.f, 6.f},      {ActivationType::Clip, -0.25f, 0.5f},
      {ActivationType::LeakyReLU, 0.1f, 0.f}, {ActivationType::Clip, -1.f, -0.f},  // min(+0, -0) keeps +0
  };
  return acts[i % 6];
}

// The kernel, or nullptr where this CPU has no fp16 arithmetic (then no fp16 kernel is
// selected for `probe`, checked here, and the case says so).
const ConvKernel* kernel_or_none(const ConvGeometry& probe) {
  if (!kt::fp16_kernels_run()) {
    CHECK(select(probe) == nullptr);
    MESSAGE("no fp16 arithmetic here (" << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa()))
                                         << "): no fp16 kernel is selected");
    return nullptr;
  }
  const ConvKernel* k = f16_kernel(kName);
  REQUIRE(k != nullptr);
  CHECK(select(probe) == k);
  return k;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("fp16 arithmetic: im2col pack8 kernel equals the fp16 reference on every window, stride and pad") {
    const ConvKernel* k = kernel_or_none(conv(16, 16, 5, 5, {3, 3, 1, 1, 1, 1, 1, 1}, 1));
    if (k == nullptr) return;
    std::mt19937 rng(1408);
    const Window windows[] = {
        {1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 2, 2, 0, 0, 0, 0}, {1, 1, 1, 1, 0, 0, 1, 1}, {3, 3, 1, 1, 0, 0, 0, 0},
        {3, 3, 1, 1, 1, 1, 1, 1}, {3, 3, 1, 1, 2, 2, 2, 2}, {3, 3, 1, 1, 0, 0, 1, 1}, {5, 5, 1, 1, 2, 2, 2, 2},
        {5, 5, 1, 1, 0, 1, 2, 0}, {1, 3, 1, 1, 0, 1, 0, 1}, {3, 1, 1, 1, 1, 0, 1, 0}, {3, 3, 2, 2, 2, 2, 2, 2},
        {3, 3, 2, 2, 0, 0, 0, 0},
    };
    const int in_cs[] = {8, 16, 24}, out_cs[] = {8, 16, 24, 40};
    int n = 0, skipped = 0, elsewhere = 0;
    for (int s = 1; s <= 2; ++s) {
      for (const Window& win : windows) {
        for (int w : {1, 2, 3, 5, 8, 9, 16, 17}) {
          for (int h : {1, 2, 3, 6}) {
            ConvGeometry g = conv(in_cs[n % 3], out_cs[(n / 3) % 4], h, w, win, s);
            if (g.out_h < 1 || g.out_w < 1) {
              ++skipped;
              continue;
            }
            g.act = activation(n / 12);
            g.bias = (n / 72) % 2 == 0;  // every triple of channels, activation and bias
            ++n;
            if (!check_selection(k, g)) ++elsewhere;
            check_against_reference(k, g, random_operands(g, rng));
          }
        }
      }
    }
    MESSAGE(std::string(k->name) << ": " << n << " geometries, each at 1 and 4 threads (" << elsewhere
                                 << " selected the 1x1 kernel; " << skipped << " windows too large)");
  }

  TEST_CASE("fp16 arithmetic: im2col pack8 kernel equals the fp16 reference on MobileNet-SSD's extra layers") {
    const ConvKernel* k = kernel_or_none(conv(256, 512, 10, 10, {3, 3, 1, 1, 1, 1, 1, 1}, 2));
    if (k == nullptr) return;
    std::mt19937 rng(300);
    const struct {
      int in_c, out_c, hw;
    } layers[] = {{256, 512, 10}, {128, 256, 5}, {128, 256, 3}, {64, 128, 2}};  // conv14_2 .. conv17_2
    for (const auto& l : layers) {
      ConvGeometry g = conv(l.in_c, l.out_c, l.hw, l.hw, {3, 3, 1, 1, 1, 1, 1, 1}, 2);
      g.act = activation(1);
      g.bias = true;
      CHECK(select(g) == k);
      check_against_reference(k, g, random_operands(g, rng));
    }
    // A map larger than one chunk of im2col (K x 8 pixels x 2 bytes x tiles > 1 MiB).
    ConvGeometry g = conv(64, 24, 40, 37, {3, 3, 1, 1, 1, 1, 1, 1}, 1);
    g.act = activation(4);
    g.bias = true;
    check_against_reference(k, g, random_operands(g, rng));
  }

  TEST_CASE("fp16 arithmetic: im2col pack8 kernel keeps the reference's -0 where no window overhangs") {
    // Inputs -0, weights > 0, biases -0: every product and sum the reference makes is -0
    // and every activation keeps it. A +0 shows an activation that loses -0 (FMAX) or a
    // product the reference does not take.
    const ConvKernel* k = kernel_or_none(conv(16, 16, 5, 5, {3, 3, 1, 1, 1, 1, 1, 1}, 1));
    if (k == nullptr) return;
    std::mt19937 rng(7);
    const Window windows[] = {{3, 3, 1, 1, 0, 0, 0, 0}, {1, 1, 2, 2, 0, 0, 0, 0}, {1, 3, 1, 1, 0, 0, 0, 0}};
    int n = 0;
    for (const Window& win : windows) {
      for (int s = 1; s <= 2; ++s) {
        for (int w : {3, 4, 11}) {
          ConvGeometry g = conv(n % 2 ? 8 : 16, (n / 2) % 2 ? 24 : 16, 5, w, win, s);
          g.act = activation(n);
          g.bias = true;
          ++n;
          REQUIRE_FALSE(overhangs(g));
          Operands op = random_operands(g, rng);
          std::fill(op.x.begin(), op.x.end(), -0.f);
          for (float& v : op.wt) v = std::fabs(v) + 0.125f;
          std::fill(op.b.begin(), op.b.end(), -0.f);
          check_against_reference(k, g, op);
        }
      }
    }
    MESSAGE(n << " geometries of -0 sums");
  }

  TEST_CASE("fp16 arithmetic: im2col pack8 kernel leaves the 1x1, depthwise and stem geometries to their kernels") {
    const ConvGeometry general = conv(16, 24, 9, 9, {3, 3, 1, 1, 1, 1, 1, 1}, 2);
    ConvGeometry one = conv(16, 24, 9, 9, {1, 1, 1, 1, 0, 0, 0, 0}, 1);
    ConvGeometry depthwise = conv(16, 16, 9, 9, {3, 3, 1, 1, 1, 1, 1, 1}, 1);
    depthwise.group = 16;
    ConvGeometry stem = conv(8, 16, 9, 9, {3, 3, 1, 1, 1, 1, 1, 1}, 2);
    stem.in_c = 3;
    stem.in_pack = 1;
    const ConvKernel* k = f16_kernel(kName);
    if (k == nullptr || !kt::fp16_kernels_run()) {
      for (const ConvGeometry& g : {general, one, depthwise, stem}) CHECK(select(g) == nullptr);
      MESSAGE("no fp16 arithmetic here: no fp16 kernel is selected");
      return;
    }
    CHECK(select(general) == k);
    // The 1x1 kernel's geometries: this kernel computes them too, but comes after it.
    for (int s : {1, 2}) {
      one.sh = one.sw = s;
      one.out_h = one.out_w = (9 - 1) / s + 1;
      CHECK(k->supports(one));
      CHECK(select(one) == f16_kernel("f16_conv1x1_pack8_16x8_neonfp16"));
    }
    CHECK_FALSE(k->supports(depthwise));
    CHECK(select(depthwise) == f16_kernel("f16_dwconv3x3_pack8_neonfp16"));
    CHECK_FALSE(k->supports(stem));
    const ConvKernel* stem_kernel = select(stem);
    CHECK(stem_kernel != k);
    if (stem_kernel) MESSAGE("the stem geometry goes to " << std::string(stem_kernel->name));
    // What it declines.
    ConvGeometry g = general;
    g.f16 = false;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.in_pack = g.out_pack = 4;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.out_pack = 1;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.group = 2;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.act = {static_cast<ActivationType>(100), 0.f, 0.f};  // no such type (a damaged file's byte)
    CHECK_FALSE(k->supports(g));
    g = general;
    g.pad_top = -1;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.in_c = 12;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.out_c = 20;
    CHECK_FALSE(k->supports(g));
    g = general;
    g.kh = g.kw = 50000;  // K = 4e10: sizes that would overflow are declined
    g.pad_top = g.pad_left = 25000;
    CHECK_FALSE(k->supports(g));
  }
}
