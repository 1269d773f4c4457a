// The fp16 convolution kernels' activations beyond one rounded operation (Sigmoid, TanH,
// HardSigmoid, HardSwish, SiLU, ELU, GELU), fused through a table of the 65,536 results
// on halves (kernels/f16_activation_table.h):
// - each table against conv_reference_f16 itself on every half as the accumulator (a
//   1x1 layer of one channel, weight 1), NaNs included, and a few known values (a table
//   built wrong by the reference's own function would pass the first check);
// - the fp16 1x1 kernel (pack8 and planar halves out: MoveNet's Sigmoid heads, 96 -> 17
//   and 96 -> 1) and the im2col kernel with each of them against conv_reference_f16, bit
//   for bit (up to the sign of a zero where a window overhangs the map), with and
//   without bias, 1 and 4 threads; in a Net, the heads run the fp16 1x1 kernel.
// The kernels run only where the CPU has fp16 arithmetic (qemu -cpu cortex-a76); elsewhere
// no fp16 kernel is selected and the cases say so. The table cases run everywhere.
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "f16_test_util.h"
#include "kernel_test_util.h"
#include "kernels/f16_activation_table.h"
#include "kernels/f16_reference.h"
#include "kernels/isa.h"
#include "test_util.h"

namespace {

using kestrel::ActivationSpec;
using kestrel::fb::ActivationType;
using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;
using kt::conv;
using kt::Window;

constexpr uint16_t kNanHalf = 0x7e00;
constexpr uint16_t kSentinel = 0x7e5a;  // a NaN no kernel computes
constexpr size_t kHalves = kestrel::kernels::kF16ActivationTableSize;

// The activations with a table, with the parameters networks use and others.
const ActivationSpec kTableActs[] = {
    {ActivationType::Sigmoid, 0.f, 0.f},       {ActivationType::TanH, 0.f, 0.f},
    {ActivationType::HardSigmoid, 0.2f, 0.5f}, {ActivationType::HardSigmoid, 1.f / 6, 0.5f},
    {ActivationType::HardSwish, 0.f, 0.f},     {ActivationType::HardSwish, 1.f / 6, 0.f},
    {ActivationType::SiLU, 0.f, 0.f},          {ActivationType::ELU, 1.f, 0.f},
    {ActivationType::ELU, 0.3f, 0.f},          {ActivationType::GELU, 0.f, 0.f},
};

std::string describe(const ActivationSpec& a) {
  return std::string(kestrel::fb::EnumNameActivationType(a.type)) + "(" + std::to_string(a.alpha) + ", " +
         std::to_string(a.beta) + ")";
}

std::string describe(const ConvGeometry& g) {
  return std::to_string(g.in_c) + ">" + std::to_string(g.out_c) + (g.out_pack == 1 ? " planar " : " pack8 ") +
         std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + " window " + std::to_string(g.kh) + "x" +
         std::to_string(g.kw) + " stride " + std::to_string(g.sh) + " pad " + std::to_string(g.pad_top) + " " +
         describe(g.act) + " bias " + std::to_string(g.bias);
}

// conv_reference_f16's output bits for every half x as the accumulator: one channel of
// 256 x 256 pixels holding the 65,536 halves, weight 1 and bias -0 (1 * x + -0 is x, -0
// included; a NaN comes out as the reference's NaN).
std::vector<uint16_t> reference_on_every_half(const ActivationSpec& a) {
  ConvGeometry g;
  g.in_c = g.out_c = 1;
  g.in_h = g.in_w = g.out_h = g.out_w = 256;
  g.bias = true;
  g.act = a;
  std::vector<float> x(kHalves), y(kHalves);
  for (size_t i = 0; i < kHalves; ++i) x[i] = kestrel::half_to_float(static_cast<uint16_t>(i));
  const float w = 1.f, b = -0.f;
  kestrel::kernels::conv_reference_f16(g, &w, &b, x.data(), kHalves, y.data(), kHalves, 1);
  std::vector<uint16_t> bits(kHalves);
  for (size_t i = 0; i < kHalves; ++i) bits[i] = kestrel::float_to_half(y[i]);
  return bits;
}

bool is_nan_half(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

const ConvKernel* select(const ConvGeometry& g) {
  return kestrel::kernels::select_conv_kernel(g, kestrel::kernels::active_isa());
}

struct Operands {
  std::vector<float> x, wt, b;
};

// Inputs in +-range, weights in +-0.5: the accumulators spread over the activations'
// curved parts (range 2) or well past them (range 8: saturation, ELU's and SiLU's tails).
Operands random_operands(const ConvGeometry& g, float range, std::mt19937& rng) {
  return {kt::random_halves(static_cast<size_t>(g.in_c) * g.in_h * g.in_w, range, rng),
          kt::random_halves(static_cast<size_t>(g.out_c) * g.in_c * g.kh * g.kw, 0.5f, rng),
          kt::random_halves(g.out_c, 1.f, rng)};
}

// Runs k on g (pack8 or planar halves out) at 1 and 4 threads against conv_reference_f16
// (CHECKs): bit for bit, up to the sign of a zero where a window overhangs the map; a
// planar output's padding keeps its sentinel.
void check_kernel(const ConvKernel* k, const ConvGeometry& g, const Operands& op) {
  const std::string name = k->name;
  INFO(name << " " << describe(g));
  REQUIRE(k->supports(g));
  const int in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  std::vector<float> want(static_cast<size_t>(g.out_c) * out_plane);
  kestrel::kernels::conv_reference_f16(g, op.wt.data(), g.bias ? op.b.data() : nullptr, op.x.data(), in_plane,
                                       want.data(), out_plane, 1);
  kestrel::Mat packed;
  REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
  k->pack(g, op.wt.data(), g.bias ? op.b.data() : nullptr, packed.data);
  const bool planar = g.out_pack == 1;
  const size_t in_cstep = kt::block_units(g.in_w, g.in_h);
  const size_t out_cstep = planar ? kt::plane_units(g.out_w, g.out_h) : kt::block_units(g.out_w, g.out_h);
  const std::vector<uint16_t> xin = kt::to_pack8(op.x, g.in_c, in_plane, in_cstep, kNanHalf);
  for (int threads : kt::kernel_thread_counts()) {
    INFO(threads << " threads");
    std::vector<uint16_t> y(out_cstep * 2 * (planar ? g.out_c : g.out_c / 8) + 64, kSentinel);
    kt::KernelScratch scratch;
    const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
    std::memset(scratch.storage.data(), 0x7e, scratch.storage.size() * sizeof(float));
    k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep, reinterpret_cast<float*>(y.data()),
           out_cstep, ctx);
    const std::vector<float> got = planar ? kt::from_planar_halves(y, g.out_c, out_plane, out_cstep)
                                          : kt::from_pack8(y, g.out_c, out_plane, out_cstep);
    const long at = kt::overhangs(g) ? kt::first_difference_but_zero_sign(got, want) : kt::first_difference(got, want);
    CHECK_MESSAGE(at == -1, "first difference at channel " << at / out_plane << " pixel " << at % out_plane << ": "
                                                           << (at < 0 ? 0.f : got[at]) << " for "
                                                           << (at < 0 ? 0.f : want[at]));
    if (planar) CHECK(kt::planar_padding_changed(y, g.out_c, out_plane, out_cstep, kSentinel) == 0);
  }
}

// True where the CPU has fp16 arithmetic; elsewhere no fp16 kernel may be selected for
// `probe` (checked), and the case says so.
bool fp16_here(const ConvGeometry& probe) {
  if (!kt::fp16_kernels_run()) {
    CHECK(select(probe) == nullptr);
    MESSAGE("no fp16 arithmetic here (" << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa()))
                                        << "): no fp16 kernel is selected for " << describe(probe));
    return false;
  }
  return true;
}

