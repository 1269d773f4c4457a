// The NEON 1x1 convolution in 12 x 7 tiles on pack4 maps (f32_conv1x1_pack4_12x7_neon)
// against the planar NEON 1x1 kernel, bit for bit (both: bias, then the input
// channels in order, one fma each). Swept on purpose: pixel counts with every tail of
// the 7-pixel tile (0..6 left over, maps of 1 to 3 tiles and many); output channels of
// 1, 2 and many 12-channel blocks with each remainder (0, 8, and 4 taken as 16, the
// 8 x 8 tiles' part); input channels giving a 16-step body entered part-way (kb 1, 3,
// 5, 65), whole (kb 16, 48) and the 32-step body (kb 32, 64); every epilogue (ReLU,
// Clip, LeakyReLU in the assembly, Sigmoid and HardSwish after the store); 1, 3 and 4
// threads; run-major and weight-major work items. NaN in the input's channel padding
// shows any read of it. On other architectures the kernel is absent and the cases say
// so.
#include <cmath>
#include <sstream>

#include "conv_test_util.h"
#include "kernels/isa.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;
using kt::find_kernel;

struct Case {
  int in_c, h, w, out_c;
  ActivationType act;
  bool bias = true;
};

ConvGeometry geometry(const Case& c) {
  ConvGeometry g;
  g.in_c = c.in_c;
  g.out_c = c.out_c;
  g.in_h = g.out_h = c.h;
  g.in_w = g.out_w = c.w;
  g.bias = c.bias;
  g.act.type = c.act;
  g.act.alpha = c.act == ActivationType::Clip ? -0.5f : 0.1f;
  g.act.beta = 0.5f;
  g.in_pack = g.out_pack = 4;
  return g;
}

std::string describe(const ConvGeometry& g) {
  std::ostringstream o;
  o << g.in_c << "x" << g.in_h << "x" << g.in_w << " -> " << g.out_c << " act " << int(g.act.type) << " bias "
    << g.bias;
  return o.str();
}

