// The NEON 1x1 convolution on pack4 maps (f32_conv1x1_pack4_8x8_neon) against the
// planar NEON 1x1 kernel, bit for bit: both compute bias + the input channels in order,
// one fma each, so that a network gives the same bits with blocked and planar maps.
// Swept on purpose: pixel counts with every tail of the 8-pixel tile (1..7 left over,
// maps of 1 to 3 tiles and more), output channels with a last block of 4 (12, 20) and,
// for a planar output, any count (1, 3, 7, 13); input channels with an odd number of
// 4-channel steps (4, 12, 20, 260) and, for a planar input, counts that are no multiple
// of 4 (their missing lanes must add nothing: the -0 bias case); stride 2 at odd and
// even sizes; every epilogue (ReLU, Clip, LeakyReLU on the registers, Sigmoid and
// HardSwish after the store); 1 and 3 threads; both orders of the work items. NaN in
// the input's channel padding shows any read of it. On other architectures the kernel
// is absent and the cases say so.
#include <algorithm>
#include <cmath>
#include <cstring>
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
  int in_c, h, w, out_c, stride;
  ActivationType act;
  bool bias = true;
  bool zeros = false;  // zero input, -0 bias, negative weights: every output must stay -0
};

ConvGeometry geometry(const Case& c) {
  ConvGeometry g;
  g.in_c = c.in_c;
  g.out_c = c.out_c;
  g.in_h = c.h;
  g.in_w = c.w;
  g.sh = g.sw = c.stride;
  g.out_h = (c.h - 1) / c.stride + 1;
  g.out_w = (c.w - 1) / c.stride + 1;
  g.bias = c.bias;
  g.act.type = c.act;
  g.act.alpha = c.act == ActivationType::Clip ? -0.5f : 0.1f;
  g.act.beta = 0.5f;
  return g;
}

std::string describe(const ConvGeometry& g) {
  std::ostringstream o;
  o << g.in_c << "x" << g.in_h << "x" << g.in_w << " -> " << g.out_c << "x" << g.out_h << "x" << g.out_w << " s"
    << g.sh << " act " << int(g.act.type) << " bias " << g.bias << " packs " << g.in_pack << ">" << g.out_pack;
  return o.str();
}

