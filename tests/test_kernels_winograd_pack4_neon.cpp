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

#include "conv_test_util.h"
#include "kernels/isa.h"

namespace {

using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;
using kt::find_kernel;

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
      INFO(kt::describe_conv(g));
      runs += kt::check_every_layout(k, g, rng, {1, 4});
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
