// int8 weights in the model (kestrel.fbs Weight dtype I8 with a scale a row, written by
// kestrel-quantize: converter/quantize/int8_weights.h): int8 inference gives the bits of
// the same model with fp32 weights, an fp32 run reads q / scale, the file holds a quarter
// of the bytes, and a bad I8 weight is refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/i8_reference.h"
#include "kestrel/net.h"
#include "kestrel_generated.h"
#include "mat_util.h"
#include "quantize/calibrate_model.h"
#include "quantize/int8_weights.h"
#include "test_util.h"

namespace q = kestrel::quantize;
namespace fb = kestrel::fb;

namespace {

// data -> conv a (3x3) -> ReLU -> conv c (1x1) -> InnerProduct g; channels that are no
// multiple of a vector.
std::string small_net() {
  kestrel::ModelBuilder b;
  b.add_input("data", {5, 9, 11});
  kt::add_conv(b, "a", "data", 5, 7);
  b.add_layer("Activation", "r", {"a"}, {"r"}, kt::relu_params());
  kt::add_conv(b, "c", "r", 7, 13, 1);
  kt::add_inner_product(b, "g", "c", 10, 13 * 9 * 11, 29);
  b.add_output("g");
  const std::vector<uint8_t> raw = b.serialize();
  return std::string(raw.begin(), raw.end());
}

std::string calibrated(const std::string& bytes, std::vector<kestrel::Mat>* inputs) {
  kestrel::Net fp32;
  REQUIRE(fp32.load(bytes.data(), bytes.size()).ok());
  for (uint32_t seed = 1; seed <= 3; ++seed) inputs->push_back(kt::random_input(fp32, "data", seed));
  const q::InputSource source = [&](size_t i, std::map<std::string, kestrel::Mat>* in) {
    (*in)["data"] = (*inputs)[i];
    return kestrel::Status::Ok();
  };
  q::CalibrationOptions opt;
  opt.method = q::Method::kMinMax;
  std::string out;
  REQUIRE(q::calibrate(bytes, inputs->size(), source, opt, &out, nullptr).ok());
  return out;
}

std::string pack(const fb::ModelT& m) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::Model::Pack(fbb, &m), fb::ModelIdentifier());
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

kestrel::Mat run(const std::string& model, kestrel::Precision p, kestrel::KernelSet kernels, int threads,
                 const kestrel::Mat& in, size_t* weight_bytes = nullptr) {
  kestrel::Net net;
  net.option().precision = p;
  net.option().kernels = kernels;
  const kestrel::Status s = net.load(model.data(), model.size());
  INFO(s.message());
  REQUIRE(s.ok());
  if (weight_bytes) *weight_bytes = net.weight_bytes();
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat m;
  REQUIRE(ex.extract("g", m).ok());
  return m.clone();
}

}  // namespace

TEST_SUITE("quantize") {
  TEST_CASE("int8 weights: the int8 layers' weights stored I8, the same int8 bits, fp32 reads q / scale") {
    const std::string bytes = small_net();
    std::vector<kestrel::Mat> inputs;
    const std::string fp32w = calibrated(bytes, &inputs);
    std::string i8w;
    std::vector<std::string> layers;
    const kestrel::Status st = q::store_int8_weights(fp32w, &i8w, &layers);
    INFO(st.message());
    REQUIRE(st.ok());
    CHECK(layers == std::vector<std::string>{"a", "c", "g"});
    // Each converted weight: a byte a value, quantize_rows_i8's values and scales.
    const fb::Model* before = fb::GetModel(fp32w.data());
    const fb::Model* after = fb::GetModel(i8w.data());
    size_t converted = 0;
    for (flatbuffers::uoffset_t i = 0; i < after->weights()->size(); ++i) {
      const fb::Weight* w = after->weights()->Get(i);
      const fb::Weight* f = before->weights()->Get(i);
      if (w->dtype() != fb::DType::I8) {
        CHECK(w->data()->size() == f->data()->size());
        continue;
      }
      ++converted;
      const size_t count = f->data()->size() / sizeof(float), rows = static_cast<size_t>(w->shape()->Get(0));
      CHECK(w->data()->size() == count);
      REQUIRE(w->scales()->size() == rows);
      std::vector<int8_t> want(count);
      std::vector<float> scales(rows);
      kestrel::kernels::quantize_rows_i8(reinterpret_cast<const float*>(f->data()->data()), rows, count / rows,
                                         want.data(), scales.data());
      CHECK(std::memcmp(want.data(), w->data()->data(), count) == 0);
      CHECK(std::memcmp(scales.data(), w->scales()->data(), rows * sizeof(float)) == 0);
    }
    CHECK(converted == 3);
    // The whole file: the biases stay fp32; the kernel weights take a quarter.
    CHECK(i8w.size() < fp32w.size() / 2);

    // int8: the same bits either way, both kernel sets, 1 and 3 threads; the Net holds
    // no more weight bytes.
    for (kestrel::KernelSet kernels : {kestrel::KernelSet::kFast, kestrel::KernelSet::kReference}) {
      for (int threads : {1, 3}) {
        CAPTURE(threads);
        size_t held_f = 0, held_i = 0;
        const kestrel::Mat want = run(fp32w, kestrel::Precision::kInt8, kernels, threads, inputs[0], &held_f);
        const kestrel::Mat got = run(i8w, kestrel::Precision::kInt8, kernels, threads, inputs[0], &held_i);
        CHECK(kt::same_bits(want, got));
        CHECK(held_i <= held_f);
      }
    }
    // fp32: the model with its weights replaced by q / scale as floats, bit for bit.
    std::unique_ptr<fb::ModelT> deq(fb::GetModel(i8w.data())->UnPack());
    for (auto& w : deq->weights) {
      if (w->dtype != fb::DType::I8) continue;
      const size_t rows = static_cast<size_t>(w->shape[0]), count = w->data.size();
      std::vector<float> f(count);
      kestrel::kernels::dequantize_rows_i8(reinterpret_cast<const int8_t*>(w->data.data()), w->scales.data(), rows,
                                           count / rows, f.data());
      for (size_t k = 0; k < count; ++k) CHECK(f[k] * w->scales[k / (count / rows)] == doctest::Approx(static_cast<int8_t>(w->data[k])));
      w->dtype = fb::DType::F32;
      w->scales.clear();
      w->data.assign(reinterpret_cast<const uint8_t*>(f.data()), reinterpret_cast<const uint8_t*>(f.data() + count));
    }
    const std::string deq_bytes = pack(*deq);
    for (kestrel::KernelSet kernels : {kestrel::KernelSet::kFast, kestrel::KernelSet::kReference}) {
      CHECK(kt::same_bits(run(deq_bytes, kestrel::Precision::kFp32, kernels, 1, inputs[1]),
                          run(i8w, kestrel::Precision::kFp32, kernels, 1, inputs[1])));
      CHECK(kt::same_bits(run(deq_bytes, kestrel::Precision::kFp16, kernels, 1, inputs[1]),
                          run(i8w, kestrel::Precision::kFp16, kernels, 1, inputs[1])));
    }
  }

  TEST_CASE("int8 weights: a layer kept in fp32 keeps its fp32 weights") {
    const std::string bytes = small_net();
    std::vector<kestrel::Mat> inputs;
    kestrel::Net fp32;
    REQUIRE(fp32.load(bytes.data(), bytes.size()).ok());
    inputs.push_back(kt::random_input(fp32, "data", 1));
    const q::InputSource source = [&](size_t, std::map<std::string, kestrel::Mat>* in) {
      (*in)["data"] = inputs[0];
      return kestrel::Status::Ok();
    };
    q::CalibrationOptions opt;
    opt.keep_fp32 = {"c"};
    std::string cal, out;
    REQUIRE(q::calibrate(bytes, 1, source, opt, &cal, nullptr).ok());
    std::vector<std::string> layers;
    REQUIRE(q::store_int8_weights(cal, &out, &layers).ok());
    CHECK(layers == std::vector<std::string>{"a", "g"});
  }
}

