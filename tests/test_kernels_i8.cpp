// The int8 oracle (kernels/i8_reference.h): quantization's rounding and saturation, the
// per-channel weight scales, and the convolution against independent computations:
// exact integer sums (a naive int64 loop), the dequantized fp32 convolution, and the
// int8 output as the quantized fp32 output; on the usual edge shapes, 1 and 4 threads.
// Then every int8 kernel against the oracle, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <random>
#include <vector>

#include "conv_test_util.h"
#include "kernel_test_util.h"
#include "kernels/conv_kernels.h"
#include "kernels/elementwise_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"

namespace k = kestrel::kernels;

namespace {

struct Case {
  int in_c, out_c, group, h, w, kh, stride, pad;
};

k::ConvGeometry geometry(const Case& c) {
  k::ConvGeometry g;
  g.in_c = c.in_c, g.out_c = c.out_c, g.group = c.group;
  g.in_h = c.h, g.in_w = c.w, g.kh = g.kw = c.kh, g.sh = g.sw = c.stride;
  g.pad_top = g.pad_left = c.pad;
  g.out_h = (c.h + 2 * c.pad - c.kh) / c.stride + 1;
  g.out_w = (c.w + 2 * c.pad - c.kh) / c.stride + 1;
  g.bias = true;
  return g;
}

// The products' exact sum for output (oc, oy, ox), by the definition (zeros in the
// padding), in int64.
int64_t naive_sum(const k::ConvGeometry& g, const std::vector<int8_t>& w, const std::vector<int8_t>& in, int oc,
                  int oy, int ox) {
  const int ipg = g.in_c / g.group, opg = g.out_c / g.group;
  int64_t s = 0;
  for (int ic = 0; ic < ipg; ++ic) {
    const int c = oc / opg * ipg + ic;
    for (int ky = 0; ky < g.kh; ++ky) {
      for (int kx = 0; kx < g.kw; ++kx) {
        const int y = oy * g.sh - g.pad_top + ky, x = ox * g.sw - g.pad_left + kx;
        if (y < 0 || y >= g.in_h || x < 0 || x >= g.in_w) continue;
        s += int64_t{w[((size_t(oc) * ipg + ic) * g.kh + ky) * g.kw + kx]} * in[(size_t(c) * g.in_h + y) * g.in_w + x];
      }
    }
  }
  return s;
}

const Case kCases[] = {
    {3, 8, 1, 17, 13, 3, 2, 1},   // a stem: 3 channels, stride 2, padded
    {16, 24, 1, 7, 9, 1, 1, 0},   // 1x1
    {12, 12, 12, 11, 5, 3, 1, 1}, // depthwise, channels not a multiple of 8
    {10, 10, 10, 9, 16, 3, 2, 1}, // depthwise stride 2
    {8, 6, 2, 5, 7, 3, 1, 1},     // grouped
    {20, 9, 1, 1, 1, 1, 1, 0},    // 1x1 spatial
    {5, 7, 1, 6, 17, 5, 1, 2},    // 5x5, width 17
    {3, 4, 1, 4, 1, 3, 2, 1},     // width 1
};

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("int8 quantization: round half to even, saturation at +-127, NaN to 0") {
    CHECK(k::quantize_i8(2.5f, 1.f) == 2);
    CHECK(k::quantize_i8(3.5f, 1.f) == 4);
    CHECK(k::quantize_i8(-2.5f, 1.f) == -2);
    CHECK(k::quantize_i8(-0.5f, 1.f) == 0);
    CHECK(k::quantize_i8(0.26f, 10.f) == 3);
    CHECK(k::quantize_i8(126.5f, 1.f) == 126);
    CHECK(k::quantize_i8(127.6f, 1.f) == 127);
    CHECK(k::quantize_i8(1e30f, 1.f) == 127);
    CHECK(k::quantize_i8(-200.f, 1.f) == -127);
    CHECK(k::quantize_i8(-std::numeric_limits<float>::infinity(), 1.f) == -127);
    CHECK(k::quantize_i8(std::numeric_limits<float>::quiet_NaN(), 1.f) == 0);
  }

