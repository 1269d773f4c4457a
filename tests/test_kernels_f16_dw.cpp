// The fp16 3x3 depthwise kernel on pack8 halves (f16_dwconv3x3_pack8_neonfp16) against
// the fp16 reference, bit for bit (where pads of 2 make it multiply zeros, up to the sign
// of a zero). Swept for its walks: widths 1-17 (strips of 1 to 4 pixels, with and
// without column -1 and the column after the row as padding), heights 1-9 (every entry
// of the 3-row and 2-pair rotations, with and without a padding row first and last,
// walks of one output row), strides 1 and 2, pads 0, 1 and 2 on each side, symmetric or
// not, 1 to 5 channel blocks, every activation it takes, with and without bias, 1 and 4
// threads (bands of rows cut anywhere); sums of -0 show padding multiplied instead of
// skipped and activations that lose -0. NaN in the input's channel padding and in the
// scratch shows a read of either; the output's padding must keep its sentinel. Where the
// CPU has no fp16 arithmetic no kernel is selected, and the case says so.
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

ConvGeometry depthwise(int c, int h, int w, int s, const Pads& p) {
  ConvGeometry g;
  g.in_c = g.out_c = g.group = c;
  g.in_h = h;
  g.in_w = w;
  g.kh = g.kw = 3;
  g.sh = g.sw = s;
  g.pad_top = p.top;
  g.pad_left = p.left;
  g.out_h = (h + p.top + p.bottom - 3) / s + 1;
  g.out_w = (w + p.left + p.right - 3) / s + 1;
  g.in_pack = g.out_pack = kLanes;
  g.f16 = true;
  return g;
}

std::string describe(const ConvGeometry& g) {
  return std::to_string(g.in_c) + "ch " + std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + " -> " +
         std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + " stride " + std::to_string(g.sh) + " pad top " +
         std::to_string(g.pad_top) + " left " + std::to_string(g.pad_left) + " act " +
         std::to_string(static_cast<int>(g.act.type)) + " (" + std::to_string(g.act.alpha) + ", " +
         std::to_string(g.act.beta) + ") bias " + std::to_string(g.bias);
}

// A layer's input, weights and bias (halves held in floats).
struct Operands {
  std::vector<float> x, wt, b;
};

Operands random_operands(const ConvGeometry& g, std::mt19937& rng) {
  return {kt::random_halves(static_cast<size_t>(g.in_c) * g.in_h * g.in_w, 2.f, rng),
          kt::random_halves(static_cast<size_t>(g.out_c) * 9, 0.5f, rng), kt::random_halves(g.out_c, 1.f, rng)};
}

// Pads of 2 (before or after) are read from padded copies, whose zeros are multiplied:
// there a zero sum may differ from the reference's in sign. Elsewhere every bit agrees.
bool reads_padded_copies(const ConvGeometry& g) {
  const int end_h = (g.out_h - 1) * g.sh + 3 - g.in_h - g.pad_top;
  const int end_w = (g.out_w - 1) * g.sw + 3 - g.in_w - g.pad_left;
  return g.pad_top > 1 || g.pad_left > 1 || end_h > 1 || end_w > 1;
}

