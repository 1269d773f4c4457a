#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "core/half.h"
#include "test_util.h"

namespace {

std::string temp_path(const char* name) {
  return "/tmp/kestrel_test_" + std::to_string(getpid()) + "_" + name;
}

kestrel::Mat run(const kestrel::Net& net, const kestrel::Mat& in, const char* out_name) {
  kestrel::Extractor ex = net.create_extractor();
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat out;
  const kestrel::Status s = ex.extract(out_name, out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return out;
}

}  // namespace

TEST_SUITE("format") {
  TEST_CASE("builder -> file -> Net round trip, from a file, a borrowed and a copied buffer") {
    kestrel::ModelBuilder b = kt::branch_net();
    b.set_metadata("labels", "cat,dog");
    b.set_metadata("task", "classification");
    const std::vector<uint8_t> bytes = b.serialize();
    CHECK(bytes.size() % kestrel::kAlignment == 0);
    const std::string path = temp_path("roundtrip.kst");
    REQUIRE(b.save(path).ok());

    kestrel::Net from_file, borrowed, copied;
    REQUIRE(from_file.load(path).ok());
    // A 64-byte aligned buffer is used in place.
    void* aligned = ::operator new(bytes.size(), std::align_val_t(64));
    std::memcpy(aligned, bytes.data(), bytes.size());
    REQUIRE(borrowed.load(aligned, bytes.size()).ok());
    REQUIRE(kt::load_bytes(copied, bytes).ok());

    const kestrel::Mat in = kt::random_input(from_file, "data", 11);
    const kestrel::Mat a = run(from_file, in, "f");
    CHECK(kt::same_bits(a, run(borrowed, in, "f")));
    CHECK(kt::same_bits(a, run(copied, in, "f")));
    CHECK(a.dims == 3);
    CHECK(a.c == 4);

    CHECK(from_file.input_names() == std::vector<std::string>{"data"});
    CHECK(from_file.output_names() == std::vector<std::string>{"f"});
    kestrel::Shape s;
    REQUIRE(from_file.input_shape("data", &s).ok());
    CHECK(s == kestrel::Shape::make3(8, 8, 4));
    CHECK(from_file.metadata("labels") == "cat,dog");
    CHECK(from_file.metadata("task") == "classification");
    CHECK(from_file.metadata("absent").empty());
    borrowed = kestrel::Net();
    ::operator delete(aligned, std::align_val_t(64));
    std::remove(path.c_str());
  }

  TEST_CASE("weights are 64-byte aligned in the file and used without a copy") {
    const std::vector<uint8_t> bytes = kestrel::mobilenet_v1({3, 32}).serialize();
    const kestrel::fb::Model* m = kestrel::fb::GetModel(bytes.data());
    REQUIRE(m->format_version() == 1);
    size_t total = 0;
    for (const kestrel::fb::Weight* w : *m->weights()) {
      CHECK((w->data()->data() - bytes.data()) % 64 == 0);
      total += w->data()->size();
    }
    kestrel::Net net;
    net.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(kt::load_bytes(net, bytes).ok());
    CHECK(net.model_weight_bytes() == total);
    // Reference kernels read the model's own bytes: no second copy is kept.
    CHECK(net.weight_bytes() <= total + total / 20);
  }

  TEST_CASE("F16 weights load as the fp32 values they hold") {
    // The same network twice: weights rounded to halves, stored as F32 and as F16; an
    // InnerProduct after its convolutions. Both kernel sets: the reference loops read
    // the halves in place (conv_reference_halves, fc_reference_halves).
    kestrel::ModelBuilder f32 = kt::branch_net(), f16 = kt::branch_net();
    for (kestrel::ModelBuilder* b : {&f32, &f16}) {
      kt::add_inner_product(*b, "g", "f", 10, 4 * 8 * 8, 29);
      b->add_output("g");
    }
    size_t halves = 0;
    for (size_t i = 0; i < f32.model().weights.size(); ++i) {
      auto& w32 = *f32.model().weights[i];
      auto& w16 = *f16.model().weights[i];
      std::vector<uint16_t> h(w32.data.size() / sizeof(float));
      for (size_t k = 0; k < h.size(); ++k) {
        float v;
        std::memcpy(&v, w32.data.data() + k * sizeof v, sizeof v);
        h[k] = kestrel::float_to_half(v);
        v = kestrel::half_to_float(h[k]);
        std::memcpy(w32.data.data() + k * sizeof v, &v, sizeof v);
      }
      w16.dtype = kestrel::fb::DType::F16;
      w16.data.assign(reinterpret_cast<const uint8_t*>(h.data()), reinterpret_cast<const uint8_t*>(h.data() + h.size()));
      halves += h.size();
    }
    REQUIRE(halves > 0);
    for (kestrel::KernelSet kernels : {kestrel::KernelSet::kFast, kestrel::KernelSet::kReference}) {
      for (int threads : {1, 3}) {
        INFO((std::string(kernels == kestrel::KernelSet::kFast ? "fast" : "reference") + " kernels, threads " +
              std::to_string(threads)));
        kestrel::Net a, b;
        for (kestrel::Net* n : {&a, &b}) {
          n->option().kernels = kernels;
          n->option().num_threads = threads;
        }
        REQUIRE(kt::load(a, f32).ok());
        REQUIRE(kt::load(b, f16).ok());
        CHECK(b.model_weight_bytes() * 2 == a.model_weight_bytes());
        const kestrel::Mat in = kt::random_input(a, "data", 5);
        CHECK(kt::same_bits(run(a, in, "f"), run(b, in, "f")));
        CHECK(kt::same_bits(run(a, in, "g"), run(b, in, "g")));
        // The reference set holds no fp32 copy of an F16 kernel weight (the biases, a
        // few floats, are widened).
        if (kernels == kestrel::KernelSet::kReference) {
          CHECK(b.weight_bytes() <= b.model_weight_bytes() + b.model_weight_bytes() / 20);
        }
      }
    }
  }

  TEST_CASE("half conversion: rounding, subnormals, overflow, NaN") {
    using kestrel::float_to_half;
    using kestrel::half_to_float;
    CHECK(float_to_half(1.f) == 0x3c00);
    CHECK(float_to_half(-2.f) == 0xc000);
    CHECK(float_to_half(65504.f) == 0x7bff);
    CHECK(float_to_half(65520.f) == 0x7c00);  // rounds up past the largest half
    CHECK(float_to_half(1e-8f) == 0);
    CHECK(float_to_half(5.960464478e-8f) == 0x0001);  // the smallest subnormal
    CHECK(half_to_float(0x0001) == 5.960464478e-8f);
    CHECK(float_to_half(1.f + 1.f / 2048) == 0x3c00);  // a tie goes to even
    CHECK(float_to_half(1.f + 3.f / 2048) == 0x3c02);
    CHECK(half_to_float(0x7c00) == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(half_to_float(float_to_half(std::nanf("")))));
    // Every half survives the round trip.
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const float f = half_to_float(static_cast<uint16_t>(h));
      if (!std::isnan(f)) CHECK_MESSAGE(float_to_half(f) == h, "half " << h);
      CHECK(kestrel::is_exact_half(f));
    }
    CHECK_FALSE(kestrel::is_exact_half(0.1f));
  }

