// kestrel-quantize --equalize (converter/quantize/equalize.h): the equalized network
// computes what the original does, and the maps depthwise layers read have even
// channel ranges.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "mat_util.h"
#include "quantize/calibrate_model.h"
#include "quantize/equalize.h"
#include "calib_util.h"

namespace q = kestrel::quantize;

namespace {

// Each channel's max |x| over `maps`.
std::vector<float> channel_max(const std::vector<kestrel::Mat>& maps) {
  std::vector<float> m(maps[0].c, 0.f);
  for (const kestrel::Mat& map : maps) {
    const size_t n = static_cast<size_t>(map.w) * map.h;
    for (int c = 0; c < map.c; ++c) {
      for (size_t k = 0; k < n; ++k) m[c] = std::max(m[c], std::fabs(map.channel(c)[k]));
    }
  }
  return m;
}

}  // namespace

TEST_SUITE("quantize") {
  TEST_CASE("equalize: the same network, even channel ranges where a depthwise layer reads") {
    const kt::ZooCalibration zoo = kt::zoo_calibration({5, 64}, 3);
    const std::string& bytes = zoo.bytes;
    const std::vector<kestrel::Mat>& inputs = zoo.inputs;
    const q::InputSource& source = zoo.source;
    std::string equalized;
    std::vector<q::EqualizedPair> pairs;
    REQUIRE(q::equalize_depthwise_inputs(bytes, 2, source, 2, &equalized, &pairs).ok());
    // Every pointwise layer (and the stem) feeds a depthwise one, but conv6/sep.
    REQUIRE(pairs.size() == 13);
    CHECK(pairs[0].producer == "conv1");
    CHECK(pairs[0].consumer == "conv2_1/dw");
    int scaled = 0;
    for (const q::EqualizedPair& p : pairs) {
      INFO(p.producer);
      CHECK(p.spread_after <= p.spread_before);
      CHECK(p.max_scale <= q::kMaxChannelScale);
      scaled += p.channels;
    }
    CHECK(scaled > 0);
    // The maps the depthwise layers read: the ranges on the calibration inputs are as
    // reported, and the largest channel's range is unchanged (ReLU: no bound).
    for (const q::EqualizedPair& p : pairs) {
      INFO(p.producer);
      const std::vector<float> before =
          channel_max({kt::blob_of(bytes, inputs[0], p.producer), kt::blob_of(bytes, inputs[1], p.producer)});
      const std::vector<float> after =
          channel_max({kt::blob_of(equalized, inputs[0], p.producer), kt::blob_of(equalized, inputs[1], p.producer)});
      const float top = *std::max_element(before.begin(), before.end());
      float lo = top;
      for (float x : after) {
        if (x > 0.f) lo = std::min(lo, x);
      }
      CHECK(*std::max_element(after.begin(), after.end()) == doctest::Approx(top).epsilon(1e-4));
      CHECK(top / lo == doctest::Approx(p.spread_after).epsilon(1e-3));
    }
    // The network's function: an input it was not equalized on, through to the last map.
    const kestrel::Mat want = kt::blob_of(bytes, inputs[2], "conv6/sep");
    const kestrel::Mat got = kt::blob_of(equalized, inputs[2], "conv6/sep");
    const std::vector<float> scale = channel_max({want});
    const float top = *std::max_element(scale.begin(), scale.end());
    REQUIRE(top > 0.f);
    float worst = 0.f;
    const size_t n = static_cast<size_t>(want.w) * want.h;
    for (int c = 0; c < want.c; ++c) {
      for (size_t k = 0; k < n; ++k) worst = std::max(worst, std::fabs(got.channel(c)[k] - want.channel(c)[k]));
    }
    CHECK(worst / top < 1e-4f);
    // It calibrates; a calibrated model is refused.
    q::CalibrationOptions opt;
    std::string quantized;
    REQUIRE(q::calibrate(equalized, 2, source, opt, &quantized, nullptr).ok());
    std::string again;
    const kestrel::Status s = q::equalize_depthwise_inputs(quantized, 2, source, 1, &again, nullptr);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("already calibrated") != std::string::npos);
    CHECK(again.empty());
  }
}
