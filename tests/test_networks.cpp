// Whole networks with the fast kernels against the reference kernels: MobileNet v1
// (224) and MobileNet-SSD (300) from the seeded zoo, every intermediate blob compared,
// so a kernel that is wrong only inside a real network (a geometry the sweeps miss, a
// layout handed between layers) is found at the layer that produced it. Runs on
// whatever kernels this build has (NEON under qemu-aarch64, x86 natively).
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "test_util.h"

namespace {

// Relative to the blob's largest magnitude: errors grow along a network, and Winograd
// rounds more than direct summation (1e-3 per layer), so 1e-3 overall.
constexpr double kNetworkTolerance = 1e-3;

struct BlobValue {
  std::string layer, type, blob;
  kestrel::Mat value;
};

// Every blob but DetectionOutput's: it ranks and suppresses boxes, so a last-bit
// difference in a score can reorder rows; its inputs (every box and score) are compared.
std::vector<BlobValue> run_all(const kestrel::Net& net, const kestrel::ModelBuilder& b, const kestrel::Mat& in,
                               int threads) {
  kestrel::Extractor ex = net.create_extractor();
  ex.set_light_mode(false);
  ex.set_num_threads(threads);
  REQUIRE(ex.input("data", in).ok());
  std::vector<BlobValue> r;
  for (const auto& layer : b.model().layers) {
    if (layer->type == "DetectionOutput") continue;
    for (uint32_t top : layer->tops) {
      BlobValue v{layer->name, layer->type, b.model().blobs[top]->name, {}};
      const kestrel::Status s = ex.extract(v.blob, v.value);
      REQUIRE_MESSAGE(s.ok(), v.blob, ": ", s.message());
      r.push_back(std::move(v));
    }
  }
  return r;
}

void compare_every_blob(const kestrel::ModelBuilder& b) {
  kestrel::Net fast, ref;
  fast.option().kernels = kestrel::KernelSet::kFast;
  fast.option().fuse_layers = false;  // every blob is compared (tests/test_fusion.cpp checks fusion)
  ref.option().kernels = kestrel::KernelSet::kReference;
  kestrel::Status s = kt::load(fast, b);
  REQUIRE_MESSAGE(s.ok(), s.message());
  s = kt::load(ref, b);
  REQUIRE_MESSAGE(s.ok(), s.message());
  MESSAGE("weight bytes: fast " << fast.weight_bytes() << ", reference " << ref.weight_bytes());
  const kestrel::Mat in = kt::random_input(ref, "data", 3);
  const std::vector<BlobValue> want = run_all(ref, b, in, 2);
  CHECK(want.size() > 20);
  for (int threads : kt::kernel_thread_counts()) {
    const std::vector<BlobValue> got = run_all(fast, b, in, threads);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("layer '" << want[i].layer << "' (" << want[i].type << "), blob '" << want[i].blob << "', threads "
                     << threads);
      REQUIRE(got[i].value.shape() == want[i].value.shape());
      const double err = kt::relative_error(got[i].value, want[i].value);
      REQUIRE_MESSAGE(err <= kNetworkTolerance, "relative error " << err);
    }
  }
}

}  // namespace

TEST_SUITE("networks") {
  TEST_CASE("MobileNet v1: fast kernels match the reference blob by blob") {
    compare_every_blob(kestrel::mobilenet_v1());
  }
  TEST_CASE("MobileNet-SSD: fast kernels match the reference blob by blob") {
    compare_every_blob(kestrel::mobilenet_ssd());
  }
}
