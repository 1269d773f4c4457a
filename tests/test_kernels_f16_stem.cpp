// The fp16 stem kernel (f16_conv_stem_pack1to8_neonfp16: K x K windows of 1 to 4 planar
// channels of halves into pack8 halves) against the fp16 reference, bit for bit (it
// skips the padding's taps as the reference does, so even the sign of a zero agrees).
// Swept for its paths: tiles of 16 channels read in place, one-block tiles on rows over
// the top or bottom padding and for a last odd block, pixels over the left or right
// padding and rows too short for a tile, a last tile moved back over its neighbour:
// windows 3, 5, 7, strides 1 and 2, 1, 3 and 4 input channels, 8 to 40 output channels,
// maps from 1x1 to 33x31, paddings 0, 1, TF's "same" (0 before, 1 after) and uneven up
// to K - 1, every activation it takes, with and without bias, 1 and 4 threads. NaN in
// the input's channel padding shows a read of it; the output's padding must keep its
// sentinel. Where the CPU has no fp16 arithmetic no kernel is selected, and the cases
// say so.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "f16_test_util.h"
#include "kernel_test_util.h"
#include "kernels/f16_reference.h"
#include "kernels/isa.h"

namespace {

using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

constexpr int kLanes = 8;
constexpr uint16_t kNanHalf = 0x7e00;

struct Pads {
  int top, left, bottom, right;
};

ConvGeometry stem(int in_c, int h, int w, int out_c, int k, int s, const Pads& p) {
  ConvGeometry g;
  g.in_c = in_c;
  g.in_h = h;
  g.in_w = w;
  g.out_c = out_c;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.pad_top = p.top;
  g.pad_left = p.left;
  g.out_h = (h + p.top + p.bottom - k) / s + 1;
  g.out_w = (w + p.left + p.right - k) / s + 1;
  g.in_pack = 1;
  g.out_pack = kLanes;
  g.f16 = true;
  return g;
}

std::string describe(const ConvGeometry& g) {
  return std::to_string(g.in_c) + "x" + std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + " -> " +
         std::to_string(g.out_c) + "x" + std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + " k" +
         std::to_string(g.kh) + " s" + std::to_string(g.sh) + " pad top " + std::to_string(g.pad_top) + " left " +
         std::to_string(g.pad_left) + " act " + std::to_string(static_cast<int>(g.act.type)) + " (" +
         std::to_string(g.act.alpha) + ", " + std::to_string(g.act.beta) + ") bias " + std::to_string(g.bias);
}

// Runs k on g with input x and weights wt, b at 1 and 4 threads against
// conv_reference_f16 (CHECKs): every bit, and the output's padding untouched.
void check_against_reference(const ConvKernel* k, const ConvGeometry& g, const std::vector<float>& x,
                             const std::vector<float>& wt, const std::vector<float>& b) {
  INFO(describe(g));
  REQUIRE(k->supports(g));
  const int in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const float* bias = g.bias ? b.data() : nullptr;
  std::vector<float> want(static_cast<size_t>(g.out_c) * out_plane);
  kestrel::kernels::conv_reference_f16(g, wt.data(), bias, x.data(), in_plane, want.data(), out_plane, 1);
  kestrel::Mat packed;
  REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
  k->pack(g, wt.data(), bias, packed.data);
  const size_t in_cstep = kt::plane_units(g.in_w, g.in_h), out_cstep = kt::block_units(g.out_w, g.out_h);
  const std::vector<uint16_t> xin = kt::to_planar_halves(x, g.in_c, in_plane, in_cstep, kNanHalf);
  for (int threads : kt::kernel_thread_counts()) {
    INFO(threads << " threads");
    std::vector<uint16_t> y(out_cstep * 2 * (g.out_c / kLanes) + 64, kNanHalf);
    kt::KernelScratch scratch;
    const kestrel::kernels::KernelContext ctx =
        scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
    k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep, reinterpret_cast<float*>(y.data()),
           out_cstep, ctx);
    const std::vector<float> got = kt::from_pack8(y, g.out_c, out_plane, out_cstep);
    long at = -1;
    for (size_t i = 0; i < want.size() && at < 0; ++i) {
      if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) at = static_cast<long>(i);
    }
    INFO("first difference at channel " << (at < 0 ? -1 : at / out_plane) << " pixel " << (at < 0 ? -1 : at % out_plane)
                                        << ": " << (at < 0 ? 0.f : got[at]) << " for " << (at < 0 ? 0.f : want[at]));
    CHECK(at == -1);
    bool padding_kept = true;
    for (int j = 0; j < g.out_c / kLanes; ++j) {
      const size_t block = static_cast<size_t>(j) * out_cstep * 2;
      for (size_t i = block + static_cast<size_t>(out_plane) * kLanes; i < block + out_cstep * 2; ++i) {
        padding_kept = padding_kept && y[i] == kNanHalf;
      }
    }
    for (size_t i = y.size() - 64; i < y.size(); ++i) padding_kept = padding_kept && y[i] == kNanHalf;
    CHECK(padding_kept);
  }
}

const ConvKernel* stem_kernel() {
  for (const ConvKernel* k : kt::f16_kernels()) {
    if (std::strcmp(k->name, "f16_conv_stem_pack1to8_neonfp16") == 0) return k;
  }
  return nullptr;
}