  TEST_CASE("int8 weights: one scale per output channel, its largest |w| at +-127") {
    const std::vector<float> w = {0.5f, -1.f, 0.25f, 0.f, 0.f, 0.f, 3.f, 1.5f, -0.75f};
    std::vector<int8_t> q(w.size());
    std::vector<float> s(3);
    k::quantize_rows_i8(w.data(), 3, 3, q.data(), s.data());
    CHECK(s[0] == 127.f);
    CHECK(s[1] == 1.f);  // a channel of zeros
    CHECK(s[2] == doctest::Approx(127.f / 3.f));
    CHECK(q == std::vector<int8_t>{64, -127, 32, 0, 0, 0, 127, 64, -32});  // 63.5 -> 64, 31.75 -> 32
  }

  TEST_CASE("int8 convolution oracle: exact sums, the dequantized fp32 result, int8 outputs, any thread count") {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> q8(-127, 127);
    std::uniform_real_distribution<float> u(0.5f, 2.f);
    for (const Case& c : kCases) {
      const k::ConvGeometry g = geometry(c);
      CAPTURE(c.in_c);
      CAPTURE(c.out_c);
      CAPTURE(c.group);
      CAPTURE(c.kh);
      CAPTURE(c.stride);
      const size_t taps = size_t(g.in_c / g.group) * g.kh * g.kw;
      std::vector<int8_t> w(size_t(g.out_c) * taps), in(size_t(g.in_c) * g.in_h * g.in_w);
      for (auto& v : w) v = static_cast<int8_t>(q8(rng));
      for (auto& v : in) v = static_cast<int8_t>(q8(rng));
      const size_t plane = size_t(g.out_h) * g.out_w;
      const size_t in_cstep = size_t(g.in_h) * g.in_w;

      // 1. dequant 1, bias 0, no activation, fp32 out: the exact integer sums (below 2^24
      //    here, so exact as floats).
      std::vector<float> ones(g.out_c, 1.f), zeros(g.out_c, 0.f), sums(g.out_c * plane);
      k::conv_reference_i8(g, w.data(), ones.data(), zeros.data(), in.data(), in_cstep, 0.f, nullptr, sums.data(),
                           plane, 1);
      for (int oc = 0; oc < g.out_c; ++oc) {
        for (int oy = 0; oy < g.out_h; ++oy) {
          for (int ox = 0; ox < g.out_w; ++ox) {
            const int64_t want = naive_sum(g, w, in, oc, oy, ox);
            REQUIRE(sums[oc * plane + size_t(oy) * g.out_w + ox] == static_cast<float>(want));
          }
        }
      }

      // 2. Scales and a ReLU6: the fp32 convolution of the dequantized operands, to
      //    fp32's rounding.
      const float in_scale = 40.f;
      std::vector<float> w_scale(g.out_c), dequant(g.out_c), bias(g.out_c);
      for (int oc = 0; oc < g.out_c; ++oc) {
        w_scale[oc] = 100.f * u(rng);
        dequant[oc] = 1.f / (in_scale * w_scale[oc]);
        bias[oc] = u(rng) - 1.25f;
      }
      k::ConvGeometry ga = g;
      ga.act.type = kestrel::fb::ActivationType::Clip;
      ga.act.alpha = 0.f, ga.act.beta = 6.f;
      std::vector<float> wf(w.size()), inf(in.size()), ref(g.out_c * plane), got(g.out_c * plane);
      for (size_t i = 0; i < w.size(); ++i) wf[i] = w[i] / w_scale[i / taps];
      for (size_t i = 0; i < in.size(); ++i) inf[i] = in[i] / in_scale;
      k::conv_reference(ga, wf.data(), bias.data(), inf.data(), in_cstep, ref.data(), plane, 1);
      k::conv_reference_i8(ga, w.data(), dequant.data(), bias.data(), in.data(), in_cstep, 0.f, nullptr, got.data(),
                           plane, 1);
      for (size_t i = 0; i < ref.size(); ++i) REQUIRE(std::fabs(got[i] - ref[i]) <= 1e-4f * (1.f + std::fabs(ref[i])));

      // 3. int8 outputs: requantized in one step, fma(sum, dequant * s, bias * s) rounded
      //    and clamped to ReLU6's [0, rne(6 s)], at 1 and 4 threads alike; within one
      //    step of the fp32 output quantized.
      const float out_scale = 20.f;
      const int hi = static_cast<int>(std::nearbyint(6.f * out_scale));
      for (int threads : {1, 4}) {
        CAPTURE(threads);
        std::vector<int8_t> q(g.out_c * plane);
        k::conv_reference_i8(ga, w.data(), dequant.data(), bias.data(), in.data(), in_cstep, out_scale, q.data(),
                             nullptr, plane, threads);
        size_t off = 0, far = 0;
        for (size_t i = 0; i < q.size(); ++i) {
          const size_t oc = i / plane;
          const float v = std::fma(sums[i], dequant[oc] * out_scale, bias[oc] * out_scale);
          const int want = std::min(hi, std::max(0, static_cast<int>(std::nearbyint(v))));
          off += q[i] != want;
          far += std::abs(q[i] - k::quantize_i8(got[i], out_scale)) > 1;
        }
        CHECK(off == 0);
        CHECK(far == 0);
        std::vector<float> again(g.out_c * plane);
        k::conv_reference_i8(ga, w.data(), dequant.data(), bias.data(), in.data(), in_cstep, 0.f, nullptr,
                             again.data(), plane, threads);
        CHECK(std::memcmp(again.data(), got.data(), got.size() * sizeof(float)) == 0);
      }
    }
  }

