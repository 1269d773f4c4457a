// kestrel-convert --weights: fp16 storage from an import and from an existing .kst,
// back to fp32, and the values fp16 weights refuse (a clear error, no output file).
#include <cmath>
#include <limits>

#include "caffe_test_util.h"

using namespace ct;

namespace {

std::vector<float> run_small(const std::string& model) {
  kestrel::Net net;
  REQUIRE_MESSAGE(net.load(model).ok(), model);
  kestrel::Extractor ex = net.create_extractor();
  kestrel::Shape s;
  REQUIRE(net.input_shape("data", &s).ok());
  const kestrel::Mat x = kt::random_mat(s, 3);
  REQUIRE(ex.input("data", x).ok());
  kestrel::Mat y;
  REQUIRE(ex.extract("fc1", y).ok());
  return std::vector<float>(y.data, y.data + y.total());
}

size_t model_weight_bytes(const std::string& model) {
  kestrel::Net net;
  REQUIRE(net.load(model).ok());
  return net.model_weight_bytes();
}

}  // namespace

TEST_SUITE("caffe") {
  TEST_CASE("kestrel-convert --weights fp16 halves the weights; kst rewrites agree both ways") {
    if (!cases_dir()) return;
    const std::string dir = work_dir("convert_weights");
    const std::string proto = dir + "small.prototxt", caffemodel = dir + "small.caffemodel";
    write_text(proto, kSmallNet);
    write_small_model(caffemodel, SmallModel());
    const std::string pair = "caffe " + quoted(proto) + " " + quoted(caffemodel) + " ";
    const std::string f32 = dir + "f32.kst", f16 = dir + "f16.kst", k16 = dir + "k16.kst", k32 = dir + "k32.kst";
    RunResult r = run_convert(pair + quoted(f32), dir + "f32.log");
    REQUIRE_MESSAGE(r.rc == 0, r.log);
    r = run_convert(pair + quoted(f16) + " --weights fp16", dir + "f16.log");
    REQUIRE_MESSAGE(r.rc == 0, r.log);
    r = run_convert("kst " + quoted(f32) + " " + quoted(k16) + " --weights fp16", dir + "k16.log");
    REQUIRE_MESSAGE(r.rc == 0, r.log);
    r = run_convert("kst " + quoted(k16) + " " + quoted(k32) + " --weights fp32", dir + "k32.log");
    REQUIRE_MESSAGE(r.rc == 0, r.log);

    const size_t b32 = model_weight_bytes(f32);
    CHECK(b32 > 0);
    CHECK(model_weight_bytes(f16) * 2 == b32);
    CHECK(model_weight_bytes(k16) * 2 == b32);
    CHECK(model_weight_bytes(k32) == b32);
    // Rounding at import and rounding the fp32 file give the same halves; widened back
    // to fp32 they compute the same values.
    const std::vector<float> y32 = run_small(f32), y16 = run_small(f16);
    CHECK(y16 == run_small(k16));
    CHECK(y16 == run_small(k32));
    // The test weights are multiples of 0.01: fp16 keeps them to 2^-11 relative.
    REQUIRE(y32.size() == y16.size());
    for (size_t i = 0; i < y32.size(); ++i) CHECK(std::fabs(y16[i] - y32[i]) <= 2e-3f * (1.f + std::fabs(y32[i])));
  }

  TEST_CASE("kestrel-convert --weights fp16 refuses NaN, infinite and out-of-range weights") {
    if (!cases_dir()) return;
    const std::string dir = work_dir("convert_weights_bad");
    const std::string proto = dir + "small.prototxt";
    write_text(proto, kSmallNet);
    const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                                70000.f};
    int k = 0;
    for (float v : bad_values) {
      const std::string caffemodel = dir + "bad" + std::to_string(k) + ".caffemodel";
      SmallModel sm;
      sm.fc_w_first = v;
      write_small_model(caffemodel, sm);
      const std::string out = dir + "bad" + std::to_string(k) + ".kst";
      RunResult r = run_convert("caffe " + quoted(proto) + " " + quoted(caffemodel) + " " + quoted(out) +
                                    " --weights fp16",
                                dir + "bad" + std::to_string(k) + ".log");
      INFO("value " << v << ": " << r.log);
      CHECK(r.rc == 1);
      CHECK(r.log.find("fc1") != std::string::npos);
      CHECK(r.log.find("fp16") != std::string::npos);
      CHECK(!fs::exists(out));
      CHECK(!fs::exists(out + ".tmp"));
      // The same model stored fp32 converts, and its .kst refuses the rewrite the same way.
      const std::string f32 = dir + "ok" + std::to_string(k) + ".kst";
      r = run_convert("caffe " + quoted(proto) + " " + quoted(caffemodel) + " " + quoted(f32),
                      dir + "ok" + std::to_string(k) + ".log");
      REQUIRE_MESSAGE(r.rc == 0, r.log);
      r = run_convert("kst " + quoted(f32) + " " + quoted(out) + " --weights fp16", dir + "kst_bad.log");
      CHECK(r.rc == 1);
      CHECK(r.log.find("fp16") != std::string::npos);
      CHECK(!fs::exists(out));
      ++k;
    }
    // A value --weights does not know is a usage error.
    const RunResult r = run_convert("kst " + quoted(dir + "ok0.kst") + " " + quoted(dir + "x.kst") + " --weights bf8",
                                    dir + "usage.log");
    CHECK(r.rc == 2);
    CHECK(r.log.find("--weights") != std::string::npos);
  }
}
