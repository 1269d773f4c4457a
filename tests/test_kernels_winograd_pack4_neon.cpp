// The NEON Winograd kernel on pack4 maps (f32_conv_winograd_pack4_neon) against the
// reference, and its blocked runs against its planar run bit for bit (the layout pass
// may block a layer's maps or not, and this kernel is chosen either way). Swept on
// purpose: maps where 6x6 tiles win (>= 28x28) and where 4x4 tiles do (7x7, 14x14),
// every partial tile at the right and bottom edges, pads 0, 1 and 2, input channels
// that are no multiple of 4 (planar input only: its copy pads the block with zeros),
// output channels with a last GEMM block of 4 and, for a planar output, any count; a
// map of more tiles than one chunk of the workspace holds (two chunks); every epilogue;
// 1 and 4 threads. NaN in the input's channel padding shows any read of it. On other
// architectures the kernel is absent and the cases say so.
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

const ConvKernel* find_kernel(const char* name) {
  for (const ConvKernel* k : kt::runnable_kernels(kestrel::kernels::conv_kernels())) {
    if (std::strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

struct Case {
  int in_c, h, w, out_c, pad, pad_end;
  ActivationType act;
};

ConvGeometry geometry(const Case& c) {
  ConvGeometry g;
  g.in_c = c.in_c;
  g.out_c = c.out_c;
  g.in_h = c.h;
  g.in_w = c.w;
  g.kh = g.kw = 3;
  g.pad_top = g.pad_left = c.pad;
  g.out_h = c.h + c.pad + c.pad_end - 2;
  g.out_w = c.w + c.pad + c.pad_end - 2;
  g.bias = true;
  g.act.type = c.act;
  g.act.alpha = c.act == ActivationType::Clip ? -0.5f : 0.1f;
  g.act.beta = 0.5f;
  return g;
}

std::string describe(const ConvGeometry& g) {
  std::ostringstream o;
  o << g.in_c << "x" << g.in_h << "x" << g.in_w << " -> " << g.out_c << "x" << g.out_h << "x" << g.out_w << " pad "
    << g.pad_top << " act " << int(g.act.type) << " packs " << g.in_pack << ">" << g.out_pack;
  return o.str();
}

std::vector<Case> cases() {
  using A = ActivationType;
  return {
      {8, 7, 7, 8, 1, 1, A::ReLU},         // 4x4 tiles: 2x2, the last ones partial
      {16, 14, 14, 24, 1, 1, A::None},     // 16 tiles: two GEMM runs of 8
      {12, 28, 28, 12, 1, 1, A::Clip},     // 6x6 tiles (25: 8 + 8 + 8 + 1), a last block of 4
      {8, 29, 31, 16, 1, 1, A::LeakyReLU}, // 6x6 tiles, partial at both edges
      {20, 9, 10, 4, 0, 0, A::Sigmoid},    // no padding, one block of 4
      {8, 6, 5, 12, 2, 2, A::HardSwish},   // pad 2
      {16, 11, 13, 20, 1, 0, A::ReLU},     // 1 before, 0 after
      {10, 12, 12, 13, 1, 1, A::None},     // planar only: 10 input and 13 output channels
      {64, 56, 56, 8, 1, 1, A::ReLU},      // 100 tiles in two chunks
  };
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pack4 Winograd NEON kernel: the reference within tolerance, its planar bits on every layout") {
    const ConvKernel* k = find_kernel("f32_conv_winograd_pack4_neon");
    if (!k) {
      // An aarch64 build running NEON must have it: a kernel dropped from the registry
      // must fail here, not skip.
      CHECK(kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon);
      MESSAGE("no NEON Winograd kernel in this build: nothing to compare");
      return;
    }
    std::mt19937 rng(43);
    int runs = 0;
    for (const Case& c : cases()) {
      const ConvGeometry g = geometry(c);
      INFO(describe(g));
      REQUIRE(k->supports(g));
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      kt::fill_random(in, rng);
      const std::vector<float> w = kt::random_vector(size_t(g.out_c) * g.in_c * 9, rng);
      const std::vector<float> b = kt::random_vector(g.out_c, rng);
      Mat packed;
      REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)))));
      k->pack(g, w.data(), b.data(), packed.data);
      const Mat want = kt::run_conv_kernel(k, g, in, packed.data, 1, true);
      Mat ref;
      REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
      kestrel::kernels::conv_reference(g, w.data(), b.data(), in.data, in.cstep, ref.data, ref.cstep, 1);
      CHECK(kt::relative_error(want, ref) <= k->tolerance);
      for (int in_pack : {1, 4}) {
        for (int out_pack : {1, 4}) {
          ConvGeometry gb = g;
          gb.in_pack = in_pack;
          gb.out_pack = out_pack;
          const bool claims = (in_pack == 1 || g.in_c % 4 == 0) && (out_pack == 1 || g.out_c % 4 == 0);
          INFO(describe(gb));
          REQUIRE(k->supports(gb) == claims);
          if (!claims) continue;
          for (int threads : {1, 4}) {
            INFO("threads " << threads);
            CHECK(kt::same_plane_values(kt::run_conv_kernel(k, gb, in, packed.data, threads, true), want));
            ++runs;
          }
        }
      }
    }
    MESSAGE("f32_conv_winograd_pack4_neon: " << runs << " runs");
  }

  TEST_CASE("pack4 Winograd NEON kernel: 6x6 tiles on large maps, 4x4 on small ones, direct below") {
    const ConvKernel* k = find_kernel("f32_conv_winograd_pack4_neon");
    if (!k) {
      CHECK(kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon);
      MESSAGE("no NEON Winograd kernel in this build");
      return;
    }
    // Packed floats per (input, output channel): 64 for F(6,3), 36 for F(4,3) (the
    // bias and block padding aside: channels are whole blocks of 8 here).
    auto transform_elements = [&](int side, int channels) {
      const ConvGeometry g = geometry({channels, side, side, channels, 1, 1, ActivationType::None});
      REQUIRE(k->supports(g));
      return (k->packed_floats(g) - size_t(channels)) / (size_t(channels) * channels);
    };
    CHECK(transform_elements(56, 64) == 64);   // ResNet-18's stage 1
    CHECK(transform_elements(28, 128) == 64);  // stage 2
    CHECK(transform_elements(14, 256) == 36);  // stage 3: 9 tiles of 6x6 would be 1.65x the map
    CHECK(transform_elements(7, 512) == 36);   // stage 4
    // A 2x2 map is one 4x4 tile of 36 products for 4 outputs: direct is cheaper.
    CHECK_FALSE(k->supports(geometry({64, 2, 2, 64, 1, 1, ActivationType::None})));
    ConvGeometry strided = geometry({16, 8, 8, 16, 1, 1, ActivationType::None});
    strided.sh = strided.sw = 2;
    strided.out_h = strided.out_w = 4;
    CHECK_FALSE(k->supports(strided));
    ConvGeometry grouped = geometry({16, 8, 8, 16, 1, 1, ActivationType::None});
    grouped.group = 2;
    CHECK_FALSE(k->supports(grouped));
  }
}
