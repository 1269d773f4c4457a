// The NEON stem kernel (f32_conv_stem_8x4_pack1to4_neon: K x K windows of few planar
// channels into 4-channel blocks) against the planar SGEMM (f32_conv_sgemm_8x12_neon)
// bit for bit: a network computes the same with its stem's output blocked or not.
// Tiles read the input in place where their window lies inside it and padded copies of
// the rows elsewhere, so the cases cover both and their borders: windows 3, 5, 7,
// strides 1 and 2, 1 to 8 channels (3: the unrolled 3x3 step), rows of 1 to 70 pixels
// (every tail of the 8-pixel tile; tiles whose loads run past the row, on the map's last
// row or not), paddings 0 to K - 1 and uneven, output counts with an odd last block of
// 4, every epilogue, 1 and 4 threads, NaN in the input's channel padding; biases of -0
// with all-zero windows and negative weights (where the first product's fmul would give
// -0 where the SGEMM's fma onto +0 gives +0). On other architectures the kernels are absent and the cases
// say so; on a NEON build a kernel dropped from the registry fails.
#include <cmath>
#include <cstring>

#include "conv_test_util.h"
#include "kernels/isa.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;
using kt::find_kernel;

bool expected() { return kestrel::kernels::active_isa() == kestrel::kernels::Isa::kNeon; }

struct Case {
  int in_c, h, w, out_c, k, s, pad_top, pad_left, pad_bottom, pad_right;
  ActivationType act;
};

ConvGeometry geometry(const Case& c) {
  ConvGeometry g;
  g.in_c = c.in_c;
  g.in_h = c.h;
  g.in_w = c.w;
  g.out_c = c.out_c;
  g.kh = g.kw = c.k;
  g.sh = g.sw = c.s;
  g.pad_top = c.pad_top;
  g.pad_left = c.pad_left;
  g.out_h = (c.h + c.pad_top + c.pad_bottom - c.k) / c.s + 1;
  g.out_w = (c.w + c.pad_left + c.pad_right - c.k) / c.s + 1;
  g.bias = true;
  g.act.type = c.act;
  g.act.alpha = c.act == ActivationType::Clip ? -0.5f : 0.1f;
  g.act.beta = 0.5f;
  return g;
}

std::vector<Case> cases() {
  using A = ActivationType;
  const A acts[] = {A::ReLU, A::None, A::Clip, A::LeakyReLU, A::Sigmoid};
  std::vector<Case> out = {
      // MobileNet v1's and SSD's stems at a smaller size, ResNet's 7x7 stride 2 pad 3
      // (its last tile over the right padding), TF SAME (0 before, 1 after).
      {3, 45, 61, 32, 3, 2, 1, 1, 1, 1, A::ReLU},
      {3, 40, 40, 32, 3, 2, 1, 1, 1, 1, A::ReLU},
      {3, 37, 53, 64, 7, 2, 3, 3, 3, 3, A::ReLU},
      {3, 34, 34, 16, 3, 2, 0, 0, 1, 1, A::Clip},
      {3, 33, 33, 24, 3, 1, 1, 1, 1, 1, A::None},
      {3, 20, 70, 12, 5, 1, 2, 2, 2, 2, A::LeakyReLU},
  };
  // A sweep: every window and stride, 1 to 8 channels, widths 1 to 70, paddings 0 to
  // K - 1 on each side, 4 to 36 outputs.
  for (int i = 0; i < 48; ++i) {
    const int k = 3 + 2 * (i % 3), s = 1 + i / 3 % 2, in_c = 1 + (i * 5) % 8;
    const int w = 1 + (i * 37) % 70, h = 1 + (i * 11) % 13;
    const int pl = (i / 2) % k, pr = (i / 5) % k, pt = (i / 3) % k, pb = (i / 7) % k;
    Case c{in_c, h, w, 4 + 4 * (i % 9), k, s, pt, pl, pb, pr, acts[i % 5]};
    if (w + pl + pr < k || h + pt + pb < k) continue;
    out.push_back(c);
  }
  return out;
}