std::vector<Case> cases() {
  using A = ActivationType;
  return {
      // Blocked in and out: every pixel tail, odd step counts, a last block of 4.
      {4, 1, 1, 8, 1, A::ReLU},
      {8, 1, 7, 12, 1, A::None},
      {12, 3, 3, 16, 1, A::Clip},
      {20, 2, 8, 20, 1, A::LeakyReLU},
      {16, 17, 1, 24, 1, A::Sigmoid},
      {12, 5, 5, 40, 1, A::ReLU, false},
      {8, 4, 3, 4, 1, A::HardSwish},
      {36, 13, 11, 36, 1, A::ReLU},
      {32, 6, 5, 8, 1, A::None},
      {8, 3, 2, 16, 1, A::Clip},
      {24, 2, 7, 16, 1, A::ReLU},
      {260, 3, 3, 16, 1, A::ReLU},
      // K a multiple of 64 (whole 16-step turns, no computed entry): one turn, two.
      {64, 4, 5, 16, 1, A::ReLU},
      {128, 3, 3, 24, 1, A::None},
      // Runs of many tiles (run-major items) and many blocks on a small map (weight-major).
      {8, 40, 41, 16, 1, A::ReLU},
      {64, 2, 3, 136, 1, A::LeakyReLU},
      // Stride 2, odd and even sizes.
      {8, 9, 9, 16, 2, A::ReLU},
      {12, 8, 14, 12, 2, A::None},
      {16, 1, 5, 8, 2, A::Clip},
      // Output channels for a planar output only; planar inputs of any depth.
      {8, 3, 5, 3, 1, A::ReLU},
      {4, 4, 4, 13, 1, A::Sigmoid},
      {16, 3, 3, 7, 2, A::None},
      {12, 2, 9, 1, 1, A::Clip},
      {3, 5, 7, 16, 1, A::ReLU},
      {5, 3, 3, 12, 2, A::LeakyReLU},
      {30, 4, 5, 8, 1, A::None, false},
      {5, 2, 5, 12, 1, A::None, true, true},
      {13, 1, 9, 8, 1, A::Clip, true, true},
  };
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pack4 1x1 NEON kernel: the planar 1x1 kernel's bits on every layout it claims") {
    const ConvKernel* k = find_kernel("f32_conv1x1_pack4_8x8_neon");
    const ConvKernel* planar = find_kernel("f32_conv1x1_8x8_neon");
    const ConvKernel* k12 = find_kernel("f32_conv1x1_pack4_12x7_neon");
    if (!k || !planar) {
      // An aarch64 build running NEON must have both: a kernel dropped from the
      // registry must fail here, not skip.
      CHECK(kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon);
      MESSAGE("no NEON 1x1 kernels in this build: nothing to compare");
      return;
    }
    std::mt19937 rng(41);
    int runs = 0;
    for (const Case& c : cases()) {
      const ConvGeometry g = geometry(c);
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      std::vector<float> w = kt::random_vector(size_t(g.out_c) * g.in_c, rng);
      std::vector<float> b = kt::random_vector(g.out_c, rng);
      if (c.zeros) {
        for (int q = 0; q < in.c; ++q) std::fill(in.channel(q), in.channel(q) + size_t(in.w) * in.h, 0.f);
        for (float& v : w) v = -std::fabs(v) - 0.5f;
        for (float& v : b) v = -0.f;
      } else {
        kt::fill_random(in, rng);
      }
      const float* bias = g.bias ? b.data() : nullptr;
      REQUIRE(planar->supports(g));
      Mat planar_packed, packed;
      REQUIRE(planar_packed.create(Shape::make1(int(planar->packed_floats(g)))));
      REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)))));
      planar->pack(g, w.data(), bias, planar_packed.data);
      k->pack(g, w.data(), bias, packed.data);
      const Mat want = kt::run_conv_kernel(planar, g, in, planar_packed.data, 1, true);
      {
        Mat ref;
        REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
        kestrel::kernels::conv_reference(g, w.data(), bias, in.data, in.cstep, ref.data, ref.cstep, 1);
        INFO(describe(g));
        CHECK(kt::relative_error(want, ref) <= planar->tolerance);
      }
      CHECK_FALSE(k->supports(g));  // never planar
      for (int in_pack : {1, 4}) {
        for (int out_pack : {1, 4}) {
          ConvGeometry gb = g;
          gb.in_pack = in_pack;
          gb.out_pack = out_pack;
          if (gb.planar()) continue;
          // Blocked in and out with a block of 12 channels: the 12 x 7 kernel's.
          const bool to_12x7 = in_pack == 4 && out_pack == 4 && k12 && k12->supports(gb);
          const bool claims = (in_pack == 4 ? g.in_c % 4 == 0 : out_pack == 4) &&
                              (out_pack == 1 || g.out_c % 4 == 0) && !to_12x7;
          INFO(describe(gb));
          REQUIRE(k->supports(gb) == claims);
          if (!claims) continue;
          for (int threads : {1, 3}) {
            INFO("threads " << threads);
            CHECK(kt::same_plane_values(kt::run_conv_kernel(k, gb, in, packed.data, threads, true), want));
            ++runs;
          }
        }
      }
    }
    MESSAGE("f32_conv1x1_pack4_8x8_neon: " << runs << " runs");
  }

  TEST_CASE("pack4 1x1 NEON kernel: claims only 1x1 unpadded single-group convolutions on whole blocks") {
    const ConvKernel* k = find_kernel("f32_conv1x1_pack4_8x8_neon");
    if (!k) {
      MESSAGE("no NEON 1x1 pack4 kernel in this build");
      return;
    }
    ConvGeometry base = geometry({8, 6, 6, 16, 1, ActivationType::None});
    base.in_pack = base.out_pack = 4;
    REQUIRE(k->supports(base));
    auto refuses = [&](const char* what, auto&& change) {
      ConvGeometry g = base;
      change(g);
      INFO(what);
      CHECK_FALSE(k->supports(g));
    };
    refuses("planar", [](ConvGeometry& g) { g.in_pack = g.out_pack = 1; });
    refuses("8 lanes", [](ConvGeometry& g) { g.in_pack = g.out_pack = 8; });
    refuses("blocked input, part of a block", [](ConvGeometry& g) { g.in_c = 10; });
    refuses("blocked output, part of a block", [](ConvGeometry& g) { g.out_c = 14; });
    refuses("3x3", [](ConvGeometry& g) { g.kh = g.kw = 3; g.out_h = g.out_w = 4; });
    refuses("two groups", [](ConvGeometry& g) { g.group = 2; });
    refuses("dilation", [](ConvGeometry& g) { g.dh = 2; });
    refuses("stride 3", [](ConvGeometry& g) { g.sh = g.sw = 3; g.out_h = g.out_w = 2; });
    refuses("padding", [](ConvGeometry& g) { g.pad_top = g.pad_left = 1; g.out_h = g.out_w = 8; });
    refuses("cropped output", [](ConvGeometry& g) { g.out_w = 5; });
  }
}
