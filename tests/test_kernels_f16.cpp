// The fp16 1x1 convolution kernels (ConvKernel::f16: fp16 arithmetic on pack8 halves
// in, pack8 or planar halves out) against the fp16 reference, bit for bit, on edge
// shapes: channel counts of one to eight blocks (any count for planar output: SSD's 63-
// and 126-channel heads), maps 1x1 to 19x19, stride 2, every activation they take, with
// and without bias, 1 and 4 threads. They run only where the CPU has fp16 arithmetic
// (qemu -cpu cortex-a76 or max); elsewhere, and with KESTREL_DISABLE=fp16, no geometry
// selects one.
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "f16_test_util.h"
#include "kernel_test_util.h"
#include "kernels/f16_reference.h"
#include "kernels/kernel_context.h"
#include "test_util.h"

namespace {

using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

constexpr int kLanes = 8;

using kt::block_units;
using kt::KernelScratch;
using kt::f16_kernels;
using kt::first_difference;
using kt::from_pack8;
using kt::from_planar_halves;
using kt::plane_units;
using kt::planar_padding_changed;
using kt::random_halves;
using kt::to_pack8;

const kestrel::ActivationSpec kActs[] = {
    {kestrel::fb::ActivationType::None, 0.f, 0.f},
    {kestrel::fb::ActivationType::ReLU, 0.f, 0.f},
    {kestrel::fb::ActivationType::Clip, 0.f, 6.f},
    {kestrel::fb::ActivationType::LeakyReLU, 0.1f, 0.f},
};

// The fp16 kernel selected for `probe`, or nullptr with a message where the CPU has no
// fp16 arithmetic (then none may be selected).
const ConvKernel* selected_or_none(const ConvGeometry& probe, bool* has_fp16) {
  const ConvKernel* chosen = kestrel::kernels::select_conv_kernel(probe, kestrel::kernels::active_isa());
  *has_fp16 = kt::fp16_kernels_run();
  if (!*has_fp16) {
    CHECK(chosen == nullptr);
    MESSAGE("no fp16 arithmetic here (" << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa()))
                                         << "): fp16 kernels are not selected");
  }
  return chosen;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("fp16 arithmetic: 1x1 pack8 kernels equal the fp16 reference bit for bit") {
    ConvGeometry probe;
    probe.in_c = probe.out_c = 16;
    probe.in_h = probe.in_w = probe.out_h = probe.out_w = 4;
    probe.in_pack = probe.out_pack = kLanes;
    probe.f16 = true;
    bool fp16 = false;
    const ConvKernel* chosen = selected_or_none(probe, &fp16);
    if (!fp16) return;
    REQUIRE(chosen != nullptr);
    CHECK(chosen->f16);
    std::mt19937 rng(8);
    int cases = 0;
    for (const ConvKernel* k : f16_kernels()) {
      if (!k->supports(probe)) continue;  // the other fp16 kernels have tests of their own
      const std::string name = k->name;  // INFO would print the pointer
      for (int in_c : {8, 16, 24, 64}) {
        for (int out_c : {8, 16, 24, 40}) {
          const std::pair<int, int> sizes[] = {{1, 1}, {1, 7}, {3, 5}, {4, 4}, {7, 7}, {2, 17}};
          for (const auto& hw : sizes) {
            const int h = hw.first, w = hw.second;  // not a structured binding: INFO captures them
            for (int stride : {1, 2}) {
              ConvGeometry g = probe;
              g.in_c = in_c;
              g.out_c = out_c;
              g.in_h = h;
              g.in_w = w;
              g.sh = g.sw = stride;
              g.out_h = (h - 1) / stride + 1;
              g.out_w = (w - 1) / stride + 1;
              g.bias = (cases % 3) != 0;
              g.act = kActs[cases % 4];
              ++cases;
              if (!k->supports(g)) {
                FAIL_CHECK(name << " declines " << in_c << ">" << out_c << " " << h << "x" << w << " s" << stride);
                continue;
              }
              INFO(name << " " << in_c << ">" << out_c << " " << h << "x" << w << " stride " << stride << " act "
                           << static_cast<int>(g.act.type) << " bias " << g.bias);
              std::vector<float> x = random_halves(static_cast<size_t>(in_c) * h * w, 2.f, rng);
              // A NaN and an infinity through every epilogue (ReLU6's FMIN keeps NaN).
              x[0] = std::numeric_limits<float>::quiet_NaN();
              if (h * w > 1) x[1] = std::numeric_limits<float>::infinity();
              const std::vector<float> wt = random_halves(static_cast<size_t>(out_c) * in_c, 0.5f, rng);
              const std::vector<float> b = random_halves(out_c, 1.f, rng);
              const int out_plane = g.out_h * g.out_w;
              std::vector<float> want(static_cast<size_t>(out_c) * out_plane);
              kestrel::kernels::conv_reference_f16(g, wt.data(), g.bias ? b.data() : nullptr, x.data(),
                                                   static_cast<size_t>(h) * w, want.data(), out_plane, 1);
              kestrel::Mat packed;
              REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
              k->pack(g, wt.data(), g.bias ? b.data() : nullptr, packed.data);
              const size_t in_cstep = block_units(w, h), out_cstep = block_units(g.out_w, g.out_h);
              const std::vector<uint16_t> xin = to_pack8(x, in_c, h * w, in_cstep);
              for (int threads : {1, 4}) {
                std::vector<uint16_t> y(out_cstep * 2 * (out_c / kLanes) + 64, 0x7e00);
                KernelScratch scratch;  // for any kernel that claims the probe
                const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
                k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep,
                       reinterpret_cast<float*>(y.data()), out_cstep, ctx);
                const std::vector<float> got = from_pack8(y, out_c, out_plane, out_cstep);
                CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
              }
            }
          }
        }
      }
    }
    MESSAGE(cases << " fp16 kernel cases");
  }
  // Pack8 in, planar halves out (the Net's maps whose channels 8 does not divide): any
  // channel count, every real channel's pixels written and nothing else (the rows'
  // padding and the buffer past the last channel keep their sentinel).
  TEST_CASE("fp16 arithmetic: 1x1 kernels writing planar halves equal the fp16 reference bit for bit") {
    ConvGeometry probe;
    probe.in_c = 64;
    probe.out_c = 63;
    probe.in_h = probe.in_w = probe.out_h = probe.out_w = 4;
    probe.in_pack = kLanes;
    probe.out_pack = 1;
    probe.f16 = true;
    bool fp16 = false;
    const ConvKernel* chosen = selected_or_none(probe, &fp16);
    if (!fp16) return;
    REQUIRE(chosen != nullptr);
    CHECK(chosen->f16);
    constexpr uint16_t kSentinel = 0x7e5a;  // a NaN no kernel computes
    std::mt19937 rng(81);
    int cases = 0;
    for (const ConvKernel* k : f16_kernels()) {
      if (!k->supports(probe)) continue;
      const std::string name = k->name;
      for (int in_c : {8, 16, 64}) {
        for (int out_c : {1, 3, 7, 12, 21, 63, 126}) {
          const std::pair<int, int> sizes[] = {{1, 1}, {1, 7}, {3, 5}, {4, 4}, {7, 7}, {2, 17}, {19, 19}};
          for (const auto& hw : sizes) {
            const int h = hw.first, w = hw.second;
            for (int stride : {1, 2}) {
              ConvGeometry g = probe;
              g.in_c = in_c;
              g.out_c = out_c;
              g.in_h = h;
              g.in_w = w;
              g.sh = g.sw = stride;
              g.out_h = (h - 1) / stride + 1;
              g.out_w = (w - 1) / stride + 1;
              g.bias = (cases % 3) != 0;
              g.act = kActs[cases % 4];
              ++cases;
              if (!k->supports(g)) {
                FAIL_CHECK(name << " declines " << in_c << ">" << out_c << " " << h << "x" << w << " s" << stride);
                continue;
              }
              INFO(name << " " << in_c << ">" << out_c << " planar " << h << "x" << w << " stride " << stride
                           << " act " << static_cast<int>(g.act.type) << " bias " << g.bias);
              const std::vector<float> x = random_halves(static_cast<size_t>(in_c) * h * w, 2.f, rng);
              const std::vector<float> wt = random_halves(static_cast<size_t>(out_c) * in_c, 0.5f, rng);
              const std::vector<float> b = random_halves(out_c, 1.f, rng);
              const int out_plane = g.out_h * g.out_w;
              std::vector<float> want(static_cast<size_t>(out_c) * out_plane);
              kestrel::kernels::conv_reference_f16(g, wt.data(), g.bias ? b.data() : nullptr, x.data(),
                                                   static_cast<size_t>(h) * w, want.data(), out_plane, 1);
              kestrel::Mat packed;
              REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
              k->pack(g, wt.data(), g.bias ? b.data() : nullptr, packed.data);
              const size_t in_cstep = block_units(w, h), out_cstep = plane_units(g.out_w, g.out_h);
              const std::vector<uint16_t> xin = to_pack8(x, in_c, h * w, in_cstep);
              for (int threads : {1, 4}) {
                CAPTURE(threads);
                std::vector<uint16_t> y(out_cstep * 2 * out_c + 64, kSentinel);
                KernelScratch scratch;  // for any kernel that claims the probe
                const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
                k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep,
                       reinterpret_cast<float*>(y.data()), out_cstep, ctx);
                const long diff = first_difference(from_planar_halves(y, out_c, out_plane, out_cstep), want);
                CHECK_MESSAGE(diff == -1, "channel " << diff / out_plane << " pixel " << diff % out_plane);
                CHECK(planar_padding_changed(y, out_c, out_plane, out_cstep, kSentinel) == 0);
              }
            }
          }
        }
      }
    }
    CHECK(cases > 0);
    MESSAGE(cases << " fp16 planar-output cases");
  }
  // In a Net: a 1x1 layer from a pack8 map of halves to 63 channels (an SSD head) is
  // re-targeted to planar halves out (set_half(8, 1)) and its map still equals the fp16
  // oracle's bit for bit.
  TEST_CASE("fp16 arithmetic: a Net's 1x1 head from pack8 halves writes planar halves") {
    kestrel::ModelBuilder b;
    b.add_input("data", {16, 7, 9});
    kt::add_conv(b, "m", "data", 16, 32, 1);
    kt::add_conv(b, "h", "m", 32, 63, 1);
    kt::add_conv(b, "z", "h", 63, 8, 3);
    b.add_output("z");
    kestrel::Net oracle, fast;
    oracle.option().kernels = kestrel::KernelSet::kReference;
    oracle.option().precision = fast.option().precision = kestrel::Precision::kFp16;
    // Named: a layer reading the network input is fp32 by default (net_precision.cpp).
    oracle.option().layer_precision["m"] = fast.option().layer_precision["m"] = kestrel::Precision::kFp16;
    REQUIRE(kt::load(oracle, b).ok());
    REQUIRE(kt::load(fast, b).ok());
    const kestrel::Mat in = kt::random_input(fast, "data", 5);
    for (int threads : {1, 4}) {
      CAPTURE(threads);
      std::string head_kernel;
      kestrel::Extractor ex = fast.create_extractor();
      ex.set_num_threads(threads);
      ex.set_observer([&](const kestrel::LayerEvent& e) {
        if (std::string(e.layer_name) == "h") head_kernel = e.kernel;
      });
      REQUIRE(ex.input("data", in).ok());
      kestrel::Mat got, want;
      REQUIRE(ex.extract("h", got).ok());
      kestrel::Extractor ox = oracle.create_extractor();
      REQUIRE(ox.input("data", in).ok());
      REQUIRE(ox.extract("h", want).ok());
      REQUIRE(got.shape() == want.shape());
      if (!kt::fp16_kernels_run()) {
        CHECK(head_kernel.rfind("f16_", 0) != 0);
        MESSAGE("no fp16 arithmetic here: the head runs " << head_kernel);
        return;
      }
      CHECK(head_kernel == "f16_conv1x1_pack8_16x8_neonfp16[h8>h1]");
      for (int q = 0; q < want.c; ++q) {
        CAPTURE(q);
        CHECK(std::memcmp(got.channel(q), want.channel(q), static_cast<size_t>(want.w) * want.h * sizeof(float)) == 0);
      }
    }
  }
}
