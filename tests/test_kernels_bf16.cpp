// bf16 arithmetic (Precision::kBf16): the rounding to bf16, the oracle
// conv_reference_bf16 against fp32 and against vdpbf16ps's order worked by hand, every
// bf16 kernel against the oracle bit for bit (edge shapes, both layouts, 1 and 4
// threads; where the CPU has AVX512-BF16), and a Net at kBf16 on both kernel sets.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "conv_test_util.h"
#include "kernel_test_util.h"
#include "kernels/conv_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kestrel/model_zoo.h"
#include "mat_util.h"
#include "test_util.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;
using kestrel::kernels::from_bf16;
using kestrel::kernels::to_bf16;
using Act = kestrel::fb::ActivationType;

// A pointwise geometry that asks for bf16 arithmetic.
ConvGeometry pointwise(int in_c, int out_c, int h, int w, Act act, bool bias) {
  ConvGeometry g = kt::pointwise(in_c, h, w, out_c, act, bias);
  g.bf16 = true;
  return g;
}

// True where a bf16 kernel runs here (a CPU with bf16 arithmetic may have none:
// aarch64's bf16 under qemu).
bool bf16_kernel_runs() {
  if (!kestrel::kernels::active_has(kestrel::kernels::Feature::kBf16)) return false;
  for (const ConvKernel* k : kt::runnable_kernels(kestrel::kernels::conv_kernels())) {
    if (k->bf16) return true;
  }
  return false;
}

// Output `out` of one inference of `net` on `in` at `threads` threads.
Mat run_net(const kestrel::Net& net, const Mat& in, const char* out, int threads) {
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  REQUIRE(ex.input("data", in).ok());
  Mat m;
  REQUIRE(ex.extract(out, m).ok());
  return m;
}