TEST_SUITE("format") {
  TEST_CASE("int8 weights: a bad I8 weight is refused by name, and the Net keeps its model") {
    const std::string bytes = small_net();
    std::unique_ptr<fb::ModelT> good(fb::GetModel(bytes.data())->UnPack());
    // Weight 0 (a/w, 7 rows) as I8.
    fb::WeightT& w0 = *good->weights[0];
    const size_t count = w0.data.size() / sizeof(float), rows = 7;
    std::vector<int8_t> qv(count);
    std::vector<float> scales(rows);
    kestrel::kernels::quantize_rows_i8(reinterpret_cast<const float*>(w0.data.data()), rows, count / rows, qv.data(),
                                       scales.data());
    w0.dtype = fb::DType::I8;
    w0.data.assign(reinterpret_cast<const uint8_t*>(qv.data()), reinterpret_cast<const uint8_t*>(qv.data()) + count);
    w0.scales = scales;
    const std::string ok = pack(*good);
    kestrel::Net net;
    REQUIRE(net.load(ok.data(), ok.size()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 4);
    const kestrel::Mat want = run(ok, kestrel::Precision::kFp32, kestrel::KernelSet::kFast, 1, in);

    struct Case {
      const char* what;
      void (*edit)(fb::ModelT&);
      const char* message;
    };
    const Case cases[] = {
        {"no scales", [](fb::ModelT& m) { m.weights[0]->scales.clear(); }, "needs 7 scales (one a row), has 0"},
        {"a scale short", [](fb::ModelT& m) { m.weights[0]->scales.pop_back(); }, "needs 7 scales (one a row), has 6"},
        {"a zero scale", [](fb::ModelT& m) { m.weights[0]->scales[3] = 0.f; }, "int8 scale of row 3 is 0"},
        {"a NaN scale",
         [](fb::ModelT& m) { m.weights[0]->scales[0] = std::numeric_limits<float>::quiet_NaN(); },
         "int8 scale of row 0 is nan"},
        {"an infinite scale",
         [](fb::ModelT& m) { m.weights[0]->scales[6] = INFINITY; },
         "int8 scale of row 6 is inf"},
        {"a byte short", [](fb::ModelT& m) { m.weights[0]->data.pop_back(); }, "int8 values"},
        {"scales on fp32", [](fb::ModelT& m) { m.weights[1]->scales = {1.f}; }, "scales on a F32 weight"},
        {"no rows", [](fb::ModelT& m) { m.weights[0]->shape.clear(); }, "shape"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      std::unique_ptr<fb::ModelT> m(fb::GetModel(ok.data())->UnPack());
      c.edit(*m);
      const std::string bad = pack(*m);
      const kestrel::Status s = net.load(bad.data(), bad.size());
      INFO(s.message());
      CHECK(s.code() == kestrel::ErrorCode::kCorruptModel);
      CHECK(s.message().find(c.message) != std::string::npos);
      CHECK(s.message().find("weight #") != std::string::npos);  // named: "weight #0 'a/w'"
      // The previous model still runs.
      kestrel::Extractor ex = net.create_extractor();
      REQUIRE(ex.input("data", in).ok());
      kestrel::Mat got;
      REQUIRE(ex.extract("g", got).ok());
      CHECK(kt::same_bits(want, got));
    }
  }
}
