// Every convolution kernel of the registry against kernels::conv_reference on seeded
// random geometries (odd channel counts and widths, 1x1 and tiny maps, strides 1 and
// 2, every padding, dilation, groups, depthwise, fused activations), with 1 and 4
// threads. Each kernel must claim some geometries of the sweep, so none goes untested.
#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/conv_kernels.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

std::string describe(const ConvGeometry& g) {
  std::ostringstream o;
  o << g.in_c << "x" << g.in_h << "x" << g.in_w << " -> " << g.out_c << "x" << g.out_h << "x" << g.out_w << " k"
    << g.kh << "x" << g.kw << " s" << g.sh << "x" << g.sw << " d" << g.dh << "x" << g.dw << " pad " << g.pad_top << ","
    << g.pad_left << " group " << g.group << (g.bias ? " bias" : "") << " act " << int(g.act.type);
  return o.str();
}

// Output extent with explicit padding (begin, end).
int out_extent(int in, int k, int s, int d, int pb, int pe) { return (in + pb + pe - d * (k - 1) - 1) / s + 1; }

kestrel::ActivationSpec random_activation(std::mt19937& rng) {
  kestrel::ActivationSpec a;
  switch (rng() % 6) {
    case 0: case 1: a.type = ActivationType::None; break;
    case 2: a.type = ActivationType::ReLU; break;
    case 3: a.type = ActivationType::Clip; a.alpha = 0.f; a.beta = 0.5f; break;
    case 4: a.type = ActivationType::LeakyReLU; a.alpha = 0.1f; break;
    default: a.type = ActivationType::Sigmoid; break;
  }
  return a;
}

// 5x5 depthwise edges (the channel-vector kernels, f32_dwconv_cvec_x86.h): every
// padding 0..4 on each side (TF's asymmetric SAME pads among them) with strides 1 and 2
// on maps of 1..12, 1x1 outputs; channel counts below, at and above the 8- and 16-lane
// groups; rows of 13..70 pixels (several U-pixel steps and W-pixel chunks, partial
// ones); MobileNet v3 / CenterNet shapes at reduced size, where 4 threads split rows.
void add_dw5_edges(std::vector<ConvGeometry>& out, std::mt19937& rng) {
  auto add = [&](int c, int h, int w, int s, int pt, int pl, int pb, int pr) {
    ConvGeometry g;
    g.in_c = g.out_c = g.group = c;
    g.kh = g.kw = 5;
    g.sh = g.sw = s;
    g.pad_top = pt;
    g.pad_left = pl;
    g.in_h = std::max(h, 5 - pt - pb);
    g.in_w = std::max(w, 5 - pl - pr);
    g.out_h = out_extent(g.in_h, 5, s, 1, pt, pb);
    g.out_w = out_extent(g.in_w, 5, s, 1, pl, pr);
    g.bias = rng() % 4 != 0;
    g.act = random_activation(rng);
    out.push_back(g);
  };
  const int channels[] = {1, 3, 8, 9, 16, 17, 24, 33, 40};
  for (int s = 1; s <= 2; ++s) {
    for (int p = 0; p < 125; ++p) {
      add(channels[(p + s) % 9], 1 + (7 * p + s) % 12, 1 + (3 * p + 5 * s) % 12, s, p % 5, p / 5 % 5, p / 25,
          (p + p / 5) % 5);
    }
    for (int w = 13; w <= 70; w += 3) add(1 + w % 18, 2 + w % 9, w, s, w % 5, w / 5 % 5, (w + s) % 5, w / 3 % 5);
    // 1x1 outputs: a 1x1 map padded by 2, a 3x3 map at stride 2, an unpadded 5x5 map.
    add(17, 1, 1, s, 2, 2, 2, 2);
    add(16, 3, 3, s, 1, 1, 1, 1);
    add(8, 5, 5, s, 0, 0, 0, 0);
    // TF's SAME on even maps: 1 before, 2 after at stride 2; 2 and 2 at stride 1.
    add(48, 16, 16, s, s == 2 ? 1 : 2, s == 2 ? 1 : 2, 2, 2);
    add(40, 30, 22, s, s == 2 ? 1 : 2, s == 2 ? 1 : 2, 2, 2);
    add(72, 20, 20, s, 2, 2, 2, 2);
  }
}