std::vector<Case> cases() {
  using A = ActivationType;
  return {
      // Every tail of the 7-pixel tile, one block of 12.
      {4, 1, 1, 12, A::ReLU},   {4, 1, 2, 12, A::None},   {12, 1, 3, 12, A::Clip},
      {20, 2, 2, 12, A::LeakyReLU}, {8, 1, 5, 12, A::ReLU}, {4, 2, 3, 12, A::Sigmoid},
      {12, 1, 7, 12, A::ReLU},  {8, 2, 4, 12, A::HardSwish}, {4, 3, 5, 12, A::Clip},
      // Remainders: 20 = 12 + 8, 24, 28 = 12 + 16, 64 = 4 x 12 + 16, 136 = 11 x 12 + 4.
      {8, 3, 3, 20, A::ReLU},   {12, 5, 5, 24, A::None, false}, {16, 4, 5, 28, A::LeakyReLU},
      {32, 6, 6, 64, A::ReLU},  {64, 2, 3, 136, A::Clip},
      // Bodies: kb 16 and 48 whole, 32 and 64 the long body, 65 entered at step 15.
      {64, 3, 3, 24, A::ReLU},  {192, 2, 5, 12, A::None}, {128, 3, 4, 36, A::ReLU},
      {256, 1, 9, 24, A::LeakyReLU}, {260, 3, 3, 12, A::ReLU},
      // Many tiles (run-major items), many blocks on a small map (weight-major).
      {8, 40, 41, 24, A::ReLU}, {64, 2, 2, 512, A::ReLU}, {32, 19, 19, 44, A::Clip},
  };
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pack4 1x1 NEON 12x7 kernel: the planar 1x1 kernel's bits") {
    const ConvKernel* k = find_kernel("f32_conv1x1_pack4_12x7_neon");
    const ConvKernel* planar = find_kernel("f32_conv1x1_8x8_neon");
    if (!k || !planar) {
      CHECK(kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon);
      MESSAGE("no NEON 1x1 kernels in this build: nothing to compare");
      return;
    }
    if (kestrel::kernels::host_has_in_order_cores()) {
      // The 8 x 8 tiles take these layers (the kernels_in_order test: qemu -cpu cortex-a53).
      const ConvKernel* k8 = find_kernel("f32_conv1x1_pack4_8x8_neon");
      REQUIRE(k8);
      for (const Case& c : cases()) {
        INFO(describe(geometry(c)));
        CHECK_FALSE(k->supports(geometry(c)));
        CHECK(k8->supports(geometry(c)));
      }
      MESSAGE("in-order cores: f32_conv1x1_pack4_12x7_neon steps aside");
      return;
    }
    std::mt19937 rng(47);
    int runs = 0;
    for (const Case& c : cases()) {
      const ConvGeometry g = geometry(c);
      ConvGeometry gp = g;
      gp.in_pack = gp.out_pack = 1;
      INFO(describe(g));
      REQUIRE(k->supports(g));
      REQUIRE(planar->supports(gp));
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      kt::fill_random(in, rng);
      const std::vector<float> w = kt::random_vector(size_t(g.out_c) * g.in_c, rng);
      const std::vector<float> b = kt::random_vector(g.out_c, rng);
      const float* bias = g.bias ? b.data() : nullptr;
      Mat planar_packed, packed;
      REQUIRE(planar_packed.create(Shape::make1(int(planar->packed_floats(gp)))));
      REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)))));
      planar->pack(gp, w.data(), bias, planar_packed.data);
      k->pack(g, w.data(), bias, packed.data);
      const Mat want = kt::run_conv_kernel(planar, gp, in, planar_packed.data, 1, true);
      {
        Mat ref;
        REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
        kestrel::kernels::conv_reference(gp, w.data(), bias, in.data, in.cstep, ref.data, ref.cstep, 1);
        CHECK(kt::relative_error(want, ref) <= planar->tolerance);
      }
      for (int threads : {1, 3, 4}) {
        INFO("threads " << threads);
        const Mat got = kt::run_conv_kernel(k, g, in, packed.data, threads, true);
        const Mat planar_got = kestrel::convert_packing(got, 1);
        CHECK(kt::same_plane_values(planar_got, want));
        ++runs;
      }
    }
    MESSAGE("f32_conv1x1_pack4_12x7_neon: " << runs << " runs");
  }

  TEST_CASE("pack4 1x1 NEON 12x7 kernel: claims stride-1 pack4 maps of at least one 12-channel block only") {
    const ConvKernel* k = find_kernel("f32_conv1x1_pack4_12x7_neon");
    if (!k) {
      MESSAGE("no NEON 1x1 12x7 kernel in this build");
      return;
    }
    if (kestrel::kernels::host_has_in_order_cores()) {
      MESSAGE("in-order cores: the kernel claims nothing here");
      return;
    }
    const ConvGeometry base = geometry({8, 6, 6, 24, ActivationType::None});
    REQUIRE(k->supports(base));
    auto refuses = [&](const char* what, auto&& change) {
      ConvGeometry g = base;
      change(g);
      INFO(what);
      CHECK_FALSE(k->supports(g));
    };
    refuses("planar input", [](ConvGeometry& g) { g.in_pack = 1; });
    refuses("planar output", [](ConvGeometry& g) { g.out_pack = 1; });
    refuses("8 channels", [](ConvGeometry& g) { g.out_c = 8; });
    refuses("16 channels: two 8 x 8 blocks, no block of 12", [](ConvGeometry& g) { g.out_c = 16; });
    refuses("part of an output block", [](ConvGeometry& g) { g.out_c = 26; });
    refuses("part of an input block", [](ConvGeometry& g) { g.in_c = 10; });
    refuses("stride 2", [](ConvGeometry& g) { g.sh = g.sw = 2; g.out_h = g.out_w = 3; });
    refuses("3x3", [](ConvGeometry& g) { g.kh = g.kw = 3; g.out_h = g.out_w = 4; });
    refuses("two groups", [](ConvGeometry& g) { g.group = 2; });
    refuses("padding", [](ConvGeometry& g) { g.pad_top = g.pad_left = 1; g.out_h = g.out_w = 8; });
  }
}