// Runs `k` on g's operands in the layouts g asks for (planar input; planar output
// back), with NaN in the input's channel padding.
Mat run_kernel(const ConvKernel* k, const ConvGeometry& g, const Mat& in, const std::vector<float>& w,
               const std::vector<float>& b, int threads) {
  Mat packed;
  REQUIRE(packed.create(Shape::make1(static_cast<int>(k->packed_floats(g)) + 1)));
  k->pack(g, w.data(), g.bias ? b.data() : nullptr, packed.data);
  return kt::run_conv_kernel(k, g, in, packed.data, threads, true);
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("bf16: rounding to nearest even, NaN kept quiet, subnormals to signed zero") {
    CHECK(to_bf16(1.f) == 0x3F80);
    CHECK(from_bf16(to_bf16(1.f + 1.f / 256)) == 1.f);               // a tie goes to even
    CHECK(from_bf16(to_bf16(1.f + 3.f / 256)) == 1.f + 4.f / 256);   // a tie up to even
    CHECK(from_bf16(to_bf16(1.f + 1.f / 256 + 1.f / 65536)) == 1.f + 2.f / 256);  // past the tie
    CHECK(to_bf16(-0.f) == 0x8000);
    CHECK(to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(to_bf16(-std::numeric_limits<float>::denorm_min()) == 0x8000);
    CHECK(std::isinf(from_bf16(to_bf16(std::numeric_limits<float>::infinity()))));
    CHECK(std::isinf(from_bf16(to_bf16(std::numeric_limits<float>::max()))));  // rounds up past the top
    CHECK(std::isnan(from_bf16(to_bf16(std::nanf("")))));
    CHECK((to_bf16(std::nanf("")) & 0x40) != 0);
  }

  TEST_CASE("bf16: the oracle adds each pair's odd product, then its even one, to the bias") {
    // One output, one pixel, 3 input channels: bias + w1*x1, + w0*x0, then + (w2*x2 + 0).
    // The values make the order visible: 2^24 + 1 is not a float.
    ConvGeometry g = pointwise(3, 1, 1, 1, Act::None, true);
    g.in_c = 3;
    const float w[3] = {1.f, 1.f, 1.f}, bias = 16777216.f;  // 2^24
    const float in[3] = {1.f, -16777216.f, 1.f};
    float out = 0;
    kestrel::kernels::conv_reference_bf16(g, w, &bias, in, 1, &out, 1, 1);
    // 2^24 + (-2^24) = 0, + 1 = 1, + 1 = 2; the even product first would give
    // 2^24 + 1 = 2^24 (rounded), - 2^24 = 0, + 1 = 1.
    CHECK(out == 2.f);
  }

  TEST_CASE("bf16: the oracle stays within bf16's error of the fp32 reference") {
    std::mt19937 rng(31);
    for (int in_c : {128, 131, 256}) {
      const ConvGeometry g = pointwise(in_c, 37, 5, 6, Act::None, true);
      Mat in, ref, got;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
      REQUIRE(got.create(ref.shape()));
      kt::fill_random(in, rng);
      const auto w = kt::random_vector(size_t(g.out_c) * g.in_c, rng), b = kt::random_vector(g.out_c, rng);
      kestrel::kernels::conv_reference(g, w.data(), b.data(), in.data, in.cstep, ref.data, ref.cstep, 1);
      kestrel::kernels::conv_reference_bf16(g, w.data(), b.data(), in.data, in.cstep, got.data, got.cstep, 1);
      const double err = kt::relative_error(got, ref);
      INFO("in_c " << in_c << ": relative error " << err);
      CHECK(err > 0);  // bf16 rounds: equal results would mean it did not
      CHECK(err < 2e-2);
    }
  }

  TEST_CASE("bf16: kernels equal conv_reference_bf16 bit for bit on edge shapes, both layouts") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::conv_kernels());
    std::vector<const ConvKernel*> bf16;
    for (const ConvKernel* k : kernels) {
      if (k->bf16) bf16.push_back(k);
    }
    if (!bf16_kernel_runs()) {
      MESSAGE("no bf16 kernel runs on this CPU (" << kestrel::kernels::isa_name(kestrel::kernels::active_isa())
                                                  << "): the oracle alone is tested");
      return;
    }
    struct Case {
      int in_c, out_c, h, w;
      Act act;
      bool bias;
    };
    const Case cases[] = {
        {128, 32, 1, 1, Act::ReLU, true},    {129, 37, 3, 4, Act::None, true},
        {131, 35, 1, 13, Act::Clip, false},  {128, 33, 12, 1, Act::LeakyReLU, true},
        {160, 64, 7, 7, Act::Sigmoid, true}, {256, 100, 5, 5, Act::ReLU, true},
        {144, 48, 14, 14, Act::Clip, true},  {512, 47, 2, 23, Act::None, false},
        {130, 40, 17, 15, Act::ReLU, true},
        // Maps of many chunks of pixel groups (kChunkBytes), streamed through each
        // thread's scratch, the last chunk and group short.
        {1024, 48, 31, 33, Act::Clip, true},  {1025, 33, 31, 33, Act::None, true},
    };
    std::mt19937 rng(37);
    std::map<std::string, int> tested;
    for (const Case& c : cases) {
      const ConvGeometry g = pointwise(c.in_c, c.out_c, c.h, c.w, c.act, c.bias);
      Mat in, want;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      REQUIRE(want.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
      kt::fill_random(in, rng, -2.f, 2.f);
      const auto w = kt::random_vector(size_t(g.out_c) * g.in_c, rng), b = kt::random_vector(g.out_c, rng);
      // ReLU, LeakyReLU and Clip are the oracle's bit for bit; the exp-based ones are the
      // ISA's activation kernel on the oracle's sums (the kernels' epilogue runs it).
      const bool vector_act = c.act == Act::Sigmoid;
      ConvGeometry sums = g;
      if (vector_act) sums.act = kestrel::ActivationSpec();
      kestrel::kernels::conv_reference_bf16(sums, w.data(), g.bias ? b.data() : nullptr, in.data, in.cstep,
                                            want.data, want.cstep, 1);
      if (vector_act) {
        const auto* act = kestrel::kernels::select_activation_kernel(g.act, kestrel::kernels::active_isa());
        REQUIRE(act);
        const size_t plane = size_t(g.out_h) * g.out_w;
        for (int q = 0; q < g.out_c; ++q) act->run(g.act, want.channel(q), want.channel(q), plane);
      }
      for (const ConvKernel* k : bf16) {
        for (int in_pack : {1, k->blocked_lanes}) {
          for (int out_pack : {1, k->blocked_lanes}) {
            ConvGeometry gb = g;
            gb.in_pack = in_pack;
            gb.out_pack = out_pack;
            INFO(std::string(k->name) << ": " << kt::describe_conv(gb));
            const bool whole = (in_pack == 1 || g.in_c % in_pack == 0) && (out_pack == 1 || g.out_c % out_pack == 0);
            CHECK(k->supports(gb) == whole);
            if (!k->supports(gb)) continue;
            for (int threads : {1, 4}) {
              INFO("threads " << threads);
              CHECK(kt::same_plane_values(run_kernel(k, gb, in, w, b, threads), want));
            }
            tested[k->name]++;
          }
        }
        // Only what bf16 arithmetic was asked for, and only the pointwise layers.
        ConvGeometry off = g;
        off.bf16 = false;
        CHECK_FALSE(k->supports(off));
        ConvGeometry narrow = pointwise(kestrel::kernels::kBf16MinInputs - 1, 64, 2, 2, Act::None, true);
        CHECK_FALSE(k->supports(narrow));
        ConvGeometry few = pointwise(256, kestrel::kernels::kBf16MinOutputs - 1, 2, 2, Act::None, true);
        CHECK_FALSE(k->supports(few));
      }
    }
    for (const ConvKernel* k : bf16) CHECK_MESSAGE(tested[k->name] > 0, k->name);
  }
}