// The kernel this CPU selects for an fp16 MobileNet stem, or null (then the case says
// why and checks that no fp16 arithmetic is here).
const ConvKernel* selected_stem() {
  const ConvGeometry probe = stem(3, 16, 16, 32, 3, 2, {1, 1, 1, 1});
  const ConvKernel* chosen = kestrel::kernels::select_conv_kernel(probe, kestrel::kernels::active_isa());
  if (!kt::fp16_kernels_run()) {
    CHECK(chosen == nullptr);
    MESSAGE("no fp16 arithmetic here (" << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa()))
                                         << "): no fp16 stem kernel is selected");
    return nullptr;
  }
  const ConvKernel* k = stem_kernel();
  REQUIRE(k != nullptr);
  REQUIRE(chosen == k);
  return k;
}

kestrel::ActivationSpec activation(int i) {
  const kestrel::ActivationSpec acts[] = {
      {ActivationType::None, 0.f, 0.f},          {ActivationType::ReLU, 0.f, 0.f},
      {ActivationType::Clip, 0.f, 6.f},          {ActivationType::Clip, -0.25f, 0.5f},
      {ActivationType::LeakyReLU, 0.1f, 0.f},
  };
  return acts[i % 5];
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("fp16 arithmetic: stem kernel equals the fp16 reference on every window, stride, padding and map") {
    const ConvKernel* k = selected_stem();
    if (!k) return;
    std::mt19937 rng(89);
    const std::pair<int, int> maps[] = {{1, 1}, {2, 3}, {5, 7}, {9, 17}, {17, 2}, {33, 31}};
    const int out_channels[] = {8, 16, 32, 40};
    int n = 0;
    for (int kk : {3, 5, 7}) {
      // None, all of 1, TF's "same" at stride 2 and uneven ones up to K - 1.
      const Pads pads[] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 0, 1, 1}, {kk - 1, kk / 2, 0, kk - 1}, {1, kk - 1, kk / 2, 0}};
      for (int s : {1, 2}) {
        for (const auto& hw : maps) {
          for (int pi = 0; pi < 5; ++pi) {
            for (int in_c : {1, 3, 4}) {
              const Pads& p = pads[pi];
              const int h = hw.first, w = hw.second;
              if (h + p.top + p.bottom < kk || w + p.left + p.right < kk) continue;
              // The large map's 5x5 and 7x7 cases (most of the reference's time): one
              // channel count per padding, every count in turn.
              const int large_in_c[] = {1, 3, 4, 3, 4};
              if (h * w > 300 && kk > 3 && in_c != large_in_c[pi]) continue;
              ConvGeometry g = stem(in_c, h, w, out_channels[n % 4], kk, s, p);
              g.act = activation(n / 4);
              g.bias = n % 3 != 0;
              ++n;
              const size_t taps = static_cast<size_t>(in_c) * kk * kk;
              const std::vector<float> x = kt::random_halves(static_cast<size_t>(in_c) * h * w, 2.f, rng);
              const std::vector<float> wt = kt::random_halves(g.out_c * taps, 0.5f, rng);
              const std::vector<float> b = kt::random_halves(g.out_c, 1.f, rng);
              check_against_reference(k, g, x, wt, b);
            }
          }
        }
      }
    }
    MESSAGE(std::string(k->name) << ": " << n << " geometries");
  }

  TEST_CASE("fp16 arithmetic: stem kernel keeps the reference's -0 on zero windows by the padding") {
    const ConvKernel* k = selected_stem();
    if (!k) return;
    std::mt19937 rng(97);
    // MobileNet's stem (pad 1 all round) and TF's "same", smaller; a 7x7 pad 3 stem.
    const ConvGeometry geometries[] = {stem(3, 21, 27, 40, 3, 2, {1, 1, 1, 1}), stem(3, 20, 20, 32, 3, 2, {0, 0, 1, 1}),
                                       stem(4, 19, 23, 24, 7, 2, {3, 3, 3, 3}), stem(1, 12, 26, 16, 5, 1, {2, 2, 2, 2})};
    for (const ConvGeometry& base : geometries) {
      for (int variant = 0; variant < 2; ++variant) {
        ConvGeometry g = base;
        g.bias = variant == 0;
        g.act = activation(variant);
        const size_t taps = static_cast<size_t>(g.in_c) * g.kh * g.kw, plane = static_cast<size_t>(g.in_h) * g.in_w;
        std::vector<float> x = kt::random_halves(g.in_c * plane, 2.f, rng);
        // The top half of the map -0, and every other output channel with only
        // positive weights and (with bias) a bias of -0: there every product inside the
        // map is -0 and the sums stay -0, where a padding tap multiplied instead of
        // skipped (w * +0 = +0) would turn them into +0.
        for (int c = 0; c < g.in_c; ++c) std::fill(x.begin() + c * plane, x.begin() + c * plane + plane / 2, -0.f);
        std::vector<float> wt = kt::random_halves(g.out_c * taps, 0.5f, rng);
        std::vector<float> b = kt::random_halves(g.out_c, 1.f, rng);
        for (int oc = 0; oc < g.out_c; oc += 2) {
          b[oc] = -0.f;
          for (size_t t = 0; t < taps; ++t) {
            float& v = wt[oc * taps + t];
            v = v == 0.f ? 0.0078125f : std::fabs(v);  // still a half
          }
        }
        check_against_reference(k, g, x, wt, b);
      }
    }
  }
}
