// The convolution kernels that take channel-blocked operands (ConvKernel::blocked_lanes,
// Option::blocked_layout) against the reference and their own planar runs: every
// combination of a blocked input and output on the geometries they claim (channel-tile
// 1x1 on small maps with pixel tails, partial panels and sliced K; channel-vector
// depthwise at both strides with row and pixel tails, rows up to 114 wide, 3x3 and 5x5
// windows with symmetric, TF SAME and no padding; stems' channel tiles writing blocked
// maps; dense windows on 4-channel blocks, 3x3 to 7x7, strides 1 to 3, dilation, TF
// SAME, tiny maps, maps cut into chunks; channel counts that are whole blocks of 4 but
// not of 8), fused activations including one applied after the store, 1 and 3 threads.
// The same fma chains must give the same bits.
#include <cstring>
#include <map>

#include "conv_test_util.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

// A k x k depthwise layer padded by `pad` before and `pad_end` after (TF's SAME on an
// even map at stride 2 pads one less before).
ConvGeometry depthwise(int c, int h, int w, int s, int pad, ActivationType act, int k = 3, int pad_end = -1) {
  if (pad_end < 0) pad_end = pad;
  ConvGeometry g;
  g.in_c = g.out_c = g.group = c;
  g.in_h = h;
  g.in_w = w;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.pad_top = g.pad_left = pad;
  g.out_h = (h + pad + pad_end - k) / s + 1;
  g.out_w = (w + pad + pad_end - k) / s + 1;
  g.bias = true;
  g.act.type = act;
  g.act.alpha = act == ActivationType::Clip ? 0.f : 0.1f;
  g.act.beta = 6.f;
  return g;
}