  TEST_CASE("a failed load keeps the previous model") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 5);
    const kestrel::Mat before = run(net, in, "f");
    const std::vector<uint8_t> junk(1000, 0x5a);
    CHECK_FALSE(kt::load_bytes(net, junk).ok());
    CHECK(kt::same_bits(before, run(net, in, "f")));
  }

  TEST_CASE("int8 calibration in the file: scales per blob, the scheme's version; bad ones refused by name") {
    const auto with = [](float scale, uint32_t version) {
      kestrel::ModelBuilder b = kt::branch_net();
      for (auto& blob : b.model().blobs) {
        if (blob->name == "a") blob->int8_scale = scale;
      }
      if (version > 0) {
        b.model().quantization = std::make_unique<kestrel::fb::QuantizationT>();
        b.model().quantization->scheme_version = version;
        b.model().quantization->method = "kl";
      }
      return b;
    };
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 6);
    const kestrel::Mat before = run(net, in, "f");
    {
      kestrel::Net q;
      REQUIRE(kt::load(q, with(12.5f, 1)).ok());
      CHECK(kt::same_bits(before, run(q, in, "f")));  // fp32 runs as before
      // The fields survive the round trip through the file.
      const std::vector<uint8_t> bytes = with(12.5f, 1).serialize();
      const kestrel::fb::Model* m = kestrel::fb::GetModel(bytes.data());
      REQUIRE(m->quantization() != nullptr);
      CHECK(m->quantization()->scheme_version() == 1);
      CHECK(m->quantization()->method()->str() == "kl");
      bool found = false;
      for (const kestrel::fb::Blob* blob : *m->blobs()) found = found || (blob->name()->str() == "a" && blob->int8_scale() == 12.5f);
      CHECK(found);
    }
    const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), -1.f};
    for (float scale : bad) {
      CAPTURE(scale);
      const kestrel::Status s = kt::load(net, with(scale, 1));
      CHECK(s.code() == kestrel::ErrorCode::kCorruptModel);
      CHECK(s.message().find("blob 'a' has int8 scale") != std::string::npos);
    }
    for (uint32_t version : {2u, 0u}) {
      kestrel::ModelBuilder b = with(1.f, 1);
      b.model().quantization->scheme_version = version;
      const kestrel::Status s = kt::load(net, b);
      CAPTURE(s.message());
      CHECK(s.code() == kestrel::ErrorCode::kUnsupported);
      CHECK(s.message().find("int8 scheme version " + std::to_string(version)) != std::string::npos);
    }
    // Every refusal kept the model loaded before.
    CHECK(kt::same_bits(before, run(net, in, "f")));
  }
}
