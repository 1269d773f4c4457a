// The NEON pack4 im2col convolution (f32_conv_im2col_pack4_neon) on its own: what it
// claims and what it computes. It must take a layer's geometry in every layout of whole
// blocks or in none (the layout pass may block the maps or not and the bits must not
// change), never one that a kernel before it claims in some layout (1x1, Winograd, the
// stems), and the dense layers that the SGEMM ran before it: ResNet-18's and
// MobileNet-SSD's strided 3x3. Computed: against the reference, and bit for bit across
// layouts and thread counts, on windows of 1x3 to 7x7, strides 1 to 3, dilation 2, TF
// SAME, maps of 1x1 to 29x29 (every tail of the 8-pixel tile, maps cut into chunks),
// 4 to 256 input channels, output counts with a last block of 4 and, planar, any
// count; every epilogue; NaN in the input's channel padding shows any read of it. On
// other architectures the kernel is absent and the cases say so; on a NEON build a
// kernel dropped from the registry fails.
#include <cstring>

#include "conv_test_util.h"
#include "kernels/isa.h"

namespace {

using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

constexpr const char* kName = "f32_conv_im2col_pack4_neon";

const ConvKernel* find_kernel() {
  for (const ConvKernel* k : kt::runnable_kernels(kestrel::kernels::conv_kernels())) {
    if (std::strcmp(k->name, kName) == 0) return k;
  }
  return nullptr;
}

// True where the kernel should be there: a NEON build running NEON.
bool expected() { return kestrel::kernels::active_isa() == kestrel::kernels::Isa::kNeon; }

struct Case {
  int in_c, h, w, out_c, kh, kw, s, d;
  int pad_top, pad_left, pad_bottom, pad_right;
  ActivationType act = ActivationType::ReLU;
};

ConvGeometry geometry(const Case& c) {
  ConvGeometry g;
  g.in_c = c.in_c;
  g.in_h = c.h;
  g.in_w = c.w;
  g.out_c = c.out_c;
  g.kh = c.kh;
  g.kw = c.kw;
  g.sh = g.sw = c.s;
  g.dh = g.dw = c.d;
  g.pad_top = c.pad_top;
  g.pad_left = c.pad_left;
  g.out_h = (c.h + c.pad_top + c.pad_bottom - c.d * (c.kh - 1) - 1) / c.s + 1;
  g.out_w = (c.w + c.pad_left + c.pad_right - c.d * (c.kw - 1) - 1) / c.s + 1;
  g.bias = true;
  g.act.type = c.act;
  g.act.alpha = c.act == ActivationType::Clip ? -0.5f : 0.1f;
  g.act.beta = 0.5f;
  return g;
}

// k x k, stride s, padding p on every side.
Case square(int in_c, int hw, int out_c, int k, int s, int p, ActivationType act = ActivationType::ReLU) {
  return Case{in_c, hw, hw, out_c, k, k, s, 1, p, p, p, p, act};
}

ConvGeometry with_packs(ConvGeometry g, int in_pack, int out_pack) {
  g.in_pack = in_pack;
  g.out_pack = out_pack;
  return g;
}

std::vector<Case> cases() {
  using A = ActivationType;
  return {
      // Strided 3x3 as in ResNet-18 and MobileNet-SSD (fewer channels): even and odd
      // maps, outputs of 5x5 (3 tiles and 1), 3x3 (8 + 1), 2x2 (4) and 1x1 (1).
      square(64, 14, 40, 3, 2, 1),
      square(32, 10, 24, 3, 2, 1, A::None),
      square(16, 5, 20, 3, 2, 1, A::Clip),
      square(12, 3, 28, 3, 2, 1, A::LeakyReLU),
      square(12, 2, 12, 3, 2, 1, A::Sigmoid),
      // TF SAME at stride 2 on an even map (0 before, 1 after); outputs of 2, 3, 5, 6, 7,
      // 12 and 14 pixels (every tail of the 8-pixel tile); a last output block of 4.
      Case{20, 12, 12, 12, 3, 3, 2, 1, 0, 0, 1, 1, A::ReLU},
      Case{12, 4, 1, 4, 3, 3, 2, 1, 1, 1, 1, 1, A::HardSwish},
      Case{12, 1, 3, 20, 3, 3, 1, 1, 1, 1, 1, 1, A::None},
      Case{36, 5, 1, 12, 3, 3, 1, 1, 1, 1, 1, 1, A::ReLU},
      Case{4, 2, 3, 28, 3, 3, 1, 2, 2, 2, 2, 2, A::Clip},
      Case{4, 7, 1, 12, 3, 3, 1, 2, 2, 2, 2, 2, A::None},
      Case{12, 13, 3, 8, 5, 5, 2, 1, 2, 2, 2, 2, A::LeakyReLU},
      Case{12, 9, 5, 16, 3, 3, 3, 1, 1, 1, 1, 1, A::ReLU},
      // 3x3 stride 1 on maps too small for Winograd (1x1, 2x2, 1x3, 5x1), 5x5, 7x7 stride 2, dilation 2,
      // stride 3, windows of 1x3 and 3x1, asymmetric padding, no padding.
      square(16, 1, 16, 3, 1, 1),
      square(24, 2, 32, 3, 1, 1, A::None),
      square(12, 7, 12, 5, 1, 2, A::Sigmoid),
      square(12, 17, 16, 7, 2, 3),
      Case{20, 9, 10, 28, 3, 3, 1, 2, 2, 2, 2, 2, A::ReLU},
      Case{8, 11, 8, 12, 3, 3, 1, 2, 1, 2, 3, 0, A::None},
      Case{16, 6, 11, 8, 1, 3, 1, 1, 0, 1, 0, 1, A::Clip},
      Case{12, 11, 6, 12, 3, 1, 2, 1, 1, 0, 1, 0, A::ReLU},
      Case{4, 10, 13, 4, 5, 3, 3, 1, 0, 2, 1, 0, A::LeakyReLU},
      Case{16, 8, 9, 20, 3, 3, 2, 1, 0, 0, 0, 0, A::HardSwish},
      // Output counts for a planar output only (63: the SSD confidence heads' 21 x 3).
      square(16, 4, 63, 3, 2, 1),
      square(12, 2, 5, 3, 1, 1, A::None),
      // K = 2304: chunks of 112 pixels over a 15x15 output (the last of 1 pixel), and
      // many output blocks on a tiny map (weight-major items).
      square(256, 29, 12, 3, 2, 1),
      square(128, 3, 72, 3, 2, 1, A::None),
  };
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pack4 im2col NEON kernel: the reference, and the same bits on every layout and thread count") {
    const ConvKernel* k = find_kernel();
    if (!k) {
      CHECK_FALSE(expected());
      MESSAGE("no NEON pack4 im2col kernel in this build: nothing to run");
      return;
    }
    std::mt19937 rng(43);
    int runs = 0;
    for (const Case& c : cases()) {
      const ConvGeometry g = geometry(c);
      INFO(kt::describe_conv(g));
      runs += kt::check_every_layout(k, g, rng, {1, 2, 3});
    }
    MESSAGE(std::string(kName) << ": " << runs << " runs");
  }