std::vector<ConvGeometry> geometries() {
  std::vector<ConvGeometry> out;
  const ActivationType acts[] = {ActivationType::ReLU, ActivationType::None, ActivationType::Clip,
                                 ActivationType::Sigmoid, ActivationType::LeakyReLU};
  int a = 0;
  // 1x1 on maps of at most 256 pixels: pixel counts with every tail of 12 and 6 pixel
  // groups, output channels with partial panels, K up to a sliced 528; then larger maps,
  // claimed by the channel tiles only with a blocked input (up to 56x56).
  struct Pw {
    int c, h, w, out_c;
  };
  for (const Pw& p : {Pw{16, 1, 1, 48}, Pw{48, 3, 3, 80}, Pw{96, 5, 5, 96}, Pw{256, 7, 7, 48}, Pw{528, 7, 7, 80},
                      Pw{256, 13, 13, 96}, Pw{528, 14, 14, 96}, Pw{1040, 5, 5, 48}, Pw{32, 7, 7, 48},
                      Pw{64, 5, 3, 16}, Pw{96, 13, 11, 64}, Pw{256, 16, 16, 24}, Pw{40, 9, 9, 40},
                      Pw{64, 28, 28, 48}, Pw{32, 17, 19, 40}, Pw{128, 56, 56, 32}, Pw{16, 57, 57, 16}}) {
    out.push_back(kt::pointwise(p.c, p.h, p.w, p.out_c, acts[a++ % 5]));
  }
  // 3x3 depthwise, both strides, with and without padding, odd rows and widths; rows
  // with every mix of pixels read in place and from padding (none in place: 2x3 s2).
  struct Dw {
    int c, h, w, s, pad;
  };
  for (const Dw& d : {Dw{16, 14, 14, 1, 1}, Dw{32, 9, 13, 1, 1}, Dw{48, 28, 28, 1, 1}, Dw{32, 14, 14, 2, 1},
                      Dw{16, 15, 11, 2, 1}, Dw{64, 7, 7, 2, 1}, Dw{16, 12, 20, 1, 0}, Dw{24, 33, 30, 2, 0},
                      Dw{40, 56, 56, 1, 1}, Dw{16, 3, 11, 1, 0}, Dw{16, 5, 10, 1, 1}, Dw{32, 2, 3, 2, 1},
                      Dw{16, 1, 1, 2, 1}, Dw{16, 6, 21, 2, 1}, Dw{16, 9, 18, 2, 0}}) {
    out.push_back(depthwise(d.c, d.h, d.w, d.s, d.pad, acts[a++ % 5]));
  }
  // Wide stride-1 rows (MobileNet's 112x112 layers) read and written blocked.
  for (const Dw& d : {Dw{32, 5, 112, 1, 1}, Dw{16, 4, 97, 1, 1}, Dw{16, 3, 114, 1, 0}}) {
    out.push_back(depthwise(d.c, d.h, d.w, d.s, d.pad, acts[a++ % 5]));
  }
  // 4-lane blocks (NEON's pack4): channels a multiple of 4 but not of 8, rows of 1 to
  // 17 pixels (every tail of a 4-pixel step with and without edge pixels), row counts
  // with every tail of 3- and 2-row steps, both strides, pad 0, 1, 2 and TF SAME (0
  // before, 1 after), 1x1 maps.
  struct Dw4 {
    int c, h, w, s, pad, pad_end;
  };
  for (const Dw4& d : {Dw4{4, 1, 1, 1, 1, 1}, Dw4{12, 1, 1, 2, 1, 1}, Dw4{4, 2, 2, 2, 0, 1}, Dw4{20, 7, 7, 1, 1, 1},
                       Dw4{12, 5, 2, 1, 1, 1}, Dw4{4, 3, 3, 1, 0, 0}, Dw4{36, 4, 5, 2, 1, 1}, Dw4{4, 8, 6, 2, 0, 1},
                       Dw4{12, 6, 9, 1, 1, 1}, Dw4{4, 9, 10, 2, 1, 1}, Dw4{20, 10, 11, 1, 0, 0},
                       Dw4{4, 13, 12, 2, 0, 1}, Dw4{12, 11, 13, 1, 1, 1}, Dw4{4, 14, 14, 2, 0, 1},
                       Dw4{4, 12, 15, 1, 1, 1}, Dw4{12, 7, 16, 2, 1, 1}, Dw4{4, 17, 17, 1, 1, 1},
                       Dw4{20, 3, 8, 1, 0, 1}, Dw4{4, 15, 4, 2, 1, 1}, Dw4{4, 5, 6, 1, 2, 2},
                       Dw4{12, 4, 4, 2, 1, 2}, Dw4{4, 9, 12, 1, 1, 0}}) {
    out.push_back(depthwise(d.c, d.h, d.w, d.s, d.pad, acts[a++ % 5], 3, d.pad_end));
  }
  // 1x1 layers between 4-lane blocks: channel counts 4, 12, 20 in and 4, 12, 28 out.
  // Then layers whose blocks outweigh a half-weight twin's room (f32_half_blocks_neon.h:
  // widened in two rooms), on maps long enough for several runs of tiles a thread.
  for (const Pw& p : {Pw{4, 5, 7, 12}, Pw{12, 9, 9, 28}, Pw{20, 3, 11, 4}, Pw{12, 16, 16, 12}, Pw{20, 1, 1, 28},
                      Pw{256, 20, 21, 200}, Pw{512, 7, 9, 132}}) {
    out.push_back(kt::pointwise(p.c, p.h, p.w, p.out_c, acts[a++ % 5]));
  }
  // 5x5 depthwise (MobileNet v3, CenterNet): both strides, symmetric and TF SAME
  // padding, none, 1x1 outputs, rows of 1 to 70 pixels read in place and from padding,
  // 1 to 4 groups of 16 (2 to 8 of 8).
  struct Dw5 {
    int c, h, w, s, pad, pad_end;
  };
  for (const Dw5& d : {Dw5{16, 14, 14, 1, 2, 2}, Dw5{32, 9, 13, 1, 2, 2}, Dw5{48, 28, 28, 1, 2, 2},
                       Dw5{32, 16, 16, 2, 1, 2}, Dw5{16, 15, 11, 2, 2, 2}, Dw5{64, 7, 7, 2, 2, 2},
                       Dw5{16, 12, 20, 1, 0, 0}, Dw5{32, 33, 30, 2, 0, 0}, Dw5{16, 1, 1, 1, 2, 2},
                       Dw5{16, 3, 3, 2, 1, 1}, Dw5{32, 2, 3, 2, 2, 2}, Dw5{16, 5, 70, 1, 2, 2},
                       Dw5{16, 6, 21, 2, 2, 2}, Dw5{48, 4, 41, 2, 1, 2}, Dw5{16, 6, 9, 1, 4, 1}}) {
    out.push_back(depthwise(d.c, d.h, d.w, d.s, d.pad, acts[a++ % 5], 5, d.pad_end));
  }
  // Stems (few input channels, 3x3 to 7x7) writing a blocked map: partial panels of 32
  // channels, rows with every tail of 12 and 4 pixels; an odd count of 4-channel blocks
  // (the last one alone) at 5x5 and 7x7 stride 1.
  struct Stem {
    int c, h, w, out_c, k, s, pad;
  };
  for (const Stem& t : {Stem{3, 33, 31, 32, 3, 2, 1}, Stem{3, 20, 22, 48, 3, 1, 1}, Stem{3, 23, 17, 64, 7, 2, 3},
                        Stem{1, 9, 9, 16, 5, 2, 2}, Stem{4, 11, 26, 16, 3, 2, 0}, Stem{2, 13, 19, 20, 5, 1, 2},
                        Stem{3, 12, 21, 12, 7, 1, 3}}) {
    ConvGeometry g = depthwise(1, t.h, t.w, t.s, t.pad, acts[a++ % 5]);
    g.in_c = t.c;
    g.out_c = t.out_c;
    g.group = 1;
    g.kh = g.kw = t.k;
    g.out_h = (t.h + 2 * t.pad - t.k) / t.s + 1;
    g.out_w = (t.w + 2 * t.pad - t.k) / t.s + 1;
    out.push_back(g);
  }
  // Dense 3x3 stride 1 (Winograd on NEON: 4x4 tiles on small maps, 6x6 from ~28x28 on):
  // channels 8 to 36 with a last output block of 4, maps of 5 to 30 pixels with every
  // partial tile, padding 0, 1, 2 and 1 before / 0 after.
  struct Dense {
    int c, h, w, out_c, pad, pad_end;
  };
  for (const Dense& d : {Dense{8, 7, 7, 16, 1, 1}, Dense{12, 14, 14, 12, 1, 1}, Dense{16, 5, 9, 20, 1, 1},
                         Dense{32, 28, 28, 8, 1, 1}, Dense{20, 17, 13, 28, 0, 0}, Dense{16, 6, 6, 4, 2, 2},
                         Dense{36, 11, 13, 36, 1, 0}, Dense{16, 30, 30, 12, 1, 1}, Dense{8, 29, 31, 24, 1, 1}}) {
    ConvGeometry g = depthwise(1, d.h, d.w, 1, d.pad, acts[a++ % 5], 3, d.pad_end);
    g.in_c = d.c;
    g.out_c = d.out_c;
    g.group = 1;
    out.push_back(g);
  }
  // Dense windows other than 1x1 on 4-channel blocks (NEON's pack4 im2col): 3x3 stride 2
  // on even and odd maps, TF SAME (0 before, 1 after), 3x3 stride 1 on maps of 1x1 to
  // 3x3, 5x5, 7x7 stride 2, dilation 2, stride 3, rectangular windows; channels 4 to 36
  // in and 4, 12, 28 out, or counts only a planar output takes (63, 5); a reduction long
  // enough (K = 2304) that the map is cut into chunks of pixels (ragged last one).
  struct Window {
    int c, h, w, out_c, kh, kw, s, d, pad, pad_end;
  };
  auto window = [&](const Window& t) {
    ConvGeometry g = depthwise(1, t.h, t.w, t.s, t.pad, acts[a++ % 5], t.kh, t.pad_end);
    g.in_c = t.c;
    g.out_c = t.out_c;
    g.group = 1;
    g.kw = t.kw;
    g.dh = g.dw = t.d;
    g.pad_left = t.kw == t.kh ? t.pad : (t.kw - 1) / 2;
    const int pad_w_end = t.kw == t.kh ? t.pad_end : (t.kw - 1) / 2;
    g.out_h = (t.h + t.pad + t.pad_end - t.d * (t.kh - 1) - 1) / t.s + 1;
    g.out_w = (t.w + g.pad_left + pad_w_end - t.d * (t.kw - 1) - 1) / t.s + 1;
    out.push_back(g);
  };
  for (const Window& t : {Window{12, 10, 10, 28, 3, 3, 2, 1, 1, 1}, Window{20, 9, 11, 12, 3, 3, 2, 1, 1, 1},
                          Window{36, 14, 14, 63, 3, 3, 2, 1, 0, 1}, Window{12, 1, 1, 12, 3, 3, 1, 1, 1, 1},
                          Window{20, 2, 2, 28, 3, 3, 1, 1, 1, 1}, Window{36, 3, 3, 4, 3, 3, 1, 1, 1, 1},
                          Window{12, 7, 13, 12, 5, 5, 1, 1, 2, 2}, Window{20, 11, 16, 28, 5, 5, 2, 1, 1, 2},
                          Window{12, 23, 17, 12, 7, 7, 2, 1, 3, 3}, Window{4, 9, 9, 12, 3, 3, 1, 2, 2, 2},
                          Window{20, 6, 16, 4, 3, 3, 1, 2, 1, 1}, Window{4, 8, 7, 28, 5, 5, 3, 1, 2, 2},
                          Window{12, 5, 9, 5, 1, 3, 1, 1, 0, 0}, Window{20, 7, 6, 12, 3, 1, 2, 1, 1, 1},
                          Window{256, 29, 29, 12, 3, 3, 2, 1, 1, 1}}) {
    window(t);
  }
  // Rows of 1 to 17 pixels, both strides, channel counts cycling.
  for (int w = 1; w <= 17; ++w) {
    const int c[] = {12, 20, 36}, oc[] = {4, 12, 28};
    window(Window{c[w % 3], 2 + w % 4, w, oc[w / 3 % 3], 3, 3, 1 + w % 2, 1, 1, 1});
  }
  return out;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("kernels with blocked operands give their planar results bit for bit") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::conv_kernels());
    std::map<std::string, int> tested;
    std::mt19937 rng(23);
    for (const ConvGeometry& g0 : geometries()) {
      Mat in;
      REQUIRE(in.create(Shape::make3(g0.in_w, g0.in_h, g0.in_c)));
      kt::fill_random(in, rng);
      const std::vector<float> w0 = kt::random_vector(size_t(g0.out_c) * (g0.in_c / g0.group) * g0.kh * g0.kw, rng);
      const std::vector<float> w_halves = kt::rounded_to_halves(w0);
      const std::vector<float> b = kt::random_vector(g0.out_c, rng);
      for (const ConvKernel* k : kernels) {
        const int lanes = k->blocked_lanes;
        if (lanes == 0) continue;
        // A half-weight kernel takes weights that are halves (ConvGeometry::half_weights).
        ConvGeometry g = g0;
        g.half_weights = k->half_weights;
        const std::vector<float>& w = k->half_weights ? w_halves : w0;
        // Some geometries are claimed only with a blocked input (the channel tiles on
        // maps above 14x14 read it in place), output (the stems' channel tiles) or both
        // (NEON's pack4 kernels). The first layout claimed is checked against the
        // reference, and every other one against it bit for bit.
        ConvGeometry first = g;
        for (int side = 0; side < 3 && !k->supports(first); ++side) {
          first = g;
          if (side != 1) first.in_pack = lanes;
          if (side != 0) first.out_pack = lanes;
        }
        if (!k->supports(first)) continue;
        Mat packed;
        REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)) + 1)));
        k->pack(g, w.data(), b.data(), packed.data);
        const Mat want = kt::run_conv_kernel(k, first, in, packed.data, 1);
        {
          Mat ref;
          REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
          kestrel::kernels::conv_reference(g, w.data(), b.data(), in.data, in.cstep, ref.data, ref.cstep, 1);
          INFO(std::string(k->name) << (first.planar() ? "" : " (blocked only)") << ": " << kt::describe_conv(first));
          CHECK(kt::relative_error(want, ref) <= k->tolerance);
        }
        // A kernel of blocked input and output only (NEON's pack4) stands in for the
        // planar kernel chosen for the layer, which must give the same bits (a network
        // with blocked maps computes what it does with planar ones).
        if (first.in_pack != 1 && first.out_pack != 1) {
          const ConvKernel* planar = kestrel::kernels::select_conv_kernel(g, kestrel::kernels::active_isa());
          if (planar != nullptr && planar->blocked_lanes == 0) {
            Mat planar_packed;
            REQUIRE(planar_packed.create(Shape::make1(int(planar->packed_floats(g)) + 1)));
            planar->pack(g, w.data(), b.data(), planar_packed.data);
            INFO(std::string(k->name) << " against " << planar->name << ": " << kt::describe_conv(first));
            CHECK(kt::same_plane_values(kt::run_conv_kernel(planar, g, in, planar_packed.data, 1), want));
          }
        }
        // A half-weight kernel equals its fp32 twin bit for bit.
        if (const ConvKernel* twin = k->half_weights ? kt::fp32_twin(kernels, k) : nullptr) {
          Mat twin_packed;
          REQUIRE(twin_packed.create(Shape::make1(int(twin->packed_floats(g)) + 1)));
          twin->pack(g, w.data(), b.data(), twin_packed.data);
          for (int threads : {1, 3}) {
            INFO(std::string(k->name) << " against " << std::string(twin->name) << ", threads " << threads << ": "
                                      << kt::describe_conv(first));
            CHECK(kt::same_plane_values(kt::run_conv_kernel(twin, first, in, twin_packed.data, threads),
                                        kt::run_conv_kernel(k, first, in, packed.data, threads)));
          }
        }
        for (int in_pack : {1, lanes}) {
          for (int out_pack : {1, lanes}) {
            ConvGeometry gb = g;
            gb.in_pack = in_pack;
            gb.out_pack = out_pack;
            if (gb.planar()) continue;
            const bool whole_blocks = (in_pack == 1 || g.in_c % lanes == 0) && (out_pack == 1 || g.out_c % lanes == 0);
            INFO(std::string(k->name) << ": " << kt::describe_conv(gb));
            // Never claimed where the channels are not whole blocks.
            if (!whole_blocks) CHECK_FALSE(k->supports(gb));
            if (!k->supports(gb)) continue;
            for (int threads : {1, 3}) {
              INFO("threads " << threads);
              CHECK(kt::same_plane_values(kt::run_conv_kernel(k, gb, in, packed.data, threads), want));
            }
            tested[k->name]++;
          }
        }
      }
    }
    for (const ConvKernel* k : kernels) {
      // fp16 kernels have no planar fp32 twin: test_kernels_f16.cpp holds them to the
      // fp16 reference.
      if (k->blocked_lanes == 0 || k->f16 || k->bf16) continue;  // bf16: test_kernels_bf16.cpp
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no blocked geometry was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " blocked runs");
    }
  }
}