TEST_SUITE("precision") {
  TEST_CASE("bf16: a Net's pointwise layers run the bf16 kernel, as the reference set's bf16 oracle computes") {
    const std::vector<uint8_t> model = kestrel::mobilenet_v1({3, 64}).serialize();
    kestrel::Net fast, ref, fp32;
    fast.option().precision = kestrel::Precision::kBf16;
    ref.option().precision = kestrel::Precision::kBf16;
    ref.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(kt::load_bytes(fast, model).ok());
    REQUIRE(kt::load_bytes(ref, model).ok());
    REQUIRE(kt::load_bytes(fp32, model).ok());
    const Mat in = kt::random_input(fast, "data", 11);
    auto run = [&](const kestrel::Net& net, int threads) { return run_net(net, in, "conv6/sep", threads); };
    const Mat want = run(ref, 1), f32 = run(fp32, 1);
    CHECK(kt::relative_error(want, f32) > 0);  // the oracle is not fp32
    CHECK(kt::relative_error(want, f32) < 5e-2);
    // The observer sees which layers are bf16 and which kernel ran them.
    std::map<std::string, std::pair<kestrel::Precision, std::string>> seen;
    {
      kestrel::Extractor ex = fast.create_extractor();
      ex.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = {e.precision, e.kernel}; });
      REQUIRE(ex.input("data", in).ok());
      Mat out;
      REQUIRE(ex.extract("conv6/sep", out).ok());
    }
    const bool has_bf16 = bf16_kernel_runs();
    CHECK(seen.at("conv1").first == kestrel::Precision::kFp32);        // a 3x3 stem
    CHECK(seen.at("conv2_1/sep").first == kestrel::Precision::kFp32);  // 32 inputs: fp32 is as fast
    CHECK(seen.at("conv5_1/sep").first == kestrel::Precision::kBf16);  // the pointwise layers
    CHECK((seen.at("conv5_1/sep").second.rfind("bf16_", 0) == 0) == has_bf16);
    CHECK(seen.at("conv5_1/dw").first == kestrel::Precision::kFp32);   // depthwise: no bf16 path
    if (has_bf16) {
      // The fp32 layers between differ from the reference's in their last bits (fast
      // fp32 kernels are held to 1e-4), and bf16 rounding passes such differences on:
      // the whole net is compared bit for bit below, on bf16 layers alone.
      CHECK(kt::relative_error(run(fast, 1), f32) > 0);
      CHECK(kt::same_plane_values(run(fast, 3), run(fast, 1)));  // the thread count changes nothing
    } else {
      MESSAGE("no bf16 kernel runs on this CPU: the fast kernels compute those layers in fp32");
      CHECK(kt::same_plane_values(run(fast, 1), run(fp32, 1)));
    }
  }

  TEST_CASE("bf16: a Net of pointwise layers gives the reference set's bf16 results bit for bit") {
    kestrel::ModelBuilder b;
    b.add_input("data", {128, 9, 7});
    kt::add_conv(b, "a", "data", 128, 160, 1);
    kt::add_conv(b, "b", "a", 160, 130, 1);
    b.add_output("b");
    kestrel::Net fast, ref;
    for (kestrel::Net* n : {&fast, &ref}) n->option().precision = kestrel::Precision::kBf16;
    ref.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(kt::load(fast, b).ok());
    REQUIRE(kt::load(ref, b).ok());
    const Mat in = kt::random_input(fast, "data", 12);
    auto run = [&](const kestrel::Net& net, int threads) { return run_net(net, in, "b", threads); };
    const Mat want = run(ref, 1);
    if (!bf16_kernel_runs()) {
      MESSAGE("no bf16 kernel runs on this CPU: only the oracle ran");
      return;
    }
    for (int threads : {1, 3}) {
      INFO("threads " << threads);
      CHECK(kt::same_plane_values(run(fast, threads), want));
    }
  }
}
