// HalfConvert, the layer the Net puts between fp32 maps and maps of halves
// (core/net_half.cpp): every layout pair (planar, blocked by 4 and 8) in both
// directions, values rounded to the nearest half and widened exactly, 1 and 3 threads.
// It runs on every CPU (the half kernels of the active ISA), though the Net inserts it
// only where the CPU has fp16 arithmetic.
#include <cstdint>
#include <vector>

#include "core/half.h"
#include "layers/layers.h"
#include "test_util.h"

namespace {

// Real channel k's value at pixel i of a Mat in any layout, widened if halves.
float value(const kestrel::Mat& m, int k, size_t i) {
  const size_t at = i * m.elempack + k % m.elempack;
  if (m.f16) return kestrel::half_to_float(reinterpret_cast<const uint16_t*>(m.channel(k / m.elempack))[at]);
  return m.channel(k / m.elempack)[at];
}

kestrel::Mat run(kestrel::Layer& layer, const kestrel::Mat& in, int threads) {
  std::vector<kestrel::Shape> out_shape(1);
  REQUIRE(layer.prepare({in.shape()}, out_shape, kestrel::PrepareContext{}).ok());
  kestrel::Mat out, scratch;
  REQUIRE(out.create(out_shape[0]));
  const size_t stride = (layer.workspace_per_thread_bytes + 63) / 64 * 64;
  REQUIRE(scratch.create(kestrel::Shape::make1(static_cast<int>(stride * threads / 4 + 16))));
  kestrel::ForwardContext ctx;
  ctx.num_threads = threads;
  ctx.thread_scratch = reinterpret_cast<char*>(scratch.data);
  ctx.thread_scratch_stride = stride;
  std::vector<kestrel::Mat> outs = {out};
  REQUIRE(layer.forward({in}, outs, ctx).ok());
  return out;
}

}  // namespace

TEST_SUITE("layers") {
  TEST_CASE("HalfConvert: fp32 <-> halves in every layout pair, rounded to nearest even") {
    for (int from : {1, 4, 8}) {
      for (int to : {1, 4, 8}) {
        for (int threads : {1, 3}) {
          INFO("pack " << from << " -> " << to << ", threads " << threads);
          const int channels = 24, w = 5, h = 3;
          kestrel::Mat planar = kt::random_mat(kestrel::Shape::make3(w, h, channels), 17);
          // Ties and the edges of the range, where rounding has a choice to make.
          planar.channel(0)[0] = 1.f + 1.f / 2048;   // halfway between two halves: to even
          planar.channel(0)[1] = 70000.f;            // beyond 65504: infinity
          planar.channel(0)[2] = -0.f;
          planar.channel(0)[3] = 1e-8f;              // below the smallest subnormal half's half
          const kestrel::Mat f32 = kestrel::convert_packing(planar, from);
          REQUIRE(f32.data != nullptr);
          std::unique_ptr<kestrel::Layer> to_half = kestrel::create_half_convert_layer(true, to);
          const kestrel::Mat half = run(*to_half, f32, threads);
          CHECK(half.f16);
          CHECK(half.elempack == to);
          CHECK(half.c * half.elempack == channels);
          for (int k = 0; k < channels; ++k) {
            for (size_t i = 0; i < size_t(w) * h; ++i) {
              const uint16_t want = kestrel::float_to_half(planar.channel(k)[i]);
              const float got = value(half, k, i);
              CHECK(kestrel::float_to_half(got) == want);
            }
          }
          // And back, from the halves' layout into `from`: exact.
          std::unique_ptr<kestrel::Layer> to_float = kestrel::create_half_convert_layer(false, from);
          const kestrel::Mat back = run(*to_float, half, threads);
          CHECK_FALSE(back.f16);
          CHECK(back.elempack == from);
          for (int k = 0; k < channels; ++k) {
            for (size_t i = 0; i < size_t(w) * h; ++i) {
              CHECK(kestrel::float_to_half(value(back, k, i)) == kestrel::float_to_half(planar.channel(k)[i]));
              CHECK(value(back, k, i) == kestrel::half_to_float(kestrel::float_to_half(value(back, k, i))));
            }
          }
        }
      }
    }
  }

  TEST_CASE("HalfConvert refuses a map already in its target type and channels that do not fill blocks") {
    std::unique_ptr<kestrel::Layer> to_half = kestrel::create_half_convert_layer(true, 8);
    std::vector<kestrel::Shape> out(1);
    kestrel::Shape s = kestrel::Shape::make3(4, 4, 12);
    CHECK_FALSE(to_half->prepare({s}, out, kestrel::PrepareContext{}).ok());  // 12 channels, blocks of 8
    s.c = 16;
    s.f16 = true;
    CHECK_FALSE(to_half->prepare({s}, out, kestrel::PrepareContext{}).ok());  // halves already
    s.f16 = false;
    CHECK(to_half->prepare({s}, out, kestrel::PrepareContext{}).ok());
  }
}
