// A model loaded from a file gives back the pages of the weights its kernels packed
// (core/weight_release.h): the results stay those of the same bytes loaded from
// memory, where nothing is given back, including where the layout pass packs a layer
// again from pages already given back; weight_bytes() counts what is held.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/half.h"
#include "kernels/isa.h"
#include "kestrel/model_zoo.h"
#include "mat_util.h"
#include "test_util.h"

namespace {

std::string write_temp(const std::vector<uint8_t>& bytes, const char* name) {
  const std::string path = "/tmp/kestrel_test_" + std::to_string(getpid()) + "_" + name;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
  return path;
}

kestrel::Mat run(const kestrel::Net& net, const kestrel::Mat& in, int threads) {
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat out;
  REQUIRE(ex.extract("prob", out).ok());
  return out;
}

// MobileNet v1 with every weight rounded to a half and stored as F16.
std::vector<uint8_t> as_f16(kestrel::ModelBuilder b) {
  for (auto& w : b.model().weights) {
    std::vector<uint16_t> h(w->data.size() / sizeof(float));
    for (size_t k = 0; k < h.size(); ++k) {
      float v;
      std::memcpy(&v, w->data.data() + k * sizeof v, sizeof v);
      h[k] = kestrel::float_to_half(v);
    }
    w->dtype = kestrel::fb::DType::F16;
    w->data.assign(reinterpret_cast<const uint8_t*>(h.data()), reinterpret_cast<const uint8_t*>(h.data() + h.size()));
  }
  return b.serialize();
}

}  // namespace

TEST_SUITE("format") {
  TEST_CASE("a mapped model gives back its packed-away weights; results unchanged") {
    const kestrel::ModelBuilder zoo = kestrel::mobilenet_v1({7, 64});
    const std::vector<uint8_t> f32 = zoo.serialize(), f16 = as_f16(zoo);
    const std::string p32 = write_temp(f32, "release32.kst"), p16 = write_temp(f16, "release16.kst");
    for (const auto* model : {&f32, &f16}) {
      const bool half = model == &f16;
      const std::string& path = half ? p16 : p32;
      for (kestrel::KernelSet kernels : {kestrel::KernelSet::kFast, kestrel::KernelSet::kReference}) {
        // Blocked layouts pack 1x1 layers a second time, after their first packing's
        // pages were given back.
        for (bool blocked : {true, false}) {
          INFO((std::string(half ? "F16" : "F32") + (kernels == kestrel::KernelSet::kFast ? " fast" : " reference") +
                (blocked ? " blocked" : " planar")));
          kestrel::Net from_file, from_memory;
          for (kestrel::Net* n : {&from_file, &from_memory}) {
            n->option().kernels = kernels;
            n->option().blocked_layout = blocked;
          }
          REQUIRE(from_file.load(path).ok());
          REQUIRE(kt::load_bytes(from_memory, *model).ok());
          const kestrel::Mat in = kt::random_input(from_file, "data", 3);
          for (int threads : {1, 3}) {
            CHECK(kt::same_bits(run(from_file, in, threads), run(from_memory, in, threads)));
          }
          const size_t stored = from_file.model_weight_bytes();
          const size_t wide = half ? 2 * stored : stored;  // the fp32 values the layers read
          CHECK(from_memory.model_weight_bytes() == stored);
          if (kernels == kestrel::KernelSet::kReference) {
            // The reference code reads every weight in place, F16 kernel weights as
            // halves (an F16 bias is widened: a few floats).
            CHECK(from_file.weight_bytes() >= stored);
            CHECK(from_file.weight_bytes() <= stored + stored / 100);
          } else if (!half) {
            // Packed copies only (with some padding): the file's pages went back.
            CHECK(from_file.weight_bytes() >= wide);
            CHECK(from_file.weight_bytes() <= wide + wide / 20);
          } else {
            // F16 weights: packed as floats (at most their fp32 bytes, and no fp32 copy
            // kept beside them), or as halves by the x86 half-weight kernels, which
            // take MobileNet's 1x1 layers and classifier where the maps are blocked.
            CHECK(from_file.weight_bytes() >= stored);
            CHECK(from_file.weight_bytes() <= wide + wide / 20);
            // The aarch64 ones (pack4 1x1 and im2col, GEMV) likewise.
            if (blocked && kestrel::kernels::active_isa() != kestrel::kernels::Isa::kRef) {
              CHECK(from_file.weight_bytes() <= stored + stored / 10);
            }
            // A copied buffer is held whole beside the packed copies; without fast
            // kernels (armv7) the layers read the halves in it in place.
            if (kestrel::kernels::active_isa() != kestrel::kernels::Isa::kRef) {
              CHECK(from_memory.weight_bytes() >= from_file.weight_bytes() + stored);
            } else {
              CHECK(from_memory.weight_bytes() <= stored + stored / 100);
            }
          }
        }
      }
    }
    std::remove(p32.c_str());
    std::remove(p16.c_str());
  }
}