// The stem's blocked output (unpacked) and the SGEMM's planar one, same bits.
void check_same(const ConvKernel* stem, const ConvKernel* sgemm, const ConvGeometry& g, const Mat& in,
                const std::vector<float>& w, const std::vector<float>& b) {
  ConvGeometry blocked = g;
  blocked.out_pack = 4;
  REQUIRE(stem->supports(blocked));
  REQUIRE(sgemm->supports(g));
  const float* bias = g.bias ? b.data() : nullptr;
  Mat stem_packed, sgemm_packed;
  REQUIRE(stem_packed.create(Shape::make1(int(stem->packed_floats(blocked)))));
  REQUIRE(sgemm_packed.create(Shape::make1(int(sgemm->packed_floats(g)))));
  stem->pack(blocked, w.data(), bias, stem_packed.data);
  sgemm->pack(g, w.data(), bias, sgemm_packed.data);
  const Mat want = kt::run_conv_kernel(sgemm, g, in, sgemm_packed.data, 1);
  for (int threads : kt::kernel_thread_counts()) {
    INFO("threads " << threads);
    CHECK(kt::same_plane_values(kt::run_conv_kernel(stem, blocked, in, stem_packed.data, threads, true), want));
  }
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("NEON stem kernel: the planar SGEMM's bits, in place and padded rows, every window and stride") {
    const ConvKernel* stem = find_kernel("f32_conv_stem_8x4_pack1to4_neon");
    const ConvKernel* sgemm = find_kernel("f32_conv_sgemm_8x12_neon");
    if (!stem || !sgemm) {
      CHECK_FALSE(expected());
      MESSAGE("no NEON stem or SGEMM kernel in this build: nothing to run");
      return;
    }
    std::mt19937 rng(61);
    int runs = 0;
    for (const Case& c : cases()) {
      const ConvGeometry g = geometry(c);
      INFO(kt::describe_conv(g));
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      kt::fill_random(in, rng);
      const std::vector<float> w = kt::random_vector(size_t(g.out_c) * g.in_c * g.kh * g.kw, rng);
      const std::vector<float> b = kt::random_vector(g.out_c, rng);
      check_same(stem, sgemm, g, in, w, b);
      ++runs;
    }
    MESSAGE("f32_conv_stem_8x4_pack1to4_neon: " << runs << " geometries");
  }

  TEST_CASE("NEON stem kernel: biases of -0 and none on zero windows, the planar SGEMM's bits") {
    const ConvKernel* stem = find_kernel("f32_conv_stem_8x4_pack1to4_neon");
    const ConvKernel* sgemm = find_kernel("f32_conv_sgemm_8x12_neon");
    if (!stem || !sgemm) {
      CHECK_FALSE(expected());
      MESSAGE("no NEON stem or SGEMM kernel in this build: nothing to run");
      return;
    }
    std::mt19937 rng(67);
    for (const Case& c : {Case{3, 19, 29, 24, 3, 2, 1, 1, 1, 1, ActivationType::None},
                          Case{2, 9, 21, 12, 5, 1, 2, 2, 2, 2, ActivationType::LeakyReLU},
                          Case{3, 17, 23, 20, 7, 2, 3, 3, 3, 3, ActivationType::None}}) {
      for (int variant = 0; variant < 2; ++variant) {
        ConvGeometry g = geometry(c);
        g.bias = variant == 0;
        INFO(kt::describe_conv(g) << (g.bias ? " biases of -0" : " no bias"));
        Mat in;
        REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
        kt::fill_random(in, rng);
        // The top half of the map zero, so windows there hold only zero products (of
        // either sign: the weights are of both).
        for (int q = 0; q < g.in_c; ++q) std::fill(in.channel(q), in.channel(q) + g.in_w * (g.in_h / 2), 0.f);
        // Every third output channel: a bias of -0 and only negative weights, so that
        // there every product is -0 (an fmul first would leave -0, and -0 + -0 is -0).
        const size_t taps = size_t(g.in_c) * g.kh * g.kw;
        std::vector<float> w = kt::random_vector(size_t(g.out_c) * taps, rng);
        std::vector<float> b = kt::random_vector(g.out_c, rng);
        for (size_t i = 0; i < b.size(); i += 3) {
          b[i] = -0.f;
          for (size_t t = 0; t < taps; ++t) w[i * taps + t] = -std::fabs(w[i * taps + t]) - 0.01f;
        }
        check_same(stem, sgemm, g, in, w, b);
      }
    }
  }
}
