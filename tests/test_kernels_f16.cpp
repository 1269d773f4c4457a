// The fp16 convolution kernels (ConvKernel::f16: fp16 arithmetic on pack8 halves)
// against the fp16 reference, bit for bit, on edge shapes: channel counts of one to
// eight blocks, widths 1-17, stride 2, every activation they take, with and without
// bias, 1 and 4 threads. They run only where the CPU has fp16 arithmetic (qemu -cpu
// cortex-a76 or max); elsewhere, and with KESTREL_DISABLE=fp16, no geometry selects one.
#include <cstring>
#include <random>
#include <utility>

#include "f16_test_util.h"
#include "kernels/f16_reference.h"
#include "kernels/kernel_context.h"
#include "test_util.h"

namespace {

using kestrel::kernels::ConvGeometry;
using kestrel::kernels::ConvKernel;

constexpr int kLanes = 8;

using kt::block_units;
using kt::f16_kernels;
using kt::from_pack8;
using kt::random_halves;
using kt::to_pack8;

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("fp16 arithmetic: 1x1 pack8 kernels equal the fp16 reference bit for bit") {
    using kestrel::kernels::Feature;
    ConvGeometry probe;
    probe.in_c = probe.out_c = 16;
    probe.in_h = probe.in_w = probe.out_h = probe.out_w = 4;
    probe.in_pack = probe.out_pack = kLanes;
    probe.f16 = true;
    const ConvKernel* chosen = kestrel::kernels::select_conv_kernel(probe, kestrel::kernels::active_isa());
    if (!kestrel::kernels::active_has(Feature::kFp16Arith)) {
      CHECK(chosen == nullptr);
      MESSAGE("no fp16 arithmetic here (" << kestrel::kernels::isa_name(kestrel::kernels::active_isa())
                                           << "): fp16 kernels are not selected");
      return;
    }
    REQUIRE(chosen != nullptr);
    CHECK(chosen->f16);
    std::mt19937 rng(8);
    const kestrel::ActivationSpec acts[] = {
        {kestrel::fb::ActivationType::None, 0.f, 0.f},
        {kestrel::fb::ActivationType::ReLU, 0.f, 0.f},
        {kestrel::fb::ActivationType::Clip, 0.f, 6.f},
        {kestrel::fb::ActivationType::LeakyReLU, 0.1f, 0.f},
    };
    int cases = 0;
    for (const ConvKernel* k : f16_kernels()) {
      if (!k->supports(probe)) continue;  // the other fp16 kernels have tests of their own
      for (int in_c : {8, 16, 24, 64}) {
        for (int out_c : {8, 16, 24, 40}) {
          const std::pair<int, int> sizes[] = {{1, 1}, {1, 7}, {3, 5}, {4, 4}, {7, 7}, {2, 17}};
          for (const auto& hw : sizes) {
            const int h = hw.first, w = hw.second;  // not a structured binding: INFO captures them
            for (int stride : {1, 2}) {
              ConvGeometry g = probe;
              g.in_c = in_c;
              g.out_c = out_c;
              g.in_h = h;
              g.in_w = w;
              g.sh = g.sw = stride;
              g.out_h = (h - 1) / stride + 1;
              g.out_w = (w - 1) / stride + 1;
              g.bias = (cases % 3) != 0;
              g.act = acts[cases % 4];
              ++cases;
              if (!k->supports(g)) {
                FAIL_CHECK(k->name << " declines " << in_c << ">" << out_c << " " << h << "x" << w << " s" << stride);
                continue;
              }
              INFO(k->name << " " << in_c << ">" << out_c << " " << h << "x" << w << " stride " << stride << " act "
                           << static_cast<int>(g.act.type) << " bias " << g.bias);
              const std::vector<float> x = random_halves(static_cast<size_t>(in_c) * h * w, 2.f, rng);
              const std::vector<float> wt = random_halves(static_cast<size_t>(out_c) * in_c, 0.5f, rng);
              const std::vector<float> b = random_halves(out_c, 1.f, rng);
              const int out_plane = g.out_h * g.out_w;
              std::vector<float> want(static_cast<size_t>(out_c) * out_plane);
              kestrel::kernels::conv_reference_f16(g, wt.data(), g.bias ? b.data() : nullptr, x.data(),
                                                   static_cast<size_t>(h) * w, want.data(), out_plane, 1);
              kestrel::Mat packed;
              REQUIRE(packed.create(kestrel::Shape::make1(static_cast<int>(k->packed_floats(g)))));
              k->pack(g, wt.data(), g.bias ? b.data() : nullptr, packed.data);
              const size_t in_cstep = block_units(w, h), out_cstep = block_units(g.out_w, g.out_h);
              const std::vector<uint16_t> xin = to_pack8(x, in_c, h * w, in_cstep);
              for (int threads : {1, 4}) {
                std::vector<uint16_t> y(out_cstep * 2 * (out_c / kLanes) + 64, 0x7e00);
                kestrel::kernels::KernelContext ctx;
                ctx.num_threads = threads;
                k->run(g, packed.data, reinterpret_cast<const float*>(xin.data()), in_cstep,
                       reinterpret_cast<float*>(y.data()), out_cstep, ctx);
                const std::vector<float> got = from_pack8(y, out_c, out_plane, out_cstep);
                CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
              }
            }
          }
        }
      }
    }
    MESSAGE(cases << " fp16 kernel cases");
  }
}