// Runs k on g at 1 and 4 threads against conv_reference_f16 (CHECKs).
void check_against_reference(const ConvKernel* k, const ConvGeometry& g, const Operands& op) {
  INFO(describe(g));
  REQUIRE(k->supports(g));
  const int c = g.in_c, in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const std::vector<float>&x = op.x, &wt = op.wt, &b = op.b;
  std::vector<float> want(static_cast<size_t>(c) * out_plane);
  kestrel::kernels::conv_reference_f16(g, wt.data(), g.bias ? b.data() : nullptr, x.data(), in_plane, want.data(),
                                       out_plane, 1);
  kestrel::Mat packed;
  REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
  k->pack(g, wt.data(), g.bias ? b.data() : nullptr, packed.data);
  const size_t in_cstep = kt::block_units(g.in_w, g.in_h), out_cstep = kt::block_units(g.out_w, g.out_h);
  const std::vector<uint16_t> xin = kt::to_pack8(x, c, in_plane, in_cstep, kNanHalf);
  for (int threads : kt::kernel_thread_counts()) {
    INFO(threads << " threads");
    std::vector<uint16_t> y(out_cstep * 2 * (c / kLanes) + 64, kNanHalf);
    kt::KernelScratch scratch;
    const kestrel::kernels::KernelContext ctx =
        scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
    // The kernel must set up whatever scratch it reads.
    std::memset(scratch.storage.data(), 0x7e, scratch.storage.size() * sizeof(float));
    k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep, reinterpret_cast<float*>(y.data()),
           out_cstep, ctx);
    const std::vector<float> got = kt::from_pack8(y, c, out_plane, out_cstep);
    const long at =
        reads_padded_copies(g) ? kt::first_difference_but_zero_sign(got, want) : kt::first_difference(got, want);
    INFO("first difference at channel " << (at < 0 ? -1 : at / out_plane) << " pixel " << (at < 0 ? -1 : at % out_plane)
                                        << ": " << (at < 0 ? 0.f : got[at]) << " for " << (at < 0 ? 0.f : want[at]));
    CHECK(at == -1);
    bool padding_kept = true;
    for (int j = 0; j < c / kLanes; ++j) {
      const size_t block = static_cast<size_t>(j) * out_cstep * 2;
      for (size_t i = block + static_cast<size_t>(out_plane) * kLanes; i < block + out_cstep * 2; ++i) {
        padding_kept = padding_kept && y[i] == kNanHalf;
      }
    }
    for (size_t i = y.size() - 64; i < y.size(); ++i) padding_kept = padding_kept && y[i] == kNanHalf;
    CHECK(padding_kept);
  }
}

const ConvKernel* dw_kernel() {
  for (const ConvKernel* k : kt::f16_kernels()) {
    if (std::strcmp(k->name, "f16_dwconv3x3_pack8_neonfp16") == 0) return k;
  }
  return nullptr;
}

