// The NEON 3x3 depthwise convolution on pack4 maps (f32_dwconv3x3_pack4_neon) against
// the planar kernel chosen for the same layer, bit for bit, and the reference. Swept on
// purpose for its column walks: widths 1 to 17 (strips of 1 to 4 pixels, the first
// with and without column -1 as padding, the last with and without the column after
// the row), heights 1 to 14 (every entry of the walk's 3-row and 2-pair rotations,
// walks of one output row), both strides, padding 0, 1 and 2 before and after (pads of
// 2 read padded copies), every fused activation and one applied after the store, 1 and
// 4 threads (bands of rows cut anywhere). NaN in the input's channel padding shows any
// read of it. On other architectures the kernel is absent and the case says so.
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

ConvGeometry depthwise(int c, int h, int w, int s, int pad, int pad_end, ActivationType act) {
  ConvGeometry g;
  g.in_c = g.out_c = g.group = c;
  g.in_h = h;
  g.in_w = w;
  g.kh = g.kw = 3;
  g.sh = g.sw = s;
  g.pad_top = g.pad_left = pad;
  g.out_h = (h + pad + pad_end - 3) / s + 1;
  g.out_w = (w + pad + pad_end - 3) / s + 1;
  g.bias = true;
  g.act.type = act;
  g.act.alpha = act == ActivationType::Clip ? -0.25f : 0.1f;
  g.act.beta = 0.5f;
  return g;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pack4 3x3 depthwise NEON kernel: the planar kernel's bits on every strip and walk") {
    const ConvKernel* k = find_kernel("f32_dwconv3x3_pack4_neon");
    if (!k) {
      CHECK(kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon);
      MESSAGE("no NEON pack4 depthwise kernel in this build: nothing to compare");
      return;
    }
    const ActivationType acts[] = {ActivationType::ReLU, ActivationType::None, ActivationType::Clip,
                                   ActivationType::LeakyReLU, ActivationType::Sigmoid};
    struct Pads {
      int before, after;
    };
    const Pads pads[] = {{1, 1}, {0, 0}, {0, 1}, {1, 0}, {2, 2}, {1, 2}};
    std::mt19937 rng(29);
    int runs = 0, n = 0;
    for (int s = 1; s <= 2; ++s) {
      for (int w = 1; w <= 17; ++w) {
        for (int h : {1, 2, 3, 4, 5, 6, 7, 8, 9, 14}) {
          ++n;
          const Pads pd = pads[(w + 3 * h + s) % 6];
          if (h + pd.before + pd.after < 3 || w + pd.before + pd.after < 3) continue;
          ConvGeometry g = depthwise(n % 3 == 0 ? 12 : 4, h, w, s, pd.before, pd.after, acts[n % 5]);
          ConvGeometry gb = g;
          gb.in_pack = gb.out_pack = 4;
          INFO(kt::describe_conv(gb));
          REQUIRE(k->supports(gb));
          Mat in;
          REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
          kt::fill_random(in, rng);
          const std::vector<float> wt = kt::random_vector(size_t(g.out_c) * 9, rng);
          const std::vector<float> b = kt::random_vector(g.out_c, rng);
          Mat packed;
          REQUIRE(packed.create(Shape::make1(int(k->packed_floats(gb)))));
          k->pack(gb, wt.data(), b.data(), packed.data);
          const Mat got = kt::run_conv_kernel(k, gb, in, packed.data, 1, true);
          Mat ref;
          REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
          kestrel::kernels::conv_reference(g, wt.data(), b.data(), in.data, in.cstep, ref.data, ref.cstep, 1);
          CHECK(kt::relative_error(got, ref) <= k->tolerance);
          const ConvKernel* planar = kestrel::kernels::select_conv_kernel(g, kestrel::kernels::active_isa());
          if (planar != nullptr && planar->blocked_lanes == 0) {
            Mat planar_packed;
            REQUIRE(planar_packed.create(Shape::make1(int(planar->packed_floats(g)) + 1)));
            planar->pack(g, wt.data(), b.data(), planar_packed.data);
            INFO("against " << planar->name);
            CHECK(kt::same_plane_values(kt::run_conv_kernel(planar, g, in, planar_packed.data, 1), got));
          }
          INFO("4 threads");
          CHECK(kt::same_plane_values(kt::run_conv_kernel(k, gb, in, packed.data, 4, true), got));
          runs += 2;
        }
      }
    }
    MESSAGE("f32_dwconv3x3_pack4_neon: " << runs << " runs");
  }
}
