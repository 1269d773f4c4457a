// int8 maps (core/net_int8.cpp, Option::int8_maps) on a MobileNet whose blobs carry int8
// scales (min-max over one input, written here so that the test needs no converter and
// runs on every target): the fast kernels and the oracle keep the same maps and give the
// same bits; a map kept as int8 is its writer's requantized bytes; and the network's
// last int8 map differs from the fp32-maps one only by rounding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "core/net_impl.h"
#include "kernel_test_util.h"
#include "kernels/i8_conv_kernels.h"
#include "kestrel/builder.h"
#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "mat_util.h"
#include "test_util.h"

namespace {

// `bytes` with every blob's int8 scale 127 / max |x| over one inference on `in`.
std::string with_minmax_scales(const std::string& bytes, const kestrel::Mat& in) {
  kestrel::Net net;
  // Every blob stored: a fused pair (AVX2's pointwise + depthwise) computes its middle in passing.
  net.option().fuse_layers = false;
  REQUIRE(net.load(bytes.data(), bytes.size()).ok());
  std::unique_ptr<kestrel::fb::ModelT> model(kestrel::fb::GetModel(bytes.data())->UnPack());
  for (auto& blob : model->blobs) {
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    kestrel::Mat m;
    const kestrel::Status st = ex.extract(blob->name, m);
    INFO(blob->name << ": " << st.message());
    REQUIRE(st.ok());
    float top = 0.f;
    for (int q = 0; q < std::max(1, m.c); ++q) {
      const float* p = m.channel(q);
      for (size_t i = 0; i < static_cast<size_t>(m.w) * m.h * m.d; ++i) top = std::max(top, std::fabs(p[i]));
    }
    blob->int8_scale = top > 0.f ? 127.f / top : 0.f;
  }
  model->quantization = std::make_unique<kestrel::fb::QuantizationT>();
  model->quantization->scheme_version = kestrel::kInt8SchemeVersion;
  flatbuffers::FlatBufferBuilder fbb;
  kestrel::fb::FinishModelBuffer(fbb, kestrel::fb::Model::Pack(fbb, model.get()));
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

// Blob `blob` of `model` at int8 on `in` ("data"); `ran` gets the kernels by layer.
kestrel::Mat run_int8(const std::string& model, const kestrel::Mat& in, kestrel::KernelSet kernels, int threads,
                      bool maps, const char* blob, std::map<std::string, std::string>* ran) {
  kestrel::Net net;
  net.option().precision = kestrel::Precision::kInt8;
  net.option().kernels = kernels;
  net.option().int8_maps = maps;
  REQUIRE(net.load(model.data(), model.size()).ok());
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  if (ran) ex.set_observer([ran](const kestrel::LayerEvent& e) { (*ran)[e.layer_name] = e.kernel; });
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat m;
  REQUIRE(ex.extract(blob, m).ok());
  return m.clone();
}

// A seeded He-initialized convolution `name` (stride 1, "same" padding, bias, ReLU or none).
void add_conv(kestrel::ModelBuilder& b, std::mt19937& rng, const std::string& name, const std::string& bottom, int in,
              int out, int k, int group, bool relu) {
  const int fan_in = in / group * k * k;
  std::normal_distribution<float> w(0.f, std::sqrt(2.f / static_cast<float>(fan_in)));
  std::uniform_real_distribution<float> bias(-0.1f, 0.1f);
  std::vector<float> wv(static_cast<size_t>(out) * fan_in), bv(out);
  for (float& v : wv) v = w(rng);
  for (float& v : bv) v = bias(rng);
  const uint32_t wi = b.add_weight(name + "/w", {out, in / group, k, k}, wv);
  const uint32_t bi = b.add_weight(name + "/b", {out}, bv);
  kestrel::fb::ConvolutionParamT p;
  p.num_output = out;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = 1;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
  p.group = group;
  p.bias_term = true;
  p.activation = std::make_unique<kestrel::fb::ActivationT>();
  p.activation->type = relu ? kestrel::fb::ActivationType::ReLU : kestrel::fb::ActivationType::None;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  b.add_layer("Convolution", name, {bottom}, {name}, std::move(u), {wi, bi});
}

// A residual network, MobileNet v2's and BlazeFace's blocks: a 3x3 stem, then blocks of
// a depthwise 3x3 (ReLU) and a 1x1 projection added to the block's input (BinaryOp Add
// with ReLU, or without in the second block, as MobileNet v2's), then a 1x1 head.
// Seeded He-initialized weights.
std::string residual_net() {
  kestrel::ModelBuilder b;
  std::mt19937 rng(41);
  b.add_input("data", {3, 19, 27});
  auto conv = [&](const std::string& name, const std::string& bottom, int in, int out, int k, int group, bool relu) {
    add_conv(b, rng, name, bottom, in, out, k, group, relu);
  };
  const int c = 20;
  conv("stem", "data", 3, c, 3, 1, true);
  std::string prev = "stem";
  for (int i = 1; i <= 3; ++i) {
    const std::string n = "block" + std::to_string(i);
    conv(n + "/dw", prev, c, c, 3, c, true);
    conv(n + "/pw", n + "/dw", c, c, 1, 1, false);
    kestrel::fb::BinaryOpParamT add;
    add.op = kestrel::fb::BinaryOpType::Add;
    add.activation = std::make_unique<kestrel::fb::ActivationT>();
    add.activation->type = i == 2 ? kestrel::fb::ActivationType::None : kestrel::fb::ActivationType::ReLU;
    kestrel::fb::LayerParamsUnion u;
    u.Set(std::move(add));
    b.add_layer("BinaryOp", n + "/add", {prev, n + "/pw"}, {n + "/add"}, std::move(u));
    prev = n + "/add";
  }
  conv("head", prev, c, 8, 1, 1, false);
  b.add_output("head");
  const std::vector<uint8_t> raw = b.serialize();
  return std::string(raw.begin(), raw.end());
}


// Inception's and SqueezeNet's joins, Caffe's ResNet sums and a classifier's pooling: a
// 3x3 stem; a 1x1 (ReLU) and a 3x3 (no activation) branch joined by a channel Concat;
// a 1x1 over the join summed with it (Eltwise, ReLU); a global average and a global
// maximum of the sum joined again (1x1 maps); a 1x1 head.
std::string join_net() {
  kestrel::ModelBuilder b;
  std::mt19937 rng(47);
  b.add_input("data", {3, 13, 21});
  auto layer = [&](const char* type, const std::string& name, std::vector<std::string> bottoms, auto param) {
    kestrel::fb::LayerParamsUnion u;
    u.Set(std::move(param));
    b.add_layer(type, name, std::move(bottoms), {name}, std::move(u));
  };
  add_conv(b, rng, "stem", "data", 3, 12, 3, 1, true);
  add_conv(b, rng, "a", "stem", 12, 8, 1, 1, true);
  add_conv(b, rng, "b", "stem", 12, 7, 3, 1, false);
  layer("Concat", "cat", {"a", "b"}, kestrel::fb::ConcatParamT{});
  add_conv(b, rng, "c", "cat", 15, 15, 1, 1, false);
  kestrel::fb::EltwiseParamT sum;
  sum.activation = std::make_unique<kestrel::fb::ActivationT>();
  sum.activation->type = kestrel::fb::ActivationType::ReLU;
  layer("Eltwise", "sum", {"c", "cat"}, std::move(sum));
  for (const auto type : {kestrel::fb::PoolType::Average, kestrel::fb::PoolType::Max}) {
    kestrel::fb::PoolingParamT pool;
    pool.pool = type;
    pool.global = true;
    layer("Pooling", type == kestrel::fb::PoolType::Max ? "gmp" : "gap", {"sum"}, std::move(pool));
  }
  layer("Concat", "pooled", {"gap", "gmp"}, kestrel::fb::ConcatParamT{});
  add_conv(b, rng, "head", "pooled", 30, 6, 1, 1, false);
  b.add_output("head");
  const std::vector<uint8_t> raw = b.serialize();
  return std::string(raw.begin(), raw.end());
}

}  // namespace

TEST_SUITE("precision") {
  TEST_CASE("int8 maps: int8 layers hand each other bytes, the fast kernels and the oracle alike") {
    const std::vector<uint8_t> raw = kestrel::mobilenet_v1({3, 64}).serialize();
    const std::string bytes(raw.begin(), raw.end());
    kestrel::Net fp32;
    REQUIRE(fp32.load(bytes.data(), bytes.size()).ok());
    const kestrel::Mat calib = kt::random_input(fp32, "data", 1), in = kt::random_input(fp32, "data", 2);
    const std::string quantized = with_minmax_scales(bytes, calib);
    const kestrel::fb::Model* model = kestrel::fb::GetModel(quantized.data());
    float scale = 0.f;
    for (const auto* blob : *model->blobs()) {
      if (blob->name()->str() == "conv5_1/dw") scale = blob->int8_scale();
    }
    REQUIRE(scale > 0.f);
    // The last int8 layer's output (fp32 layers follow, whose fast kernels round their own
    // way), or a map between two int8 layers (a depthwise layer's output, which a
    // pointwise one reads); `ran` gets the kernels.
    auto run = [&](kestrel::KernelSet kernels, int threads, bool maps, const char* blob,
                   std::map<std::string, std::string>* ran = nullptr) {
      return run_int8(quantized, in, kernels, threads, maps, blob ? blob : "conv6/sep", ran);
    };
    // The oracle keeps the maps the fast kernels keep: the same numbers.
    std::map<std::string, std::string> ran;
    const kestrel::Mat want = run(kestrel::KernelSet::kReference, 1, true, nullptr);
    const kestrel::Mat map = run(kestrel::KernelSet::kReference, 1, true, "conv5_1/dw");
    for (int threads : {1, 3}) {
      CAPTURE(threads);
      CHECK(kt::same_plane_values(run(kestrel::KernelSet::kReference, threads, true, nullptr), want));
      CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, threads, true, nullptr, &ran), want));
      CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, threads, true, "conv5_1/dw"), map));
    }
    // The map is int8 where both routes around it take int8 maps: int8 kernels with
    // I8ConvKernel::run_maps, and the oracle's (where no fast route exists: armv7).
    auto takes_maps = [](const std::string& name) {
      if (name == "i8_conv_reference") return true;
      for (const auto* k : kestrel::kernels::i8_conv_kernels()) {
        if (name == k->name) return k->run_maps != nullptr;
      }
      return false;
    };
    const bool int8_map = takes_maps(ran.at("conv5_1/dw")) && takes_maps(ran.at("conv5_1/sep"));
    MESSAGE("conv5_1/dw (" << ran.at("conv5_1/dw") << " -> " << ran.at("conv5_1/sep") << "): "
                           << (int8_map ? std::string("an int8 map") : std::string("an fp32 map")));
    const kestrel::Mat fp32_map = run(kestrel::KernelSet::kReference, 1, false, "conv5_1/dw");
    const kestrel::Mat fp32_maps = run(kestrel::KernelSet::kReference, 1, false, nullptr);
    if (!int8_map) {
      CHECK(kt::same_plane_values(map, fp32_map));
      CHECK(kt::same_plane_values(want, fp32_maps));
      return;
    }
    // Extracted, it is its bytes dequantized, q / scale (to a float's rounding), q in
    // [0, 127] (a ReLU's); the fp32 map's values are not such multiples, and differ from
    // them by a few steps (the maps before it are int8 too).
    REQUIRE(map.c == fp32_map.c);
    size_t not_bytes = 0, n = 0, far = 0, off_grid = 0;
    for (int q = 0; q < map.c; ++q) {
      for (int i = 0; i < map.w * map.h; ++i, ++n) {
        const float y = map.channel(q)[i] * scale, x = fp32_map.channel(q)[i];
        not_bytes += !(std::fabs(y - std::nearbyint(y)) < 1e-3f && y > -0.5f && y < 127.5f);
        off_grid += std::fabs(x * scale - std::nearbyint(x * scale)) > 1e-3f;
        far += std::fabs(map.channel(q)[i] - x) * scale > 8.f;
      }
    }
    CHECK(not_bytes == 0);
    CHECK(off_grid > n / 2);
    CHECK(far == 0);
    // With fp32 maps, the last map differs only by rounding.
    const double e = kt::relative_error(want, fp32_maps);
    MESSAGE("conv6/sep relative to fp32 maps: " << e);
    CHECK(e < 0.1);
  }

  // Residual adds (BinaryOp, kernels/i8_reference.h: i8_add_reference) take int8 maps:
  // a block's maps stay int8 from the stem to the head, the oracle and the fast kernels
  // give the same bits at 1 and 3 threads, an add's output is its requantized bytes, and
  // the head differs from the fp32-maps run only by rounding.
  TEST_CASE("int8 maps: residual adds read and write int8 maps, the fast kernels and the oracle alike") {
    const std::string bytes = residual_net();
    kestrel::Net fp32;
    REQUIRE(fp32.load(bytes.data(), bytes.size()).ok());
    const kestrel::Mat calib = kt::random_input(fp32, "data", 3), in = kt::random_input(fp32, "data", 4);
    const std::string quantized = with_minmax_scales(bytes, calib);
    float scale = 0.f;
    for (const auto* blob : *kestrel::fb::GetModel(quantized.data())->blobs()) {
      if (blob->name()->str() == "block1/add") scale = blob->int8_scale();
    }
    REQUIRE(scale > 0.f);
    auto run = [&](kestrel::KernelSet kernels, int threads, bool maps, const char* blob,
                   std::map<std::string, std::string>* ran = nullptr) {
      return run_int8(quantized, in, kernels, threads, maps, blob ? blob : "head", ran);
    };
    std::map<std::string, std::string> ran;
    const kestrel::Mat want = run(kestrel::KernelSet::kReference, 1, true, nullptr);
    const kestrel::Mat add = run(kestrel::KernelSet::kReference, 1, true, "block1/add");
    for (int threads : {1, 3}) {
      CAPTURE(threads);
      CHECK(kt::same_plane_values(run(kestrel::KernelSet::kReference, threads, true, nullptr), want));
      CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, threads, true, nullptr, &ran), want));
      CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, threads, true, "block1/add"), add));
    }
    // The adds run the map kernel's add on int8 maps.
    for (const char* layer : {"block1/add", "block2/add", "block3/add"}) {
      CAPTURE(layer);
      CHECK(ran.at(layer) == std::string(kestrel::kernels::i8_map_kernel().name));
    }
    // Extracted, block1/add is its bytes dequantized: q / scale, q in [0, 127] (a ReLU's).
    size_t not_bytes = 0;
    for (int q = 0; q < add.c; ++q) {
      for (int i = 0; i < add.w * add.h; ++i) {
        const float y = add.channel(q)[i] * scale;
        not_bytes += !(std::fabs(y - std::nearbyint(y)) < 1e-3f && y > -0.5f && y < 127.5f);
      }
    }
    CHECK(not_bytes == 0);
    const kestrel::Mat fp32_maps = run(kestrel::KernelSet::kReference, 1, false, nullptr);
    const double e = kt::relative_error(want, fp32_maps);
    MESSAGE("head relative to fp32 maps: " << e);
    CHECK(e > 0.0);
    CHECK(e < 0.1);
  }

  // Concat, Eltwise Sum and global pooling (kernels/i8_reference.h: i8_sum_reference,
  // i8_max_reference, i8_global_pool_value) take int8 maps: the oracle and the fast
  // kernels give the same bits at 1 and 3 threads; the joins, the sum and the pooled
  // values are their requantized bytes; the head differs from the fp32-maps run only by
  // rounding.
  TEST_CASE("int8 maps: concat, eltwise sum and global pooling read and write int8 maps") {
    const std::string bytes = join_net();
    kestrel::Net fp32;
    REQUIRE(fp32.load(bytes.data(), bytes.size()).ok());
    const kestrel::Mat calib = kt::random_input(fp32, "data", 5), in = kt::random_input(fp32, "data", 6);
    const std::string quantized = with_minmax_scales(bytes, calib);
    std::map<std::string, float> scales;
    for (const auto* blob : *kestrel::fb::GetModel(quantized.data())->blobs()) {
      scales[blob->name()->str()] = blob->int8_scale();
    }
    // The branches' scales differ: the join requantizes at least one of them.
    REQUIRE(scales.at("a") != scales.at("cat"));
    auto run = [&](kestrel::KernelSet kernels, int threads, bool maps, const char* blob,
                   std::map<std::string, std::string>* ran = nullptr) {
      return run_int8(quantized, in, kernels, threads, maps, blob, ran);
    };
    const char* blobs[] = {"cat", "sum", "gap", "gmp", "pooled", "head"};
    std::map<std::string, kestrel::Mat> want;
    for (const char* blob : blobs) want[blob] = run(kestrel::KernelSet::kReference, 1, true, blob);
    std::map<std::string, std::string> ran;
    for (int threads : {1, 3}) {
      for (const char* blob : blobs) {
        CAPTURE(threads);
        CAPTURE(blob);
        CHECK(kt::same_plane_values(run(kestrel::KernelSet::kReference, threads, true, blob), want[blob]));
        CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, threads, true, blob, &ran), want[blob]));
      }
    }
    for (const char* layer : {"sum", "gap", "gmp"}) {
      CAPTURE(layer);
      CHECK(ran.at(layer) == std::string(kestrel::kernels::i8_map_kernel().name));
    }
    // Extracted, each map is its bytes dequantized: q / scale, q in [-127, 127] ([0, 127]
    // after a ReLU).
    for (const char* blob : {"cat", "sum", "gap", "gmp", "pooled"}) {
      CAPTURE(blob);
      const kestrel::Mat& m = want[blob];
      const float scale = scales.at(blob);
      const float low = std::string(blob) == "cat" ? -127.5f : -0.5f;
      size_t not_bytes = 0, n = 0;
      for (int q = 0; q < m.c; ++q) {
        for (int i = 0; i < m.w * m.h; ++i, ++n) {
          const float y = m.channel(q)[i] * scale;
          not_bytes += !(std::fabs(y - std::nearbyint(y)) < 1e-3f && y > low && y < 127.5f);
        }
      }
      CHECK(n > 0);
      CHECK(not_bytes == 0);
    }
    // The pooled values from the sum's bytes: their maximum and their mean, requantized.
    const kestrel::Mat& s = want["sum"];
    const kestrel::Mat& gmp = want["gmp"];
    const kestrel::Mat& gap = want["gap"];
    REQUIRE(gmp.c == s.c);
    for (int q = 0; q < s.c; ++q) {
      CAPTURE(q);
      float top = -1.f;
      double mean = 0.0;
      for (int i = 0; i < s.w * s.h; ++i) top = std::max(top, s.channel(q)[i]), mean += s.channel(q)[i];
      mean /= s.w * s.h;
      // The test input is not the calibration one: a value past the scale's range saturates.
      const auto steps = [](float y, double x, float scale) {
        return std::fabs(y * scale - std::clamp(x * scale, -127.0, 127.0));
      };
      CHECK(steps(gmp.channel(q)[0], top, scales.at("gmp")) < 0.5 + 1e-3);
      CHECK(steps(gap.channel(q)[0], mean, scales.at("gap")) < 0.5 + 1e-3);
    }
    const kestrel::Mat fp32_maps = run(kestrel::KernelSet::kReference, 1, false, "head");
    const double e = kt::relative_error(want["head"], fp32_maps);
    MESSAGE("head relative to fp32 maps: " << e);
    CHECK(e > 0.0);
    CHECK(e < 0.1);
  }
}
