// kestrel-quantize --bias-correction (converter/quantize/bias_correction.h): the mean
// error int8 leaves in a layer's output channels is measured as the report says, taken
// off the bias, and kept only where the whole network comes nearer fp32.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kestrel/net.h"
#include "kestrel_generated.h"
#include "quantize/bias_correction.h"
#include "quantize/calibrate_model.h"
#include "calib_util.h"

namespace q = kestrel::quantize;

namespace {

std::vector<float> bias_of(const std::string& model, const std::string& layer) {
  const kestrel::fb::Model* m = kestrel::fb::GetModel(model.data());
  for (const kestrel::fb::Layer* l : *m->layers()) {
    if (l->name()->str() != layer) continue;
    REQUIRE(l->weights()->size() == 2);
    const kestrel::fb::Weight* w = m->weights()->Get(l->weights()->Get(1));
    REQUIRE(w->dtype() == kestrel::fb::DType::F32);
    std::vector<float> v(w->data()->size() / sizeof(float));
    std::memcpy(v.data(), w->data()->data(), w->data()->size());
    return v;
  }
  FAIL("no layer " << layer);
  return {};
}

// Channel c's mean of (int8 - fp32) over the values where fp32 is in (lo, hi).
std::vector<double> mean_error(const std::vector<kestrel::Mat>& ref, const std::vector<kestrel::Mat>& got, float lo,
                               float hi) {
  std::vector<double> sum(ref[0].c, 0.0), n(ref[0].c, 0.0);
  for (size_t i = 0; i < ref.size(); ++i) {
    const size_t plane = static_cast<size_t>(ref[i].w) * ref[i].h;
    for (int c = 0; c < ref[i].c; ++c) {
      for (size_t k = 0; k < plane; ++k) {
        const float r = ref[i].channel(c)[k];
        if (!(r > lo && r < hi)) continue;
        sum[c] += double(got[i].channel(c)[k]) - r;
        n[c] += 1.0;
      }
    }
  }
  for (size_t c = 0; c < sum.size(); ++c) sum[c] = n[c] > 0.0 ? sum[c] / n[c] : 0.0;
  return sum;
}

}  // namespace

TEST_SUITE("quantize") {
  TEST_CASE("bias correction: measured shifts off the bias, kept where the network comes nearer fp32") {
    const kt::ZooCalibration zoo = kt::zoo_calibration({5, 64}, 3);
    // An uncalibrated model is refused, with no output.
    std::string out;
    kestrel::Status s = q::correct_biases(zoo.bytes, 3, zoo.source, 2, &out, nullptr);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("not calibrated") != std::string::npos);
    CHECK(out.empty());

    q::CalibrationOptions opt;
    std::string quantized;
    REQUIRE(q::calibrate(zoo.bytes, 3, zoo.source, opt, &quantized, nullptr).ok());
    std::vector<q::BiasCorrection> rows;
    REQUIRE(q::correct_biases(quantized, 3, zoo.source, 2, &out, &rows).ok());
    REQUIRE(kestrel::fb::GetModel(out.data())->quantization()->bias_corrected());
    // Every int8 layer but the classifier (a head: nothing weighs its errors further).
    const std::vector<std::string> int8 = q::int8_layers(kestrel::fb::GetModel(quantized.data()));
    REQUIRE(rows.size() + 1 == int8.size());
    CHECK(int8.back() == "fc7");
    double before = 0.0, after = 0.0;
    REQUIRE(q::int8_sqnr(quantized, quantized, 3, zoo.source, 2, &before).ok());
    REQUIRE(q::int8_sqnr(quantized, out, 3, zoo.source, 2, &after).ok());
    double last = before;
    int kept = 0;
    for (const q::BiasCorrection& r : rows) {
      INFO(r.layer);
      REQUIRE_FALSE(r.skipped);  // ReLU everywhere
      const std::vector<float> b0 = bias_of(quantized, r.layer), b1 = bias_of(out, r.layer);
      float moved = 0.f;
      for (size_t c = 0; c < b0.size(); ++c) moved = std::max(moved, std::fabs(b1[c] - b0[c]));
      if (r.kept) {
        CHECK(r.sqnr_db >= last);
        last = r.sqnr_db;
        CHECK(moved == doctest::Approx(r.max_shift).epsilon(1e-3));
        ++kept;
      } else {
        CHECK(r.sqnr_db < last);
        CHECK(moved == 0.f);
      }
    }
    CHECK(kept > 0);
    CHECK(after == doctest::Approx(last));
    CHECK(after > before);

    // Unguarded, every correction stays. The first layer reads the network input, which
    // no correction changes: its mean error per channel is what the report took off,
    // and little of it is left.
    std::string all;
    std::vector<q::BiasCorrection> all_rows;
    REQUIRE(q::correct_biases(quantized, 3, zoo.source, 2, &all, &all_rows, false).ok());
    REQUIRE(all_rows.size() == rows.size());
    for (const q::BiasCorrection& r : all_rows) CHECK(r.kept);
    const q::BiasCorrection& first = all_rows[0];
    REQUIRE(first.layer == "conv1");
    std::vector<kestrel::Mat> ref, got0, got1;
    for (const kestrel::Mat& in : zoo.inputs) {
      ref.push_back(kt::blob_of(quantized, in, "conv1"));
      got0.push_back(kt::blob_of(quantized, in, "conv1", kestrel::Precision::kInt8));
      got1.push_back(kt::blob_of(all, in, "conv1", kestrel::Precision::kInt8));
    }
    const float range = 127.f * first.step;
    const std::vector<double> e0 = mean_error(ref, got0, 0.f, range);
    const std::vector<double> e1 = mean_error(ref, got1, 0.f, range);
    const std::vector<float> b0 = bias_of(quantized, "conv1"), b1 = bias_of(all, "conv1");
    double worst0 = 0.0, worst1 = 0.0;
    for (size_t c = 0; c < e0.size(); ++c) {
      INFO("channel " << c);
      CHECK(b1[c] - b0[c] == doctest::Approx(-e0[c]).epsilon(1e-3).scale(first.step));
      worst0 = std::max(worst0, std::fabs(e0[c]));
      worst1 = std::max(worst1, std::fabs(e1[c]));
    }
    CHECK(worst0 == doctest::Approx(first.max_shift).epsilon(1e-3));
    CHECK(worst1 < 0.5 * worst0);
  }
}