  TEST_CASE("pack4 im2col NEON kernel: takes the strided 3x3 layers, every layout or none, nothing claimed before it") {
    const ConvKernel* k = find_kernel();
    if (!k) {
      CHECK_FALSE(expected());
      MESSAGE("no NEON pack4 im2col kernel in this build: nothing to check");
      return;
    }
    const auto isa = kestrel::kernels::active_isa();
    // ResNet-18's strided 3x3 layers; MobileNet-SSD's conv14_2 to conv17_2.
    for (const Case& c : {square(64, 56, 128, 3, 2, 1), square(128, 28, 256, 3, 2, 1), square(256, 14, 512, 3, 2, 1),
                          square(256, 10, 512, 3, 2, 1), square(128, 5, 256, 3, 2, 1), square(128, 3, 256, 3, 2, 1),
                          square(64, 2, 128, 3, 2, 1)}) {
      for (int in_pack : {1, 4}) {
        for (int out_pack : {1, 4}) {
          const ConvGeometry g = with_packs(geometry(c), in_pack, out_pack);
          INFO(kt::describe_conv(g));
          CHECK(kestrel::kernels::select_conv_kernel(g, isa) == k);
        }
      }
    }
    auto refuses = [&](const char* what, const Case& c) {
      INFO(what);
      for (int in_pack : {1, 4}) {
        for (int out_pack : {1, 4}) {
          const ConvGeometry g = with_packs(geometry(c), in_pack, out_pack);
          INFO(kt::describe_conv(g));
          CHECK_FALSE(k->supports(g));
        }
      }
    };
    refuses("1x1", square(16, 8, 16, 1, 1, 0));
    refuses("1x1 padded", square(16, 8, 16, 1, 1, 1));
    refuses("a stem (few planar channels into blocks)", square(8, 16, 16, 3, 2, 1));
    refuses("a 4-channel 7x7 stem", square(4, 32, 16, 7, 2, 3));
    refuses("part of a channel block", square(18, 8, 16, 3, 2, 1));
    refuses("Winograd's", square(64, 28, 64, 3, 1, 1));
    {
      ConvGeometry g = geometry(square(16, 8, 16, 3, 2, 1));
      g.group = 2;
      CHECK_FALSE(k->supports(g));
      g = with_packs(geometry(square(16, 8, 16, 3, 2, 1)), 8, 8);
      CHECK_FALSE(k->supports(g));
    }
    // Every layout or none, on a sweep of dense geometries (the stems' and Winograd's
    // among them).
    int claimed = 0;
    for (int in_c : {4, 8, 12, 64}) {
      for (int k_size : {1, 3, 5, 7}) {
        for (int s = 1; s <= 2; ++s) {
          for (int hw : {1, 3, 8, 28}) {
            const ConvGeometry g = geometry(square(in_c, hw, 16, k_size, s, k_size / 2));
            INFO(kt::describe_conv(g));
            const bool planar = k->supports(g);
            claimed += planar;
            for (int in_pack : {1, 4}) {
              for (int out_pack : {1, 4}) CHECK(k->supports(with_packs(g, in_pack, out_pack)) == planar);
            }
          }
        }
      }
    }
    CHECK(claimed > 0);
  }
}