// A 1x1 layer, or a kxk one with padding k / 2, with seeded weights and activation `act`.
void add_conv_act(kestrel::ModelBuilder& b, const std::string& name, const std::string& bottom, int in, int out,
                  int kernel, const ActivationSpec& act) {
  std::mt19937 rng(static_cast<uint32_t>(name.size()) + 11);
  const std::vector<float> w = kt::random_vector(static_cast<size_t>(out) * in * kernel * kernel, rng, -0.3f, 0.3f);
  const std::vector<float> bias = kt::random_vector(out, rng, -0.3f, 0.3f);
  kestrel::fb::LayerParamsUnion u = kt::conv_params(out, kernel, 1, kernel / 2, false);
  u.AsConvolutionParam()->activation->type = act.type;
  u.AsConvolutionParam()->activation->alpha = act.alpha;
  u.AsConvolutionParam()->activation->beta = act.beta;
  b.add_layer("Convolution", name, {bottom}, {name}, std::move(u),
              {b.add_weight(name + "/w", {out, in, kernel, kernel}, w), b.add_weight(name + "/b", {out}, bias)});
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("fp16 activation table: every half's entry is the fp16 reference's activation of it") {
    for (const ActivationSpec& a : kTableActs) {
      INFO(describe(a));
      CHECK(kestrel::kernels::f16_activation_uses_table(a.type));
      const std::vector<uint16_t> want = reference_on_every_half(a);
      const uint16_t* table = kestrel::kernels::f16_activation_table(a);
      REQUIRE(table != nullptr);
      size_t nan_inputs = 0, wrong = 0;
      long first_wrong = -1;
      for (size_t h = 0; h < kHalves; ++h) {
        // The reference sees a NaN accumulator only as its own NaN: any NaN gives NaN.
        const bool ok =
            is_nan_half(static_cast<uint16_t>(h)) ? is_nan_half(table[h]) && is_nan_half(want[h]) : table[h] == want[h];
        nan_inputs += is_nan_half(static_cast<uint16_t>(h));
        if (!ok && first_wrong < 0) first_wrong = static_cast<long>(h);
        wrong += !ok;
      }
      CHECK(nan_inputs == 2 * 1023);
      CHECK_MESSAGE(wrong == 0, wrong << " entries differ, the first at 0x" << std::hex << first_wrong << ": 0x"
                                      << (first_wrong < 0 ? 0 : table[first_wrong]) << " for 0x"
                                      << (first_wrong < 0 ? 0 : want[first_wrong]));
      // One table per distinct activation, built once.
      CHECK(kestrel::kernels::f16_activation_table(a) == table);
    }
    using kestrel::kernels::f16_activation_table;
    // Parameters a type does not read share its table; those it reads do not.
    CHECK(f16_activation_table({ActivationType::Sigmoid, 0.3f, 2.f}) ==
          f16_activation_table({ActivationType::Sigmoid, 0.f, 0.f}));
    CHECK(f16_activation_table({ActivationType::ELU, 1.f, 5.f}) ==
          f16_activation_table({ActivationType::ELU, 1.f, 0.f}));
    CHECK(f16_activation_table({ActivationType::ELU, 0.3f, 0.f}) !=
          f16_activation_table({ActivationType::ELU, 1.f, 0.f}));
    CHECK(f16_activation_table({ActivationType::HardSigmoid, 0.2f, 0.5f}) !=
          f16_activation_table({ActivationType::HardSigmoid, 0.2f, 0.25f}));
    // Known values (bits of halves): +-0, +-inf, NaN, and points where the curves are exact.
    const uint16_t* sigmoid = f16_activation_table({ActivationType::Sigmoid, 0.f, 0.f});
    CHECK(sigmoid[0x0000] == 0x3800);  // sigmoid(0) = 0.5
    CHECK(sigmoid[0x8000] == 0x3800);
    CHECK(sigmoid[0xfc00] == 0x0000);  // sigmoid(-inf) = +0
    CHECK(sigmoid[0x7c00] == 0x3c00);  // sigmoid(inf) = 1
    CHECK(sigmoid[0xcc00] == 0x0002);  // sigmoid(-16) = 1.125e-7: the subnormal 2 x 2^-24
    CHECK(is_nan_half(sigmoid[kNanHalf]));
    const uint16_t* tanh = f16_activation_table({ActivationType::TanH, 0.f, 0.f});
    CHECK(tanh[0x8000] == 0x8000);  // -0 stays
    CHECK(tanh[0x7c00] == 0x3c00);
    CHECK(tanh[0xfc00] == 0xbc00);
    CHECK(is_nan_half(tanh[kNanHalf]));
    CHECK(is_nan_half(tanh[0xfd23]));  // any NaN's payload
    const uint16_t* hard_sigmoid = f16_activation_table({ActivationType::HardSigmoid, 0.2f, 0.5f});
    CHECK(hard_sigmoid[0x0000] == 0x3800);
    CHECK(hard_sigmoid[0x4500] == 0x3c00);  // 0.2 x 5 + 0.5 clipped to 1
    CHECK(hard_sigmoid[0xc500] == 0x0000);
    const uint16_t* hard_swish = f16_activation_table({ActivationType::HardSwish, 0.f, 0.f});
    CHECK(hard_swish[0x4200] == 0x4200);  // 3 x 6 / 6
    CHECK(hard_swish[0xc200] == 0x8000);  // -3 x 0 / 6 = -0
    CHECK(hard_swish[0x3c00] == 0x3955);  // 1 x 4 / 6 = 0.6667
    const uint16_t* elu = f16_activation_table({ActivationType::ELU, 1.f, 0.f});
    CHECK(elu[0xfc00] == 0xbc00);  // expm1(-inf) = -1
    CHECK(elu[0x3c00] == 0x3c00);
    CHECK(elu[0x8000] == 0x8000);
    const uint16_t* gelu = f16_activation_table({ActivationType::GELU, 0.f, 0.f});
    CHECK(gelu[0x0000] == 0x0000);
    CHECK(gelu[0x7c00] == 0x7c00);
    CHECK(gelu[0x4900] == 0x4900);  // gelu(10) = 10
    const uint16_t* silu = f16_activation_table({ActivationType::SiLU, 0.f, 0.f});
    CHECK(silu[0x0000] == 0x0000);
    CHECK(silu[0x4900] == 0x4900);  // 10 x sigmoid(10) = 9.99955 rounds to 10
    CHECK(silu[0xbc00] == 0xb44e);  // -1 x sigmoid(-1) = -0.26894
  }

  TEST_CASE("fp16 arithmetic: 1x1 and im2col kernels fuse every activation through its table, bit for bit") {
    const Window one = {1, 1, 1, 1, 0, 0, 0, 0};
    ConvGeometry probe = conv(96, 24, 6, 6, one, 1);
    probe.out_pack = 1;
    probe.out_c = 17;
    probe.act = kTableActs[0];
    if (!fp16_here(probe)) return;
    CHECK(std::string(select(probe)->name) == "f16_conv1x1_pack8_16x8_neonfp16");
    struct Case {
      int in_c, out_c, h, w;
      Window k;
      int stride;
      bool planar;
    };
    const Case cases[] = {
        // 1x1, pack8 out: full 16x8 tiles, a last panel of 8, short tiles, stride 2.
        {16, 24, 4, 4, one, 1, false},
        {96, 8, 7, 7, one, 2, false},
        {8, 16, 1, 3, one, 1, false},
        {24, 40, 5, 9, one, 1, false},
        // 1x1, planar out: MoveNet's heads (96 -> 17 and 96 -> 1), odd channel counts.
        {96, 17, 6, 6, one, 1, true},
        {96, 1, 5, 7, one, 1, true},
        {16, 3, 2, 17, one, 2, true},
        {32, 21, 3, 11, one, 1, true},
        // Any window: the im2col kernel (zero padding multiplied where windows overhang).
        {16, 24, 5, 5, {3, 3, 1, 1, 1, 1, 1, 1}, 1, false},
        {8, 8, 6, 9, {3, 3, 1, 1, 1, 1, 1, 1}, 2, false},
        {24, 16, 3, 17, {1, 3, 1, 1, 0, 1, 0, 1}, 1, false},
        {16, 16, 7, 7, {3, 3, 2, 2, 0, 0, 0, 0}, 1, false},
    };
    std::mt19937 rng(1736);
    std::map<std::string, int> runs;  // per kernel
    int n = 0;
    for (const Case& c : cases) {
      for (const ActivationSpec& act : kTableActs) {
        ConvGeometry g = conv(c.in_c, c.out_c, c.h, c.w, c.k, c.stride);
        if (c.planar) g.out_pack = 1;
        g.act = act;
        g.bias = n % 2 == 0;
        const Operands op = random_operands(g, n % 3 == 2 ? 8.f : 2.f, rng);
        ++n;
        // Selected: the first fp16 kernel that claims it, which every claimant equals.
        const ConvKernel* chosen = select(g);
        REQUIRE_MESSAGE(chosen != nullptr, describe(g));
        CHECK(chosen->f16);
        for (const ConvKernel* k : kt::f16_kernels()) {
          if (!k->supports(g)) continue;
          check_kernel(k, g, op);
          ++runs[k->name];
        }
      }
    }
    CHECK(runs["f16_conv1x1_pack8_16x8_neonfp16"] == 8 * 10);
    CHECK(runs["f16_conv_im2col_pack8_neonfp16"] == (4 + 4) * 10);  // the pack8 1x1 cases too
    for (const auto& r : runs) MESSAGE(r.first << ": " << r.second << " geometries, each at 1 and 4 threads");
  }

  // MoveNet's heads at their size: 48x48 pixels of 96 channels into 17 and 1 planar
  // channels through a Sigmoid.
  TEST_CASE("fp16 arithmetic: 1x1 kernel equals the fp16 reference on MoveNet's Sigmoid heads") {
    ConvGeometry g = conv(96, 17, 48, 48, {1, 1, 1, 1, 0, 0, 0, 0}, 1);
    g.out_pack = 1;
    g.bias = true;
    g.act = {ActivationType::Sigmoid, 0.f, 0.f};
    if (!fp16_here(g)) return;
    std::mt19937 rng(48);
    for (int out_c : {17, 1}) {
      g.out_c = out_c;
      const ConvKernel* k = select(g);
      REQUIRE(k != nullptr);
      CHECK(std::string(k->name) == "f16_conv1x1_pack8_16x8_neonfp16");
      check_kernel(k, g, random_operands(g, 2.f, rng));
    }
  }

  // In a Net: the heads run the fp16 1x1 kernel into planar halves (not fp32 kernels
  // behind conversions), and equal the fp16 oracle bit for bit.
  TEST_CASE("fp16 arithmetic: a Net's Sigmoid heads run the fp16 1x1 kernel") {
    kestrel::ModelBuilder b;
    b.add_input("data", {16, 7, 9});
    add_conv_act(b, "m", "data", 16, 96, 1, {ActivationType::ReLU, 0.f, 0.f});
    add_conv_act(b, "heat", "m", 96, 17, 1, {ActivationType::Sigmoid, 0.f, 0.f});
    add_conv_act(b, "centre", "m", 96, 1, 1, {ActivationType::Sigmoid, 0.f, 0.f});
    add_conv_act(b, "swish", "m", 96, 24, 1, {ActivationType::HardSwish, 1.f / 6, 0.f});
    b.add_output("heat");
    b.add_output("centre");
    b.add_output("swish");
    kestrel::Net oracle, fast;
    oracle.option().kernels = kestrel::KernelSet::kReference;
    for (kestrel::Net* net : {&oracle, &fast}) {
      net->option().precision = kestrel::Precision::kFp16;
      net->option().layer_precision["m"] = kestrel::Precision::kFp16;  // it reads the input: fp32 unless named
    }
    REQUIRE(kt::load(oracle, b).ok());
    REQUIRE(kt::load(fast, b).ok());
    const kestrel::Mat in = kt::random_input(fast, "data", 17);
    const bool fp16 = kt::fp16_kernels_run();
    for (int threads : {1, 4}) {
      CAPTURE(threads);
      std::map<std::string, std::string> kernel;
      kestrel::Extractor ex = fast.create_extractor();
      ex.set_num_threads(threads);
      ex.set_observer([&](const kestrel::LayerEvent& e) { kernel[e.layer_name] = e.kernel; });
      REQUIRE(ex.input("data", in).ok());
      for (const char* blob : {"heat", "centre", "swish"}) {
        INFO(std::string(blob) << " ran " << kernel[blob]);
        kestrel::Mat got, want;
        REQUIRE(ex.extract(blob, got).ok());
        kestrel::Extractor ox = oracle.create_extractor();
        REQUIRE(ox.input("data", in).ok());
        REQUIRE(ox.extract(blob, want).ok());
        REQUIRE(got.shape() == want.shape());
        if (!fp16) {
          CHECK(kernel[blob].rfind("f16_", 0) != 0);
          continue;
        }
        CHECK(kernel["m"].rfind("f16_conv1x1_pack8_16x8_neonfp16", 0) == 0);
        CHECK(kernel[blob].rfind("f16_conv1x1_pack8_16x8_neonfp16", 0) == 0);
        for (int q = 0; q < want.c; ++q) {
          CAPTURE(q);
          CHECK(std::memcmp(got.channel(q), want.channel(q), static_cast<size_t>(want.w) * want.h * sizeof(float)) ==
                0);
        }
      }
    }
    if (!fp16) MESSAGE("no fp16 arithmetic here: the heads run fp32 kernels");
  }
}
