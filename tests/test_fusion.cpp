// Layer fusion at load (Option::fuse_layers): a fused pointwise -> depthwise pair must
// give the bits the two layers give (same kernels, same summation order), on maps that
// take one band and maps split into bands (halo rows carried between bands, bands
// spread over threads, an uneven split with 3), and the blob it absorbs must be
// reported, not silently missing.
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "test_util.h"

namespace {

using kestrel::ModelBuilder;

// Fusion exists for the x86 kernels only (kernels/conv_fusion.cpp).
bool fuses_here() {
  const kestrel::kernels::Isa isa = kestrel::kernels::active_isa();
  return isa == kestrel::kernels::Isa::kAvx2 || isa == kestrel::kernels::Isa::kAvx512;
}

// data [c, h, w] -> pw1 -> dw1 (stride s1) -> pw2 -> dw2 (stride s2) -> out
ModelBuilder pair_net(int c, int h, int w, int c1, int s1, int c2, int s2) {
  ModelBuilder b;
  b.add_input("data", {c, h, w});
  kt::add_conv(b, "pw1", "data", c, c1, 1, 3);
  kt::add_depthwise(b, "dw1", "pw1", c1, s1, 5);
  kt::add_conv(b, "pw2", "dw1", c1, c2, 1, 9);
  kt::add_depthwise(b, "dw2", "pw2", c2, s2, 11);
  b.add_output("dw2");
  return b;
}

kestrel::Mat run(const ModelBuilder& b, bool fuse, int threads, const std::string& blob = "dw2") {
  kestrel::Net net;
  net.option().fuse_layers = fuse;
  net.option().blocked_layout = false;  // a blocked pair is not fused (tests/test_blocked_layout.cpp)
  kestrel::Status s = kt::load(net, b);
  REQUIRE_MESSAGE(s.ok(), s.message());
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  REQUIRE(ex.input("data", kt::random_input(net, "data", 17)).ok());
  kestrel::Mat out;
  s = ex.extract(blob, out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return out.clone();
}

// Whether a Net loaded with fusion on keeps `blob`.
bool stored(const ModelBuilder& b, const std::string& blob) {
  kestrel::Net net;
  net.option().blocked_layout = false;
  REQUIRE(kt::load(net, b).ok());
  kestrel::Extractor ex = net.create_extractor();
  REQUIRE(ex.input("data", kt::random_input(net, "data", 17)).ok());
  kestrel::Mat m;
  return ex.extract(blob, m).ok();
}

}  // namespace

TEST_SUITE("fusion") {
  TEST_CASE("fused pointwise -> depthwise pairs give the unfused bits") {
    struct Case {
      const char* what;
      int c, h, w, c1, s1, c2, s2;
    };
    // pw1's output: 150x130x32 floats = 2.5 MB and 161x97x48 = 3.0 MB (bands), 14x14x40
    // and 9x13x17 (one band); pw2's: 1.2 MB (left unfused), 7x7x24, 5x7x33.
    const Case cases[] = {{"banded, stride 1", 8, 150, 130, 32, 1, 16, 2},
                          {"banded, stride 2", 4, 161, 97, 48, 2, 8, 1},
                          {"one band", 16, 14, 14, 40, 1, 24, 2},
                          {"one band, odd", 3, 9, 13, 17, 2, 33, 1}};
    for (const Case& k : cases) {
      const ModelBuilder b = pair_net(k.c, k.h, k.w, k.c1, k.s1, k.c2, k.s2);
      const kestrel::Mat want = run(b, false, 1);
      INFO(k.what);
      CHECK(stored(b, "pw1") != fuses_here());
      for (int threads : {1, 2, 3}) {
        INFO(k.what << ", " << threads << " threads");
        CHECK(kt::same_bits(run(b, true, threads), want));
      }
    }
  }

  TEST_CASE("the blob a fusion absorbs is reported by name, and kept with fuse_layers off") {
    const ModelBuilder b = pair_net(16, 14, 14, 40, 1, 24, 2);
    kestrel::Net net;
    net.option().blocked_layout = false;
    REQUIRE(kt::load(net, b).ok());
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", kt::random_input(net, "data", 17)).ok());
    kestrel::Mat m;
    const kestrel::Status s = ex.extract("pw1", m);
    if (fuses_here()) {
      CHECK(s.code() == kestrel::ErrorCode::kInvalidArgument);
      CHECK(s.message().find("'pw1'") != std::string::npos);
      CHECK(s.message().find("pw1+dw1") != std::string::npos);
      CHECK(s.message().find("fuse_layers") != std::string::npos);
      // The Extractor stays usable.
      CHECK(ex.extract("dw2", m).ok());
    } else {
      MESSAGE("no fused kernels at this ISA level: every blob is kept");
      CHECK(s.ok());
    }
    const kestrel::Mat kept = run(b, false, 2, "pw1");
    CHECK(kept.c == 40);
  }

  TEST_CASE("MobileNet v1: fused and unfused outputs agree bit for bit") {
    const ModelBuilder b = kestrel::mobilenet_v1();
    const kestrel::Mat want = run(b, false, 1, "prob");
    for (int threads : {1, 2}) {
      INFO(threads << " threads");
      CHECK(kt::same_bits(run(b, true, threads, "prob"), want));
    }
  }
}