kestrel::ActivationSpec activation(int i) {
  const kestrel::ActivationSpec acts[] = {
      {ActivationType::None, 0.f, 0.f},      {ActivationType::ReLU, 0.f, 0.f},
      {ActivationType::Clip, 0.f, 6.f},      {ActivationType::Clip, -0.25f, 0.5f},
      {ActivationType::LeakyReLU, 0.1f, 0.f}, {ActivationType::Clip, -0.5f, NAN},  // a NaN max clips nothing
  };
  return acts[i % 6];
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("fp16 arithmetic: depthwise 3x3 pack8 kernel equals the fp16 reference on every strip and walk") {
    ConvGeometry probe = depthwise(16, 5, 5, 1, {1, 1, 1, 1});
    const ConvKernel* chosen = kestrel::kernels::select_conv_kernel(probe, kestrel::kernels::active_isa());
    if (!kt::fp16_kernels_run()) {
      CHECK(chosen == nullptr);
      MESSAGE("no fp16 arithmetic here (" << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa()))
                                           << "): no fp16 depthwise kernel is selected");
      return;
    }
    const ConvKernel* k = dw_kernel();
    REQUIRE(k != nullptr);
    REQUIRE(chosen == k);
    std::mt19937 rng(83);
    const Pads pads[] = {{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 1, 1}, {1, 1, 0, 0},
                         {2, 2, 2, 2}, {1, 0, 1, 0}, {0, 1, 2, 1}, {2, 1, 0, 2}};
    const int channels[] = {8, 16, 24, 40};
    int n = 0;
    for (int s = 1; s <= 2; ++s) {
      for (int w = 1; w <= 17; ++w) {
        for (int h : {1, 2, 3, 5, 7, 9}) {
          for (const Pads& p : pads) {
            if (h + p.top + p.bottom < 3 || w + p.left + p.right < 3) continue;
            ConvGeometry g = depthwise(channels[(n / 6) % 4], h, w, s, p);
            g.act = activation(n);
            g.bias = n % 5 != 0;  // every pair of activation, bias and channels
            ++n;
            check_against_reference(k, g, random_operands(g, rng));
          }
        }
      }
    }
    // Larger maps: loops of several turns, several middle strips, bands of many rows.
    const struct {
      int c, h, w, s;
      Pads p;
    } large[] = {{24, 30, 30, 1, {1, 1, 1, 1}}, {16, 29, 31, 2, {1, 1, 1, 1}}, {32, 28, 28, 2, {0, 0, 1, 1}},
                 {8, 20, 23, 1, {2, 2, 2, 2}}, {40, 14, 14, 1, {1, 1, 1, 1}}, {16, 7, 7, 1, {1, 1, 1, 1}}};
    for (const auto& l : large) {
      ConvGeometry g = depthwise(l.c, l.h, l.w, l.s, l.p);
      g.act = activation(n);
      g.bias = true;
      ++n;
      check_against_reference(k, g, random_operands(g, rng));
    }
    MESSAGE(std::string(k->name) << ": " << n << " geometries, each at 1 and 4 threads");
  }

  TEST_CASE("fp16 arithmetic: depthwise 3x3 pack8 kernel keeps the reference's -0 by the padding") {
    // Inputs -0, weights > 0, biases -0: every product is -0, so every sum the reference
    // makes is -0 and every activation keeps it. A +0 shows a padding tap multiplied
    // (+0 * w) instead of skipped, or an activation that does not keep -0 (FMAX).
    const ConvKernel* k = dw_kernel();
    if (k == nullptr || !kt::fp16_kernels_run()) {
      MESSAGE("no fp16 arithmetic here: nothing to run");
      return;
    }
    std::mt19937 rng(5);
    const Pads pads[] = {{1, 1, 1, 1}, {0, 0, 1, 1}, {1, 1, 0, 0}, {1, 0, 0, 1}};
    int n = 0;
    for (int s = 1; s <= 2; ++s) {
      for (int w = 1; w <= 9; ++w) {
        for (int h : {1, 2, 3, 4, 7}) {
          for (const Pads& p : pads) {
            if (h + p.top + p.bottom < 3 || w + p.left + p.right < 3) continue;
            ConvGeometry g = depthwise((n / 6) % 2 ? 8 : 16, h, w, s, p);
            g.act = activation(n);
            g.bias = true;
            ++n;
            Operands op = random_operands(g, rng);
            std::fill(op.x.begin(), op.x.end(), -0.f);
            for (float& v : op.wt) v = std::fabs(v) + 0.125f;
            std::fill(op.b.begin(), op.b.end(), -0.f);
            check_against_reference(k, g, op);
          }
        }
      }
    }
    MESSAGE(n << " geometries of -0 sums");
  }

  TEST_CASE("fp16 arithmetic: depthwise 3x3 pack8 kernel declines what it does not compute") {
    const ConvKernel* k = dw_kernel();
    if (k == nullptr) {
      CHECK_FALSE(kt::fp16_kernels_run());
      MESSAGE("no fp16 depthwise kernel in this build");
      return;
    }
    const ConvGeometry ok = depthwise(16, 9, 9, 2, {0, 0, 1, 1});
    CHECK(k->supports(ok));
    ConvGeometry g = ok;
    g.f16 = false;  // fp32 operands
    CHECK_FALSE(k->supports(g));
    g = ok;
    g.in_pack = g.out_pack = 4;
    CHECK_FALSE(k->supports(g));
    g = ok;
    g.dh = g.dw = 2;
    CHECK_FALSE(k->supports(g));
    g = depthwise(16, 9, 9, 3, {1, 1, 1, 1});
    CHECK_FALSE(k->supports(g));
    g = depthwise(16, 9, 9, 1, {3, 3, 3, 3});
    CHECK_FALSE(k->supports(g));
    g = depthwise(16, 9, 9, 1, {1, 1, 3, 1});  // an output row of padding only
    CHECK_FALSE(k->supports(g));
    g = ok;
    g.out_c = 32;  // not depthwise
    CHECK_FALSE(k->supports(g));
    g = ok;
    g.act = {ActivationType::Sigmoid, 0.f, 0.f};
    CHECK_FALSE(k->supports(g));
    g.act = {ActivationType::Clip, -1.f, -0.f};  // FMIN's -0 is not the reference's min
    CHECK_FALSE(k->supports(g));
    g.act = {ActivationType::Clip, -1.f, 0.f};
    CHECK(k->supports(g));
  }
}
