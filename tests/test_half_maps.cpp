// fp16 maps (core/net_half.cpp): where the CPU has fp16 arithmetic, consecutive fp16
// layers with kernels for halves hand each other halves, and HalfConvert copies sit at
// the boundaries. The fp16 kernels equal the fp16 reference bit for bit and the reference
// rounds the same maps, so every blob computed by fp16 kernels alone (from the input on)
// equals the fp16 oracle's (the reference kernel set at Precision::kFp16) bit for bit;
// the others, through fp32 kernels rounded to halves, are within fp16's error of it.
// Where the CPU has no fp16 arithmetic nothing is re-targeted.
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

#include "kernel_test_util.h"
#include "kernels/isa.h"
#include "test_util.h"

namespace {

std::vector<float> seeded(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

kestrel::fb::LayerParamsUnion global_average() {
  kestrel::fb::PoolingParamT p;
  p.pool = kestrel::fb::PoolType::Average;
  p.global = true;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// A chain of the layers MobileNets are made of: a stem (3x3 stride 2 from 3 planar
// channels), 1x1 layers, a depthwise stride 2, a global average pool, and a 3x3 layer
// (no fp16 kernel: fp32 between conversions); channels that are multiples of 8 and one
// that is not; two network outputs.
kestrel::ModelBuilder half_chain() {
  kestrel::ModelBuilder b;
  b.add_input("data", {3, 19, 15});
  b.add_layer("Convolution", "s", {"data"}, {"s"}, kt::conv_params(16, 3, 2, 1, true),
              {b.add_weight("s/w", {16, 3, 3, 3}, seeded(16 * 27, 3)), b.add_weight("s/b", {16}, seeded(16, 4))});
  kt::add_conv(b, "a", "s", 16, 24, 1);
  kt::add_conv(b, "b", "a", 24, 16, 1);
  kt::add_depthwise(b, "dw", "b", 16, 2, 5);
  kt::add_conv(b, "c", "dw", 16, 32, 1);
  b.add_layer("Pooling", "p", {"c"}, {"p"}, global_average());
  kt::add_conv(b, "q", "p", 32, 16, 1);
  kt::add_conv(b, "d", "c", 32, 12, 3);
  kt::add_conv(b, "e", "d", 12, 16, 1);
  kt::add_conv(b, "f", "e", 16, 8, 1);
  b.add_output("f");
  b.add_output("q");
  return b;
}

// In an order where each blob follows those it is computed from.
const char* const kBlobs[] = {"s", "a", "b", "dw", "c", "p", "q", "d", "e", "f"};

// The largest difference between two planar fp32 maps of one shape, channel padding
// left out; NaN where they differ in NaNs; +0 and -0 count as equal (a kernel may
// multiply a zero padding tap the reference skips).
float worst_difference(const kestrel::Mat& x, const kestrel::Mat& y) {
  float worst = 0.f;
  const size_t plane = static_cast<size_t>(x.w) * x.h * x.d;
  for (int q = 0; q < x.c; ++q) {
    for (size_t i = 0; i < plane; ++i) {
      const float a = x.channel(q)[i], b = y.channel(q)[i];
      if (std::isnan(a) != std::isnan(b)) return NAN;
      if (!std::isnan(a)) worst = std::max(worst, std::fabs(a - b));
    }
  }
  return worst;
}

}  // namespace

TEST_SUITE("precision") {
  TEST_CASE("fp16 maps: fp16 kernels hand halves on, equal to the fp16 oracle bit for bit") {
    const kestrel::ModelBuilder builder = half_chain();
    kestrel::Net oracle, fast;
    oracle.option().kernels = kestrel::KernelSet::kReference;
    oracle.option().precision = fast.option().precision = kestrel::Precision::kFp16;
    // The stem computes in fp16 only when named (it weighs the image: net_precision.cpp).
    oracle.option().layer_precision["s"] = fast.option().layer_precision["s"] = kestrel::Precision::kFp16;
    REQUIRE(kt::load(oracle, builder).ok());
    const kestrel::Status loaded = kt::load(fast, builder);
    INFO(loaded.message());
    REQUIRE(loaded.ok());
    const kestrel::Mat in = kt::random_input(fast, "data", 21);
    // What ran: each layer's kernel, and the conversions.
    std::map<std::string, std::string> kernel;
    int converts = 0;
    for (int threads : {1, 3}) {
      INFO("threads " << threads);
      for (const char* blob : kBlobs) {
        INFO("blob " << std::string(blob));
        kestrel::Extractor ex = fast.create_extractor();
        ex.set_num_threads(threads);
        ex.set_observer([&](const kestrel::LayerEvent& e) {
          kernel[e.layer_name] = e.kernel;
          converts += std::string(e.layer_type) == "HalfConvert";
        });
        REQUIRE(ex.input("data", in).ok());
        kestrel::Mat got;
        REQUIRE(ex.extract(blob, got).ok());
        CHECK(got.elempack == 1);
        CHECK_FALSE(got.f16);
        kestrel::Extractor ox = oracle.create_extractor();
        REQUIRE(ox.input("data", in).ok());
        kestrel::Mat want;
        REQUIRE(ox.extract(blob, want).ok());
        REQUIRE(got.shape() == want.shape());
        // Bit for bit where every layer from the input to this blob ran an fp16 kernel.
        bool exact = true;
        for (const char* up : kBlobs) {
          exact = exact && kernel[up].rfind("f16_", 0) == 0;
          if (std::string(up) == blob) break;
        }
        const float worst = worst_difference(got, want);
        if (exact) {
          CHECK(worst == 0.f);
        } else {
          CHECK(worst < 0.05f);
        }
      }
    }
    if (!kt::fp16_kernels_run()) {
      // Not a structured binding: doctest's message captures its names.
      for (const auto& entry : kernel) {
        CHECK_MESSAGE(entry.second.rfind("f16_", 0) != 0, entry.first << " ran " << entry.second);
      }
      CHECK(converts == 0);
      MESSAGE("no fp16 arithmetic here: no layer re-targeted to halves");
      return;
    }
    // The layers between fp16 layers run fp16 kernels, those writing the network's
    // outputs ("f", "q") too, into halves of their own widened into the outputs. "e"
    // reads 12 channels, which stay planar, where no fp16 kernel reads them.
    for (const char* l : {"s", "a", "b", "dw", "c", "p", "q", "f"}) {
      CHECK_MESSAGE(kernel[l].rfind("f16_", 0) == 0, std::string(l) << " ran " << kernel[l]);
    }
    for (const char* l : {"d", "e"}) CHECK(kernel[l].rfind("f16_", 0) != 0);
    CHECK(kernel.count("f@fp32") == 1);
    CHECK(kernel.count("q@fp32") == 1);
    CHECK(converts > 0);
  }
}