// Geometries shaped like the ones kernels specialise in (1x1, 3x3 depthwise, 3x3
// dense, the 3-channel stem), plus general ones, at awkward sizes.
std::vector<ConvGeometry> sweep() {
  std::mt19937 rng(20261122);
  const int channels[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 24, 31, 33};
  const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 23};
  auto pick = [&](const auto& v) { return v[rng() % (sizeof(v) / sizeof(v[0]))]; };
  std::vector<ConvGeometry> out;
  for (int i = 0; i < 420; ++i) {
    ConvGeometry g;
    const int family = i % 6;
    g.in_c = pick(channels);
    g.out_c = pick(channels);
    g.in_h = pick(sizes);
    g.in_w = pick(sizes);
    g.sh = g.sw = 1 + int(rng() % 2);
    if (family == 0) {  // 1x1
      g.kh = g.kw = 1;
    } else if (family == 1) {  // depthwise 3x3
      g.kh = g.kw = 3;
      g.group = g.out_c = g.in_c;
    } else if (family == 2) {  // dense 3x3, stride 1 (Winograd territory)
      g.kh = g.kw = 3;
      g.sh = g.sw = 1;
    } else if (family == 3) {  // the stem: 3 channels, 3x3 stride 2
      g.kh = g.kw = 3;
      g.in_c = 3;
      g.sh = g.sw = 2;
    } else if (family == 4) {  // other kernel sizes, rectangular, dilated
      g.kh = 1 + int(rng() % 5);
      g.kw = 1 + int(rng() % 5);
      g.dh = g.dw = (rng() % 4 == 0) ? 2 : 1;
    } else {  // grouped
      g.kh = g.kw = 1 + 2 * int(rng() % 2);
      g.group = 1 + int(rng() % 3);
      g.in_c = g.group * (1 + int(rng() % 5));
      g.out_c = g.group * (1 + int(rng() % 5));
    }
    const int pt = int(rng() % g.kh), pl = int(rng() % g.kw);
    const int pb = int(rng() % g.kh), pr = int(rng() % g.kw);
    // Half the cases use the symmetric "same" padding networks have.
    const bool same = rng() % 2 == 0;
    g.pad_top = same ? g.dh * (g.kh - 1) / 2 : pt;
    g.pad_left = same ? g.dw * (g.kw - 1) / 2 : pl;
    g.in_h = std::max(g.in_h, g.dh * (g.kh - 1) + 1 - g.pad_top - (same ? g.pad_top : pb));
    g.in_w = std::max(g.in_w, g.dw * (g.kw - 1) + 1 - g.pad_left - (same ? g.pad_left : pr));
    g.out_h = out_extent(g.in_h, g.kh, g.sh, g.dh, g.pad_top, same ? g.pad_top : pb);
    g.out_w = out_extent(g.in_w, g.kw, g.sw, g.dw, g.pad_left, same ? g.pad_left : pr);
    if (g.out_h < 1 || g.out_w < 1) continue;
    g.bias = rng() % 3 != 0;
    g.act = random_activation(rng);
    out.push_back(g);
  }
  // MobileNet v1 shapes at reduced size (the full ones are the benchmarks' job).
  auto add = [&](int ic, int hw, int oc, int k, int s, int group) {
    ConvGeometry g;
    g.in_c = ic; g.in_h = g.in_w = hw; g.out_c = oc; g.kh = g.kw = k; g.sh = g.sw = s; g.group = group;
    g.pad_top = g.pad_left = k / 2;
    g.out_h = g.out_w = out_extent(hw, k, s, 1, k / 2, k / 2);
    g.bias = true;
    g.act.type = ActivationType::ReLU;
    out.push_back(g);
  };
  add(3, 32, 32, 3, 2, 1);
  add(32, 28, 32, 3, 1, 32);
  add(32, 28, 64, 1, 1, 1);
  add(64, 28, 64, 3, 2, 64);
  add(128, 14, 128, 1, 1, 1);
  add(256, 7, 256, 3, 1, 256);
  add(512, 7, 100, 1, 1, 1);
  add(64, 20, 48, 3, 1, 1);
  // 1x1 with unequal strides on odd extents (rows only / columns only subsampled), a
  // wide stride-2 map whose last sampled column is its last one, and 6 output channels
  // left over after blocks of 8 (no count in `channels` leaves 6).
  auto add_1x1 = [&](int ic, int h, int w, int oc, int sh, int sw, ActivationType act) {
    ConvGeometry g;
    g.in_c = ic; g.in_h = h; g.in_w = w; g.out_c = oc; g.sh = sh; g.sw = sw;
    g.out_h = out_extent(h, 1, sh, 1, 0, 0);
    g.out_w = out_extent(w, 1, sw, 1, 0, 0);
    g.bias = true;
    g.act.type = act;
    g.act.alpha = 0.1f;
    out.push_back(g);
  };
  add_1x1(9, 13, 11, 14, 1, 2, ActivationType::LeakyReLU);
  add_1x1(6, 11, 13, 3, 2, 1, ActivationType::TanH);
  add_1x1(13, 5, 33, 22, 2, 2, ActivationType::None);
  // 3x3 depthwise edges: every padding 0..2 on each side with strides 1 and 2 on maps
  // of 1..10 (tiny maps, odd output row counts, partial 8-pixel steps), then rows of
  // 11..45 where interior steps sit between the left and right edges.
  auto add_dw = [&](int c, int h, int w, int s, int pt, int pl, int pb, int pr) {
    ConvGeometry g;
    g.in_c = g.out_c = g.group = c;
    g.kh = g.kw = 3;
    g.sh = g.sw = s;
    g.pad_top = pt;
    g.pad_left = pl;
    g.in_h = std::max(h, 3 - pt - pb);
    g.in_w = std::max(w, 3 - pl - pr);
    g.out_h = out_extent(g.in_h, 3, s, 1, pt, pb);
    g.out_w = out_extent(g.in_w, 3, s, 1, pl, pr);
    g.bias = rng() % 4 != 0;
    g.act = random_activation(rng);
    out.push_back(g);
  };
  for (int s = 1; s <= 2; ++s) {
    for (int p = 0; p < 81; ++p) {
      add_dw(1 + (p + s) % 5, 1 + (7 * p + s) % 10, 1 + (3 * p + 5 * s) % 10, s, p % 3, p / 3 % 3, p / 9 % 3, p / 27);
    }
    for (int w = 11; w <= 45; ++w) add_dw(1 + w % 3, 2 + w % 7, w, s, w % 3, w / 3 % 3, w / 9 % 3, (w + s) % 3);
  }
  // Winograd F(4,3) territory: dense 3x3 stride 1, every padding 0..2 on each side,
  // 8..33 channels, maps from below the kernel's claim threshold up to rows wide enough
  // for its vld4 interior path (20-column input windows), partial tiles and blocks.
  // Then the general (im2col SGEMM) cases the random families rarely draw: the stem at
  // odd sizes, 1x1 with padding, grouped 1x1 read in place, stride 3, a channel
  // multiplier, 5x5 and stride-3 depthwise, dilation 2 and 3, and reductions long
  // enough (K = 864, 2880) that the im2col blocks shrink to a few tiles and one tile.
  auto add_general = [&](int ic, int h, int w, int oc, int kh, int kw, int s, int d, int group, int pt, int pl, int pb,
                         int pr) {
    ConvGeometry g;
    g.in_c = ic; g.in_h = h; g.in_w = w; g.out_c = oc; g.kh = kh; g.kw = kw; g.sh = g.sw = s; g.dh = g.dw = d;
    g.group = group; g.pad_top = pt; g.pad_left = pl;
    g.out_h = out_extent(h, kh, s, d, pt, pb);
    g.out_w = out_extent(w, kw, s, d, pl, pr);
    g.bias = rng() % 4 != 0;
    g.act = random_activation(rng);
    out.push_back(g);
  };
  for (int p = 0; p < 81; ++p) {
    add_general(8 + 5 * p % 26, 6 + 3 * p % 19, 6 + 11 * p % 23, 8 + 7 * p % 27, 3, 3, 1, 1, 1, p % 3, p / 3 % 3,
                p / 9 % 3, p / 27);
  }
  add_general(64, 30, 30, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  add_general(3, 33, 31, 16, 3, 3, 2, 1, 1, 1, 1, 0, 1);
  add_general(3, 17, 17, 32, 3, 3, 2, 1, 1, 0, 0, 0, 0);
  add_general(5, 6, 7, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  add_general(12, 8, 8, 12, 1, 1, 1, 1, 3, 0, 0, 0, 0);
  add_general(7, 14, 13, 10, 3, 3, 3, 1, 1, 1, 1, 1, 1);
  add_general(6, 11, 9, 12, 3, 3, 1, 1, 6, 1, 1, 1, 1);
  add_general(10, 12, 15, 10, 5, 5, 1, 1, 10, 2, 2, 2, 2);
  add_general(9, 13, 13, 9, 3, 3, 3, 1, 9, 1, 1, 1, 1);
  add_general(8, 15, 14, 11, 3, 3, 1, 2, 1, 2, 2, 2, 2);
  add_general(5, 16, 17, 7, 3, 5, 2, 3, 1, 3, 6, 3, 6);
  add_general(320, 5, 6, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  add_general(96, 9, 9, 20, 3, 3, 2, 1, 1, 1, 1, 1, 1);
  // 1x1 on small maps with many channels (the channel-tile kernels' pixel groups, read
  // from a copy): groups of 12 (AVX-512) or 6 (AVX2) pixels with tails of 1 to 5,
  // fewer pixels than a group, one pixel, output channels short of a panel.
  for (int p = 0; p < 6; ++p) {
    const int h = 1 + 3 * p % 14, w = 1 + (5 * p + 2) % 14;
    add_general(64 + 37 * p, h, w, 33 + 13 * p, 1, 1, 1, 1, 1, 0, 0, 0, 0);
  }
  add_general(200, 14, 14, 70, 1, 1, 1, 1, 1, 0, 0, 0, 0);
  add_general(300, 7, 7, 48, 1, 1, 1, 1, 1, 0, 0, 0, 0);
  // Maps the SGEMM kernels split by pixels at 4 threads, with shares that end near a
  // tile's end (952 / 4 = 238 = 4 x 48 + 46) once rounded to whole cache lines.
  add_general(16, 28, 34, 20, 1, 1, 1, 1, 1, 0, 0, 0, 0);
  add_general(17, 29, 27, 24, 1, 1, 1, 1, 1, 0, 0, 0, 0);
  add_general(9, 28, 34, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  // Long reductions on small maps (x86 channel tiles: K in slices of 256, all pixels
  // in one block of several tiles, the last one short).
  add_general(130, 7, 7, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  add_general(70, 9, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  // x86 Winograd at network-like channel counts (odd ones): several blocks of 16- or
  // 8-tile vectors with partial units at the row ends, blocks shrunk to one vector by
  // a long reduction, asymmetric padding.
  add_general(67, 57, 58, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  add_general(260, 14, 15, 19, 3, 3, 1, 1, 1, 0, 1, 2, 1);
  add_general(100, 28, 28, 130, 3, 3, 1, 1, 1, 2, 0, 1, 2);
  // 3x3 depthwise rows wide enough for whole 64-pixel steps (AVX-512: 4 x 16 lanes)
  // and a partial step after them, strides 1 and 2, paddings 0..2 varied by width.
  for (int w : {63, 64, 65, 97, 130, 131, 161}) {
    for (int s = 1; s <= 2; ++s) add_dw(1 + w % 3, 3 + w % 4, w, s, w % 3, (w + s) % 3, (w / 2) % 3, (w + 1) % 3);
  }
  // Stems read from padded input rows (x86 f32_conv_rows_*): 1 to 4 channels, 3x3 to
  // 11x11, strides 1 and 2 (also unequal), paddings 0..k-1, rows narrower than a vector
  // and rows of whole 48/24-pixel tiles plus a partial one (ResNet's 7x7/s2/pad 3).
  for (int i = 0; i < 16; ++i) {
    const int k = 3 + 2 * (i % 4), s = 1 + i / 4 % 2, ic = 1 + i % 4;
    add_general(ic, 5 + 7 * i % 23, 4 + 13 * i % 61, 3 + 5 * i % 20, k, k, s, 1, 1, i % k, (i + 1) % k, i / 2 % k,
                i / 3 % k);
  }
  add_general(3, 37, 101, 64, 7, 7, 2, 1, 1, 3, 3, 3, 3);
  add_general(3, 24, 98, 32, 3, 3, 2, 1, 1, 1, 1, 1, 1);
  add_general(4, 30, 50, 24, 11, 11, 2, 1, 1, 5, 5, 5, 5);
  for (int sw = 1; sw <= 2; ++sw) {
    add_general(2, 13, 53, 9, 5, 3, 1, 1, 1, 2, 1, 2, 1);
    ConvGeometry& g = out.back();
    g.sh = 3 - sw;
    g.sw = sw;
    g.out_h = out_extent(g.in_h, g.kh, g.sh, 1, 2, 2);
    g.out_w = out_extent(g.in_w, g.kw, g.sw, 1, 1, 1);
  }
  // 1x1 with long reductions and many x86 tiles (48 and 24 pixels): several tiles per
  // block, blocks of a single tile, a partial last tile read in place or subsampled.
  add_1x1(300, 17, 19, 37, 1, 1, ActivationType::ReLU);
  add_1x1(1100, 7, 7, 20, 1, 1, ActivationType::Clip);
  add_1x1(200, 23, 21, 70, 2, 2, ActivationType::None);
  add_dw5_edges(out, rng);
  return out;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("convolution kernels match conv_reference") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::conv_kernels());
    MESSAGE("active ISA " << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa())) << ", "
                          << kernels.size() << " of " << kestrel::kernels::conv_kernels().size()
                          << " convolution kernels runnable");
    const std::vector<ConvGeometry> geoms = sweep();
    std::map<std::string, int> tested;
    std::mt19937 rng(7);
    // Each geometry again with weights that are halves, where a half-weight kernel
    // claims it: those kernels must equal their fp32 twins bit for bit.
    for (const ConvGeometry& g0 : geoms) for (bool halves : {false, true}) {
      ConvGeometry g = g0;
      g.half_weights = halves;
      std::vector<const ConvKernel*> claim;
      bool half_kernel = false;
      for (const ConvKernel* k : kernels) {
        if (!k->supports(g)) continue;
        claim.push_back(k);
        half_kernel = half_kernel || k->half_weights;
      }
      if (claim.empty() || (halves && !half_kernel)) continue;
      Mat in, ref;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
      kt::fill_random(in, rng);
      std::vector<float> w = kt::random_vector(size_t(g.out_c) * (g.in_c / g.group) * g.kh * g.kw, rng);
      if (halves) w = kt::rounded_to_halves(w);
      const std::vector<float> b = kt::random_vector(g.out_c, rng);
      const float* bias = g.bias ? b.data() : nullptr;
      kestrel::kernels::conv_reference(g, w.data(), bias, in.data, in.cstep, ref.data, ref.cstep, 1);
      for (const ConvKernel* k : claim) {
        INFO(std::string(k->name) << ": " << describe(g));
        Mat packed;
        REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)) + 1)));
        k->pack(g, w.data(), bias, packed.data);
        for (int threads : kt::kernel_thread_counts()) {
          INFO("threads " << threads);
          Mat out;
          REQUIRE(out.create(ref.shape()));
          kt::fill_sentinel(out);
          kt::KernelScratch scratch;
          const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
          k->run(g, packed.data, in.data, in.cstep, out.data, out.cstep, ctx);
          const double err = kt::relative_error(out, ref);
          CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
          CHECK_MESSAGE(kt::padding_untouched(out), "wrote into channel padding");
          if (const ConvKernel* twin = k->half_weights ? kt::fp32_twin(kernels, k) : nullptr) {
            Mat twin_packed, twin_out;
            REQUIRE(twin_packed.create(Shape::make1(int(twin->packed_floats(g)) + 1)));
            REQUIRE(twin_out.create(ref.shape()));
            kt::fill_sentinel(twin_out);  // so that the channel padding compares equal too
            twin->pack(g, w.data(), bias, twin_packed.data);
            kt::KernelScratch twin_scratch;
            twin->run(g, twin_packed.data, in.data, in.cstep, twin_out.data, twin_out.cstep,
                      twin_scratch.make(twin->workspace_bytes(g), twin->workspace_per_thread_bytes(g), threads));
            INFO("against " << std::string(twin->name));
            CHECK(std::memcmp(twin_out.data, out.data, out.total() * sizeof(float)) == 0);
          }
        }
        tested[k->name]++;
      }
    }
    for (const ConvKernel* k : kernels) {
      INFO(std::string(k->name));
      if (k->bf16) {
        MESSAGE(std::string(k->name) << ": bf16 arithmetic only (test_kernels_bf16.cpp)");
        continue;
      }
      // A kernel that only writes blocked maps (the stems' channel tiles) is checked
      // against the reference in test_kernels_blocked.cpp, which requires it to claim.
      if (tested[k->name] == 0 && k->blocked_lanes != 0) {
        MESSAGE(std::string(k->name) << ": blocked operands only (test_kernels_blocked.cpp)");
        continue;
      }
      CHECK_MESSAGE(tested[k->name] > 0, "no geometry of the sweep was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " geometries");
      if (k->half_weights) CHECK_MESSAGE(kt::fp32_twin(kernels, k) != nullptr, "no fp32 twin runnable");
    }
  }

  // The 3x3 depthwise kernels of one ISA level (planar rows, flat plane, channel
  // vectors) keep one fma order, so they must agree exactly, whatever the thread count.
  // The channel-vector kernels compute every geometry the planar one does; the registry
  // gives them only the maps where they were faster, so here they run on all of them,
  // up to MobileNet's full sizes (56-pixel rows: several chunks, 32 and 40 channels:
  // row bands and a short channel group).
  TEST_CASE("3x3 depthwise kernels of one ISA level agree bit for bit") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::conv_kernels());
    std::vector<ConvGeometry> geoms;
    for (const ConvGeometry& g : sweep()) {
      if (g.is_depthwise() && g.kh == 3) geoms.push_back(g);
    }
    struct Map {
      int c, hw;
    };
    for (int s : {1, 2}) {
      for (const Map& d : {Map{40, 56}, Map{32, 112}, Map{24, 30}, Map{17, 9}}) {
        ConvGeometry g;
        g.in_c = g.out_c = g.group = d.c;
        g.in_h = g.in_w = d.hw;
        g.kh = g.kw = 3;
        g.sh = g.sw = s;
        g.pad_top = g.pad_left = 1;
        g.out_h = g.out_w = out_extent(d.hw, 3, s, 1, 1, 1);
        g.bias = true;
        g.act.type = ActivationType::Clip;
        g.act.alpha = 0.f;
        g.act.beta = 6.f;
        geoms.push_back(g);
      }
    }
    std::mt19937 rng(11);
    int compared = 0;
    for (const ConvGeometry& g : geoms) {
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      kt::fill_random(in, rng);
      const std::vector<float> w = kt::random_vector(size_t(g.out_c) * 9, rng);
      const std::vector<float> b = kt::random_vector(g.out_c, rng);
      for (const ConvKernel* planar : kernels) {
        const std::string pn = planar->name;
        if (pn.rfind("f32_dwconv3x3_2x", 0) != 0 || !planar->supports(g)) continue;
        auto run = [&](const ConvKernel* k, int threads, Mat& out) {
          Mat packed;
          REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)) + 1)));
          k->pack(g, w.data(), g.bias ? b.data() : nullptr, packed.data);
          REQUIRE(out.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
          kt::fill_sentinel(out);
          kt::KernelScratch scratch;
          const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
          k->run(g, packed.data, in.data, in.cstep, out.data, out.cstep, ctx);
        };
        Mat want;
        run(planar, 1, want);
        for (const ConvKernel* k : kernels) {
          const std::string kn = k->name;
          const bool cvec = kn.rfind("f32_dwconv3x3_c", 0) == 0;
          if (k == planar || k->isa != planar->isa || kn.rfind("f32_dwconv3x3_", 0) != 0) continue;
          if (!cvec && !k->supports(g)) continue;
          for (int threads : {1, 3}) {
            INFO(kn << " against " << pn << ", " << threads << " threads: " << describe(g));
            Mat got;
            run(k, threads, got);
            CHECK(std::memcmp(got.data, want.data, want.cstep * want.c * sizeof(float)) == 0);
            ++compared;
          }
        }
      }
    }
    MESSAGE(compared << " depthwise runs compared bit for bit");
    // Kernels that claim planar maps (NEON's pack4 kernel takes blocked ones only and is
    // compared with the planar one in test_kernels_blocked.cpp).
    const bool several = std::count_if(kernels.begin(), kernels.end(), [&](const ConvKernel* k) {
                           const bool planar = std::any_of(geoms.begin(), geoms.end(),
                                                           [&](const ConvGeometry& g) { return k->supports(g); });
                           return std::string(k->name).rfind("f32_dwconv3x3_", 0) == 0 && planar;
                         }) > 1;
    if (several) CHECK(compared > 0);
  }

  // The 5x5 depthwise kernels (channel vectors of 16 and 8 lanes) keep the fma order
  // bias, ky = 0..4, kx = 0..4 whatever the ISA, the step or the banding, so they agree
  // bit for bit across ISA levels and thread counts; on maps of network size (rows of
  // several chunks, a short last channel group, row bands at 3 threads) each is also
  // checked against the reference.
  TEST_CASE("5x5 depthwise kernels of every ISA level agree bit for bit") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::conv_kernels());
    std::vector<const ConvKernel*> dw5;
    for (const ConvKernel* k : kernels) {
      if (std::string(k->name).rfind("f32_dwconv5x5_", 0) == 0) dw5.push_back(k);
    }
    std::vector<ConvGeometry> geoms;
    for (const ConvGeometry& g : sweep()) {
      if (g.is_depthwise() && g.kh == 5 && g.kw == 5 && g.dh == 1 && g.dw == 1) geoms.push_back(g);
    }
    const size_t small = geoms.size();
    struct Map {
      int c, h, w, s, pt, pb;
    };
    for (const Map& d : {Map{40, 64, 64, 1, 2, 2}, Map{40, 64, 64, 2, 1, 2}, Map{24, 32, 130, 1, 2, 2},
                         Map{72, 28, 28, 2, 2, 2}, Map{17, 9, 9, 1, 2, 2}, Map{120, 16, 16, 1, 2, 2}}) {
      ConvGeometry g;
      g.in_c = g.out_c = g.group = d.c;
      g.in_h = d.h;
      g.in_w = d.w;
      g.kh = g.kw = 5;
      g.sh = g.sw = d.s;
      g.pad_top = g.pad_left = d.pt;
      g.out_h = out_extent(d.h, 5, d.s, 1, d.pt, d.pb);
      g.out_w = out_extent(d.w, 5, d.s, 1, d.pt, d.pb);
      g.bias = true;
      g.act.type = ActivationType::Clip;
      g.act.alpha = 0.f;
      g.act.beta = 6.f;
      geoms.push_back(g);
    }
    std::mt19937 rng(13);
    int compared = 0;
    for (size_t i = 0; i < geoms.size(); ++i) {
      const ConvGeometry& g = geoms[i];
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      kt::fill_random(in, rng);
      const std::vector<float> w = kt::random_vector(size_t(g.out_c) * 25, rng);
      const std::vector<float> b = kt::random_vector(g.out_c, rng);
      const float* bias = g.bias ? b.data() : nullptr;
      auto run = [&](const ConvKernel* k, int threads, Mat& out) {
        Mat packed;
        REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)) + 1)));
        k->pack(g, w.data(), bias, packed.data);
        REQUIRE(out.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
        kt::fill_sentinel(out);
        kt::KernelScratch scratch;
        const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
        k->run(g, packed.data, in.data, in.cstep, out.data, out.cstep, ctx);
        CHECK_MESSAGE(kt::padding_untouched(out), "wrote into channel padding");
      };
      Mat want;
      const ConvKernel* first = nullptr;
      for (const ConvKernel* k : dw5) {
        INFO(std::string(k->name) << ": " << describe(g));
        REQUIRE(k->supports(g));
        if (!first) {
          first = k;
          run(k, 1, want);
          if (i >= small) {
            Mat ref;
            REQUIRE(ref.create(want.shape()));
            kestrel::kernels::conv_reference(g, w.data(), bias, in.data, in.cstep, ref.data, ref.cstep, 1);
            CHECK(kt::relative_error(want, ref) <= k->tolerance);
          }
        }
        for (int threads : {1, 3}) {
          if (k == first && threads == 1) continue;
          INFO("against " << first->name << ", " << threads << " threads");
          Mat got;
          run(k, threads, got);
          CHECK(std::memcmp(got.data, want.data, want.cstep * want.c * sizeof(float)) == 0);
          ++compared;
        }
      }
    }
    MESSAGE(compared << " 5x5 depthwise runs compared bit for bit");
    if (!dw5.empty()) CHECK(compared > 0);
  }

  // The registry is in priority order; a kernel of a lower level listed before one of
  // the level asked for must never win a geometry that level's kernels claim.
  TEST_CASE("select_conv_kernel takes a kernel of the level asked for when that level claims the geometry") {
    using kestrel::kernels::Isa;
    for (const ConvGeometry& g : sweep()) {
      for (Isa isa : {Isa::kNeon, Isa::kAvx2, Isa::kAvx512}) {
        if (!kestrel::kernels::isa_allows(kestrel::kernels::host_isa(), isa)) continue;
        bool claimed = false;
        for (const ConvKernel* k : kestrel::kernels::conv_kernels()) claimed = claimed || (k->isa == isa && k->supports(g));
        if (!claimed) continue;
        const ConvKernel* sel = kestrel::kernels::select_conv_kernel(g, isa);
        INFO(describe(g) << " at " << kestrel::kernels::isa_name(isa) << " chose " << (sel ? sel->name : "none"));
        CHECK((sel != nullptr && sel->isa == isa));
      }
    }
  }

  TEST_CASE("the reference kernel set and KESTREL_ISA=ref select no convolution kernel") {
    ConvGeometry g;
    g.in_c = g.out_c = 8;
    g.in_h = g.in_w = g.out_h = g.out_w = 8;
    CHECK(kestrel::kernels::select_conv_kernel(g, kestrel::kernels::Isa::kRef) == nullptr);
  }
}