  TEST_CASE("int8 convolution oracle: the largest sums fit in int32") {
    // kMaxProducts products of 127 * -127 each: the most negative sum the scheme allows.
    k::ConvGeometry g;
    g.in_c = static_cast<int>(k::kMaxProducts), g.out_c = 1, g.in_h = g.in_w = 1, g.out_h = g.out_w = 1;
    std::vector<int8_t> w(k::kMaxProducts, 127), in(k::kMaxProducts, -127);
    const float one = 1.f, zero = 0.f;
    float out = 0.f;
    k::conv_reference_i8(g, w.data(), &one, &zero, in.data(), 1, 0.f, nullptr, &out, 1, 1);
    CHECK(out == static_cast<float>(int64_t{-127} * 127 * static_cast<int64_t>(k::kMaxProducts)));
    CHECK(int64_t{127} * 127 * static_cast<int64_t>(k::kMaxProducts) <= std::numeric_limits<int32_t>::max());
  }
}

namespace {

using kestrel::Mat;
using kestrel::Shape;
using Act = kestrel::fb::ActivationType;

// The oracle on `in` as a Convolution layer runs it without a kernel: the input
// quantized channel by channel, then conv_reference_i8 to fp32.
Mat oracle_i8(const k::ConvGeometry& g, const Mat& in, float in_scale, const std::vector<int8_t>& w,
              const std::vector<float>& dequant, const float* bias) {
  const size_t plane = size_t(g.in_h) * g.in_w;
  std::vector<int8_t> q(plane * g.in_c);
  for (int c = 0; c < g.in_c; ++c) k::quantize_i8(in.channel(c), q.data() + c * plane, plane, in_scale);
  Mat out;
  REQUIRE(out.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
  k::conv_reference_i8(g, w.data(), dequant.data(), bias, q.data(), plane, 0.f, nullptr, out.data, out.cstep, 1);
  return out;
}

// run_maps on int8 maps (kernels/i8_conv_kernels.h: I8Operands), each mix of an fp32 or
// int8 input and output, 1 and 4 threads: the int8 input is `in` quantized (its channel
// padding holding other bytes, which must not be read); an fp32 output must be `want`,
// an int8 one the oracle's int8 output (where the activation allows one), the channel
// padding left alone.
void check_int8_maps(const k::I8ConvKernel& kern, const k::ConvGeometry& g, const Mat& packed, const Mat& in,
                     float in_scale, const std::vector<int8_t>& w, const std::vector<float>& dequant,
                     const float* bias, const Mat& want) {
  Shape s8 = Shape::make3(g.in_w, g.in_h, g.in_c);
  s8.i8 = true;
  Mat in8;
  REQUIRE(in8.create(s8));
  const size_t in_plane = size_t(g.in_w) * g.in_h, out_plane = size_t(g.out_w) * g.out_h;
  for (int q = 0; q < g.in_c; ++q) {
    int8_t* d = reinterpret_cast<int8_t*>(in8.channel(q));
    std::fill(d, d + in8.cstep * sizeof(float), int8_t{101});
    k::quantize_i8(in.channel(q), d, in_plane, in_scale);
  }
  const float out_scale = 37.f;
  std::vector<int8_t> want8(out_plane * g.out_c);
  k::conv_reference_i8(g, w.data(), dequant.data(), bias, reinterpret_cast<const int8_t*>(in8.data),
                       in8.cstep * sizeof(float), out_scale, want8.data(), nullptr, out_plane, 1);
  constexpr int8_t kSentinel = 0x5a;
  for (int mix = 1; mix < 4; ++mix) {
    const bool in_i8 = mix & 1, out_i8 = mix & 2;
    if (out_i8 && !k::i8_output_activation(g.act)) continue;
    for (int threads : {1, 4}) {
      INFO("int8 input " << in_i8 << ", int8 output " << out_i8 << ", threads " << threads);
      Shape so = Shape::make3(g.out_w, g.out_h, g.out_c);
      so.i8 = out_i8;
      Mat out;
      REQUIRE(out.create(so));
      std::memset(out.data, kSentinel, out.total() * sizeof(float));
      k::I8Operands io;
      io.in = in_i8 ? static_cast<const void*>(in8.data) : in.data;
      io.in_cstep = in_i8 ? in8.cstep * sizeof(float) : in.cstep;
      io.in_i8 = in_i8;
      io.in_scale = in_scale;
      io.out = out.data;
      io.out_cstep = out_i8 ? out.cstep * sizeof(float) : out.cstep;
      io.out_scale = out_i8 ? out_scale : 0.f;
      kt::KernelScratch scratch;
      const auto ctx = scratch.make(kern.workspace_bytes(g), kern.workspace_per_thread_bytes(g), threads);
      kern.run_maps(g, packed.data, io, ctx);
      size_t bad = 0, padding = 0;
      for (int q = 0; q < g.out_c; ++q) {
        const int8_t* b8 = reinterpret_cast<const int8_t*>(out.channel(q));
        const float* f = out.channel(q);
        for (size_t i = 0; i < out_plane; ++i) {
          if (out_i8) {
            bad += b8[i] != want8[q * out_plane + i];
          } else {
            bad += std::memcmp(&f[i], &want.channel(q)[i], sizeof(float)) != 0;
          }
        }
        const size_t used = out_plane * (out_i8 ? 1 : sizeof(float));
        const int8_t* raw = reinterpret_cast<const int8_t*>(out.channel(q));
        for (size_t i = used; i < out.cstep * sizeof(float); ++i) padding += raw[i] != kSentinel;
      }
      CHECK(bad == 0);
      CHECK_MESSAGE(padding == 0, "wrote into channel padding");
    }
  }
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("int8 kernels equal the int8 oracle bit for bit: edge shapes, activations, 1 and 4 threads") {
    const auto kernels = kt::runnable_kernels(k::i8_conv_kernels());
    bool any = false;
    for (const k::I8ConvKernel* kern : kernels) any = any || k::i8_kernel_runs(*kern);
    if (!any) {
      MESSAGE("skipped: no int8 kernel runs on this CPU");
      return;
    }
    struct KCase {
      int in_c, out_c, group, h, w, k, stride, pad_begin, pad_end;
      Act act;
      bool bias;
      int dilation = 1;
    };
    // 1x1: channel counts that are and are not multiples of a quad and of a 32-channel
    // panel (channel tiles, maps of at most 256 pixels), maps of 1 pixel, of fewer than a 12-pixel group, of groups with a short
    // last one, and one of thousands of quads. Depthwise 3x3 and 5x5: stride 1 and 2,
    // widths that are and are not multiples of 16 and of a 32-pixel step, no padding,
    // TF's SAME at stride 2 (nothing before, one after), a 1x1 map. Any other one-group
    // convolution (im2col): stems, 3x3 with taps past kExactFloatTaps, 1x1 stride 2,
    // 5x5 and 7x7 stride 2, stride 3 (gathered), dilation 2, width 1, groups crossing
    // output rows.
    const KCase cases[] = {
        {1, 1, 1, 1, 1, 1, 1, 0, 0, Act::None, false},       {3, 5, 1, 3, 5, 1, 1, 0, 0, Act::ReLU, true},
        {4, 32, 1, 4, 3, 1, 1, 0, 0, Act::Clip, true},       {5, 33, 1, 1, 13, 1, 1, 0, 0, Act::LeakyReLU, true},
        {16, 17, 1, 12, 1, 1, 1, 0, 0, Act::None, true},     {33, 64, 1, 7, 7, 1, 1, 0, 0, Act::Clip, true},
        {130, 70, 1, 13, 11, 1, 1, 0, 0, Act::ReLU, false},  {64, 40, 1, 14, 14, 1, 1, 0, 0, Act::Sigmoid, true},
        {256, 96, 1, 5, 5, 1, 1, 0, 0, Act::Clip, true},     {4097, 35, 1, 2, 3, 1, 1, 0, 0, Act::None, true},
        {12, 12, 12, 11, 5, 3, 1, 1, 1, Act::Clip, true},    {40, 40, 40, 17, 33, 3, 2, 1, 1, Act::ReLU, true},
        {16, 16, 16, 1, 1, 3, 1, 1, 1, Act::None, true},     {20, 20, 20, 9, 70, 5, 2, 2, 2, Act::LeakyReLU, true},
        {8, 8, 8, 7, 35, 3, 1, 0, 0, Act::Sigmoid, false},   {7, 7, 7, 6, 6, 5, 1, 2, 2, Act::Clip, true},
        {9, 9, 9, 8, 8, 3, 2, 0, 1, Act::ReLU, true},        {3, 3, 3, 40, 67, 3, 2, 1, 1, Act::None, true},
        {3, 8, 1, 17, 13, 3, 2, 1, 1, Act::ReLU, true},      {64, 40, 1, 14, 14, 3, 1, 1, 1, Act::Clip, true},
        {130, 33, 1, 9, 11, 3, 1, 1, 1, Act::None, false},   {24, 48, 1, 15, 17, 1, 2, 0, 0, Act::ReLU, true},
        {5, 7, 1, 6, 17, 5, 1, 2, 2, Act::LeakyReLU, true},  {3, 4, 1, 4, 1, 3, 2, 1, 1, Act::None, true},
        {16, 20, 1, 8, 8, 3, 2, 0, 1, Act::Sigmoid, true},   {8, 35, 1, 5, 40, 7, 2, 3, 3, Act::Clip, true},
        {12, 9, 1, 11, 7, 3, 1, 2, 2, Act::ReLU, true, 2},   {6, 10, 1, 13, 20, 3, 3, 1, 1, Act::ReLU, true},
        // Stems of a whole 32-channel panel or more (AVX-512 VNNI's quads: a zero channel).
        {3, 32, 1, 19, 23, 7, 2, 3, 3, Act::ReLU, true},     {3, 40, 1, 9, 30, 3, 2, 1, 1, Act::Clip, true},
        {2, 33, 1, 6, 7, 3, 3, 1, 1, Act::None, false},
        // 1x1 on maps of more than 256 pixels (pixel tiles): a last tile of 35, 16 and 32
        // pixels, 8-channel panels with a short last one.
        {24, 24, 1, 17, 19, 1, 1, 0, 0, Act::ReLU, true},    {5, 9, 1, 20, 20, 1, 1, 0, 0, Act::Sigmoid, true},
        {130, 70, 1, 16, 17, 1, 1, 0, 0, Act::Clip, false},  {33, 8, 1, 20, 16, 1, 1, 0, 0, Act::LeakyReLU, true},
        // Depthwise rows of more than one 64-pixel step (150 = 2 x 64 + 16 + 6 outputs;
        // 5x5 stride 2: 100 = 64 + 2 x 16 + 4).
        {6, 6, 6, 5, 150, 3, 1, 1, 1, Act::Clip, true},      {5, 5, 5, 7, 200, 5, 2, 2, 1, Act::ReLU, false},
    };
    std::mt19937 rng(29);
    std::uniform_int_distribution<int> q8(-127, 127);
    std::uniform_real_distribution<float> u(0.5f, 2.f);
    std::map<std::string, int> tested;
    for (const KCase& c : cases) {
      k::ConvGeometry g = kt::pointwise(c.in_c, c.h, c.w, c.out_c, c.act, c.bias);
      g.group = c.group;
      g.kh = g.kw = c.k;
      g.sh = g.sw = c.stride;
      g.pad_top = g.pad_left = c.pad_begin;
      g.dh = g.dw = c.dilation;
      const int span = (c.k - 1) * c.dilation + 1;
      g.out_h = (c.h + c.pad_begin + c.pad_end - span) / c.stride + 1;
      g.out_w = (c.w + c.pad_begin + c.pad_end - span) / c.stride + 1;
      const size_t taps = size_t(c.in_c / c.group) * c.k * c.k;
      INFO(kt::describe_conv(g));
      Mat in;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.in_c)));
      kt::fill_random(in, rng, -3.f, 3.f);
      // Ties to round to even, values past +-127 to saturate, and a NaN (to 0).
      const float in_scale = 50.f;
      in.channel(0)[0] = 2.5f / in_scale;
      if (in.total() > 3) in.channel(0)[1] = -3.5f / in_scale, in.channel(0)[2] = NAN;
      std::vector<int8_t> w(size_t(g.out_c) * taps);
      for (auto& v : w) v = static_cast<int8_t>(q8(rng));
      w[0] = -127;  // the extreme weight (u8 1 after the VNNI offset)
      std::vector<float> dequant(g.out_c), bias(g.out_c);
      for (int o = 0; o < g.out_c; ++o) {
        dequant[o] = 1.f / (in_scale * 100.f * u(rng));
        bias[o] = u(rng) - 1.25f;
      }
      const float* b = c.bias ? bias.data() : nullptr;
      // ReLU, LeakyReLU and Clip are the oracle's bit for bit; the exp-based ones are the
      // ISA's activation kernel on the oracle's values (the epilogue runs it).
      const bool vector_act = c.act == Act::Sigmoid;
      k::ConvGeometry sums = g;
      if (vector_act) sums.act = kestrel::ActivationSpec();
      Mat want = oracle_i8(sums, in, in_scale, w, dequant, b);
      if (vector_act) {
        const auto* act = k::select_activation_kernel(g.act, k::active_isa());
        REQUIRE(act);
        const size_t plane = size_t(g.out_h) * g.out_w;
        for (int q = 0; q < g.out_c; ++q) act->run(g.act, want.channel(q), want.channel(q), plane);
      }
      for (const k::I8ConvKernel* kern : kernels) {
        if (!k::i8_kernel_runs(*kern)) continue;
        INFO(kern->name);
        if (!kern->supports(g)) continue;
        Mat packed;
        REQUIRE(packed.create(Shape::make1(static_cast<int>(kern->packed_bytes(g) / 4) + 1)));
        kern->pack(g, w.data(), dequant.data(), b, packed.data);
        Mat src = in.clone();  // NaN in the channel padding: a kernel must not read it
        const size_t plane = size_t(src.w) * src.h;
        for (int q = 0; q < src.c; ++q) std::fill(src.channel(q) + plane, src.channel(q) + src.cstep, NAN);
        for (int threads : {1, 4}) {
          INFO("threads " << threads);
          Mat out;
          REQUIRE(out.create(Shape::make3(g.out_w, g.out_h, g.out_c)));
          kt::fill_sentinel(out);
          kt::KernelScratch scratch;
          const auto ctx = scratch.make(kern->workspace_bytes(g), kern->workspace_per_thread_bytes(g), threads);
          kern->run(g, packed.data, src.data, src.cstep, in_scale, out.data, out.cstep, ctx);
          CHECK_MESSAGE(kt::padding_untouched(out), "wrote into channel padding");
          CHECK(kt::same_plane_values(out, want));
        }
        if (kern->run_maps) check_int8_maps(*kern, g, packed, in, in_scale, w, dequant, b, want);
        tested[kern->name]++;
        // Planar operands only (the int8 layers keep their maps planar).
        k::ConvGeometry blocked = g;
        blocked.out_pack = 16;
        CHECK_FALSE(kern->supports(blocked));
      }
    }
    for (const k::I8ConvKernel* kern : kernels) {
      if (k::i8_kernel_runs(*kern)) CHECK_MESSAGE(tested[kern->name] > 0, kern->name);
    }
  }

  // A NaN or infinite bias (a corrupt model's: nothing checks biases) makes the
  // requantization's fma NaN or infinite; the oracle turns a NaN into 0, then clamps.
  // The x86 kernels skip that step where the clamp's range holds 0 (i8_avx512.h:
  // Requant16), so this checks both cases: bounds around 0, and a Clip above it.
  TEST_CASE("int8 kernels: NaN and infinite biases give the oracle's int8 outputs") {
    const auto kernels = kt::runnable_kernels(k::i8_conv_kernels());
    struct NCase {
      int in_c, out_c, group, h, w, k, stride;
    };
    const NCase cases[] = {{33, 40, 1, 20, 20, 1, 1}, {33, 40, 1, 7, 7, 1, 1},  {20, 20, 20, 14, 14, 3, 1},
                           {20, 20, 20, 9, 9, 3, 2},   {20, 20, 20, 12, 12, 5, 1}, {8, 12, 1, 9, 10, 3, 1}};
    std::mt19937 rng(31);
    std::uniform_int_distribution<int> q8(-127, 127);
    int runs = 0;
    for (const NCase& c : cases) {
      for (int a = 0; a < 4; ++a) {
        const Act acts[] = {Act::None, Act::ReLU, Act::Clip, Act::Clip};
        k::ConvGeometry g = kt::pointwise(c.in_c, c.h, c.w, c.out_c, acts[a], true);
        g.group = c.group;
        g.kh = g.kw = c.k;
        g.sh = g.sw = c.stride;
        g.pad_top = g.pad_left = c.k / 2;
        g.out_h = (c.h + 2 * (c.k / 2) - c.k) / c.stride + 1;
        g.out_w = (c.w + 2 * (c.k / 2) - c.k) / c.stride + 1;
        if (a == 3) g.act.alpha = 0.5f;  // lo > 0: the NaN must become lo
        INFO(kt::describe_conv(g) << ", activation " << a);
        const size_t taps = size_t(c.in_c / c.group) * c.k * c.k, in_plane = size_t(c.h) * c.w;
        const size_t out_plane = size_t(g.out_h) * g.out_w;
        std::vector<int8_t> w(size_t(g.out_c) * taps), in(in_plane * g.in_c + kestrel::kOverreadBytes);
        for (auto& v : w) v = static_cast<int8_t>(q8(rng));
        for (auto& v : in) v = static_cast<int8_t>(q8(rng));
        std::vector<float> dequant(g.out_c, 1.f / 4000.f), bias(g.out_c, 0.25f);
        bias[1] = NAN;
        bias[2] = INFINITY;
        bias[3] = -INFINITY;
        dequant[4] = NAN;
        const float out_scale = 37.f;
        std::vector<int8_t> want(out_plane * g.out_c);
        k::conv_reference_i8(g, w.data(), dequant.data(), bias.data(), in.data(), in_plane, out_scale, want.data(),
                             nullptr, out_plane, 1);
        for (const k::I8ConvKernel* kern : kernels) {
          if (!k::i8_kernel_runs(*kern) || !kern->run_maps || !kern->supports(g)) continue;
          INFO(kern->name);
          Mat packed;
          REQUIRE(packed.create(Shape::make1(static_cast<int>(kern->packed_bytes(g) / 4) + 1)));
          kern->pack(g, w.data(), dequant.data(), bias.data(), packed.data);
          std::vector<int8_t> out(out_plane * g.out_c + kestrel::kOverreadBytes, 0x5a);
          k::I8Operands io;
          io.in = in.data();
          io.in_cstep = in_plane;
          io.in_i8 = true;
          io.in_scale = 50.f;
          io.out = out.data();
          io.out_cstep = out_plane;
          io.out_scale = out_scale;
          kt::KernelScratch scratch;
          const auto ctx = scratch.make(kern->workspace_bytes(g), kern->workspace_per_thread_bytes(g), 2);
          kern->run_maps(g, packed.data, io, ctx);
          CHECK(std::equal(want.begin(), want.end(), out.begin()));
          ++runs;
        }
      }
    }
    if (runs == 0) MESSAGE("skipped: no int8 kernel with int8 maps runs on this CPU");
  }

  // The residual add (kernels/i8_reference.h: i8_add_reference) of the active ISA's map
  // kernel: every mix of int8 and fp32 operands and output, the four activations an int8
  // output takes, rows whose tails are not whole vectors; fp32 operands with a NaN and
  // infinities, bytes at +-127. The outputs' bytes are compared (floats bit for bit).
  TEST_CASE("int8 kernels: the residual add equals the oracle bit for bit: operand mixes, activations, tails") {
    const k::I8MapKernel& mk = k::i8_map_kernel();
    INFO(mk.name);
    std::mt19937 rng(37);
    std::uniform_int_distribution<int> q8(-127, 127);
    std::uniform_real_distribution<float> u(-3.f, 3.f);
    const size_t lengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100};
    const Act acts[] = {Act::None, Act::ReLU, Act::Clip, Act::LeakyReLU};
    int runs = 0;
    for (int mix = 0; mix < 8; ++mix) {
      const bool a_i8 = mix & 1, b_i8 = mix & 2, out_i8 = mix & 4;
      for (Act type : acts) {
        for (size_t n : lengths) {
          INFO("mix " << mix << ", activation " << static_cast<int>(type) << ", n " << n);
          kestrel::ActivationSpec act;
          act.type = type;
          act.alpha = type == Act::Clip ? -0.5f : 0.1f;
          act.beta = 2.5f;
          // Operands with the kernels' over-read room past them (kOverreadBytes).
          std::vector<float> fa(n + 16), fb(n + 16);
          std::vector<int8_t> qa(n + kestrel::kOverreadBytes), qb(n + kestrel::kOverreadBytes);
          for (size_t i = 0; i < n; ++i) {
            fa[i] = u(rng), fb[i] = u(rng);
            qa[i] = static_cast<int8_t>(q8(rng)), qb[i] = static_cast<int8_t>(q8(rng));
          }
          qa[0] = 127, qb[n - 1] = -127;
          if (n > 8) fa[3] = NAN, fb[5] = INFINITY, fa[7] = -INFINITY;
          k::I8AddRow r;
          r.a = a_i8 ? static_cast<const void*>(qa.data()) : fa.data();
          r.a_dequant = a_i8 ? 1.f / 41.f : 0.f;
          r.b = b_i8 ? static_cast<const void*>(qb.data()) : fb.data();
          r.b_dequant = b_i8 ? 1.f / 53.f : 0.f;
          r.out_scale = out_i8 ? 29.f : 0.f;
          const size_t bytes = n * (out_i8 ? 1 : sizeof(float));
          std::vector<uint8_t> want(bytes + 64, 0xa5), got(bytes + 64, 0xa5);
          r.out = want.data();
          k::i8_add_reference(r, n, act);
          r.out = got.data();
          mk.add(r, n, act);
          CHECK(std::memcmp(want.data(), got.data(), bytes) == 0);
          // Nothing written past the row.
          CHECK(std::all_of(got.begin() + static_cast<long>(bytes), got.end(), [](uint8_t v) { return v == 0xa5; }));
          ++runs;
        }
      }
    }
    // The oracle itself: an int8 output is the requantized sum of the dequantized bytes.
    kestrel::ActivationSpec none;
    const int8_t a = 100, b = -37;
    float y = 0.f;
    k::I8AddRow r;
    r.a = &a, r.a_dequant = 0.5f, r.b = &b, r.b_dequant = 0.25f, r.out = &y;
    k::i8_add_reference(r, 1, none);
    CHECK(y == 40.75f);
    int8_t q = 0;
    r.out = &q, r.out_scale = 2.f;
    k::i8_add_reference(r, 1, none);
    CHECK(q == 82);  // 81.5 rounds to even
    CHECK(runs == 8 * 4 * 11);
  }

  // Global pooling's plane reductions (I8MapKernel::sum, max) of the active ISA's map
  // kernel: lengths that are not whole vectors, bytes at both bounds, planes long enough
  // that a narrow accumulator would overflow (127 * 70001 > 2^23), and what the pooled
  // value is made of (i8_global_pool_value).
  TEST_CASE("int8 kernels: global pooling's sum and maximum equal the oracle on any length") {
    const k::I8MapKernel& mk = k::i8_map_kernel();
    INFO(mk.name);
    REQUIRE(static_cast<bool>(mk.sum));
    REQUIRE(static_cast<bool>(mk.max));
    std::mt19937 rng(43);
    std::uniform_int_distribution<int> q8(-127, 100);
    std::vector<size_t> lengths;
    for (size_t n = 1; n <= 100; ++n) lengths.push_back(n);
    for (size_t n : {127, 128, 129, 255, 256, 257, 1023, 4099, 70001}) lengths.push_back(n);
    for (size_t n : lengths) {
      INFO("n " << n);
      std::vector<int8_t> q(n + kestrel::kOverreadBytes, 0);
      for (int fill = 0; fill < 3; ++fill) {
        for (size_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(fill == 0 ? q8(rng) : fill == 1 ? 127 : -127);
        // The random bytes' largest value last, where a tail must read it.
        if (fill == 0) q[n - 1] = 101;
        CHECK(mk.sum(q.data(), n) == k::i8_sum_reference(q.data(), n));
        CHECK(mk.max(q.data(), n) == k::i8_max_reference(q.data(), n));
      }
      CHECK(k::i8_sum_reference(q.data(), n) == -127 * static_cast<int32_t>(n));
      CHECK(k::i8_max_reference(q.data(), n) == -127);
    }
    // The oracle: a sum and a maximum by definition, the average divided after scaling.
    const int8_t row[] = {3, -7, 100, -127, 5};
    CHECK(k::i8_sum_reference(row, 5) == -26);
    CHECK(k::i8_max_reference(row, 5) == 100);
    CHECK(k::i8_max_reference(row + 3, 1) == -127);
    CHECK(k::i8_global_pool_value(true, 100, 5, 0.5f) == 50.f);
    CHECK(k::i8_global_pool_value(false, -26, 5, 0.5f) == -13.f / 5.f);
    CHECK(k::i8_requantize_plain(-2.6f, 10.f) == -26);
    CHECK(k::i8_requantize_plain(1e9f, 10.f) == 127);
  }
}
