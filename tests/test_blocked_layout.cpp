// Blocked feature maps at load (Option::blocked_layout): a MobileNet-like 14x14 chain
// (see chain_net) with a blob two convolutions read and two blobs an Eltwise reads must
// give the planar bits for every blob (the output with every memory strategy) at 1 and
// 3 threads; the maps between the x86 channel kernels must in fact be blocked there, and
// extract() of one must hand out a planar copy.
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "test_util.h"

namespace {

using kestrel::ModelBuilder;

bool x86_fast() {
  const kestrel::kernels::Isa isa = kestrel::kernels::active_isa();
  return isa == kestrel::kernels::Isa::kAvx2 || isa == kestrel::kernels::Isa::kAvx512;
}

// data [256,14,14] -> pw1 (256) -> dw1 -> {pw2, pw2b} (256 each) -> sum (Eltwise) -> dw2
// (stride 2, 7x7) -> pw3 (96) -> dw3 -> pw4 (80) -> out. On x86 pw1's and dw1's outputs
// are blocked (dw1's read by two convolutions), pw2's and pw2b's stay planar for the
// Eltwise, dw2's is blocked into pw3, and dw3 (a 7x7 map: the flat kernel) keeps its
// neighbours planar.
ModelBuilder chain_net() {
  ModelBuilder b;
  b.add_input("data", {256, 14, 14});
  kt::add_conv(b, "pw1", "data", 256, 256, 1, 3);
  kt::add_depthwise(b, "dw1", "pw1", 256, 1, 5);
  kt::add_conv(b, "pw2", "dw1", 256, 256, 1, 9);
  kt::add_conv(b, "pw2b", "dw1", 256, 256, 1, 13);
  kestrel::fb::EltwiseParamT e;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(e));
  b.add_layer("Eltwise", "sum", {"pw2", "pw2b"}, {"sum"}, std::move(u), {});
  kt::add_depthwise(b, "dw2", "sum", 256, 2, 11);
  kt::add_conv(b, "pw3", "dw2", 256, 96, 1, 15);
  kt::add_depthwise(b, "dw3", "pw3", 96, 1, 17);
  kt::add_conv(b, "pw4", "dw3", 96, 80, 1, 19);
  b.add_output("pw4");
  return b;
}

struct Run {
  kestrel::Mat out;
  std::vector<std::string> kernels;  // per layer run, as the observer saw them
};

Run run(const ModelBuilder& b, bool blocked, int threads, kestrel::MemoryStrategy memory, const std::string& blob) {
  kestrel::Net net;
  net.option().blocked_layout = blocked;
  net.option().fuse_layers = false;  // every blob stays extractable
  kestrel::Status s = kt::load(net, b);
  REQUIRE_MESSAGE(s.ok(), s.message());
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  ex.set_memory_strategy(memory);
  Run r;
  ex.set_observer([&](const kestrel::LayerEvent& ev) { r.kernels.push_back(ev.kernel); });
  REQUIRE(ex.input("data", kt::random_input(net, "data", 21)).ok());
  s = ex.extract(blob, r.out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  REQUIRE(r.out.elempack == 1);
  r.out = r.out.clone();
  return r;
}

}  // namespace

TEST_SUITE("networks") {
  TEST_CASE("blocked feature maps give the planar bits") {
    const ModelBuilder b = chain_net();
    int blocked_kernels = 0;
    for (const char* blob : {"pw4", "pw1", "dw1", "pw2", "sum", "dw2", "pw3", "dw3"}) {
      const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
      // Every memory strategy for the network's output, the pool for the others.
      std::vector<kestrel::MemoryStrategy> strategies{kestrel::MemoryStrategy::kPool};
      if (std::string(blob) == "pw4") strategies = {kestrel::MemoryStrategy::kPool, kestrel::MemoryStrategy::kPlan,
                                                   kestrel::MemoryStrategy::kNone};
      for (kestrel::MemoryStrategy m : strategies) {
        for (int threads : {1, 3}) {
          INFO(std::string(blob) << ", memory " << int(m) << ", " << threads << " threads");
          const Run got = run(b, true, threads, m, blob);
          CHECK(kt::same_bits(got.out, want));
          for (const std::string& k : got.kernels) blocked_kernels += k.find('[') != std::string::npos;
        }
      }
    }
    // The re-targeted kernels' names say "[in>out]"; none on the reference and ARM kernels.
    if (x86_fast()) {
      CHECK(blocked_kernels > 0);
    } else {
      CHECK(blocked_kernels == 0);
    }
  }
}
