// int8 activation calibration (converter/quantize/calibration.h): the three methods'
// thresholds on distributions whose answer is known, and the edge cases a calibration
// set can hit (a blob that is always zero, NaN, values beyond the first pass's range).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <random>
#include <vector>

#include "kernels/i8_reference.h"
#include "kernels/i8_conv_kernels.h"
#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "conv_test_util.h"
#include "kernel_test_util.h"
#include "mat_util.h"
#include "quantize/calibrate_model.h"
#include "quantize/calibration.h"
#include "test_util.h"

namespace q = kestrel::quantize;

namespace {

q::AbsHistogram histogram(const std::vector<float>& v) {
  q::AbsHistogram h;
  h.observe_max(v.data(), v.size());
  h.freeze();
  h.add(v.data(), v.size());
  return h;
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// `bytes` calibrated by min-max on `count` random inputs of its "data" (seeds 1, 2, ...),
// which it returns in `inputs`.
std::string calibrated_minmax(const std::string& bytes, uint32_t count, std::vector<kestrel::Mat>* inputs,
                              const std::vector<std::string>& keep_fp32 = {}) {
  kestrel::Net fp32;
  REQUIRE(fp32.load(bytes.data(), bytes.size()).ok());
  inputs->clear();
  for (uint32_t seed = 1; seed <= count; ++seed) inputs->push_back(kt::random_input(fp32, "data", seed));
  const q::InputSource source = [&](size_t i, std::map<std::string, kestrel::Mat>* in) {
    (*in)["data"] = (*inputs)[i];
    return kestrel::Status::Ok();
  };
  q::CalibrationOptions opt;
  opt.method = q::Method::kMinMax;
  opt.keep_fp32 = keep_fp32;
  std::string quantized;
  REQUIRE(q::calibrate(bytes, inputs->size(), source, opt, &quantized, nullptr).ok());
  return quantized;
}

// Each blob's int8 scale in a calibrated model.
std::map<std::string, float> blob_scales(const std::string& quantized) {
  std::map<std::string, float> scale;
  for (const auto* blob : *kestrel::fb::GetModel(quantized.data())->blobs()) scale[blob->name()->str()] = blob->int8_scale();
  return scale;
}

// Blob `out` of one inference of `model` on `in` ("data") at precision p, on `kernels`
// and `threads`; `observer` (if any) sees each layer.
kestrel::Mat run_calibrated(const std::string& model, kestrel::Precision p, kestrel::KernelSet kernels, int threads,
                            const kestrel::Mat& in, const char* out,
                            std::function<void(const kestrel::LayerEvent&)> observer = nullptr) {
  kestrel::Net net;
  net.option().precision = p;
  net.option().kernels = kernels;
  REQUIRE(net.load(model.data(), model.size()).ok());
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  if (observer) ex.set_observer(std::move(observer));
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat m;
  REQUIRE(ex.extract(out, m).ok());
  return m.clone();
}

// The precision each layer ran at, as the observer sees it, on one inference.
std::map<std::string, kestrel::Precision> precisions(const kestrel::Net& net, const kestrel::Mat& in) {
  std::map<std::string, kestrel::Precision> seen;
  kestrel::Extractor ex = net.create_extractor();
  ex.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = e.precision; });
  kestrel::Mat out;
  if (ex.input("data", in).ok()) (void)ex.extract(net.output_names()[0], out);
  return seen;
}

}  // namespace

TEST_SUITE("quantize") {
  TEST_CASE("calibration: min-max is the largest |x|, nothing clipped") {
    std::vector<float> v = gaussian(10000, 1);
    v[17] = -7.25f;
    const q::AbsHistogram h = histogram(v);
    CHECK(h.values() == v.size());
    CHECK(q::threshold(h, q::Method::kMinMax) == 7.25f);
  }

  TEST_CASE("calibration: the percentile threshold is where that share of |x| lies") {
    // |x| uniform over 0..1 in steps of 1e-4: the p-th percentile is p / 100, to a bin.
    std::vector<float> v;
    for (int i = 1; i <= 10000; ++i) v.push_back((i % 2 ? 1.f : -1.f) * static_cast<float>(i) / 10000.f);
    const q::AbsHistogram h = histogram(v);
    const double bin = h.bin_width();
    for (double p : {50.0, 90.0, 99.0}) {
      CAPTURE(p);
      CHECK(std::fabs(q::threshold(h, q::Method::kPercentile, p) - p / 100.0) <= bin + 1e-6);
    }
    CHECK(q::threshold(h, q::Method::kPercentile, 100.0) == doctest::Approx(1.0));
  }

  TEST_CASE("calibration: KL clips a Gaussian's tail and a lone outlier, keeps a uniform's range") {
    // A Gaussian alone: a few sigma out, at most its largest sample (a thin tail: 2048
    // bins over 4.5 sigma lose little by keeping it).
    const std::vector<float> g = gaussian(200000, 2);
    const q::AbsHistogram hg = histogram(g);
    const float tg = q::threshold(hg, q::Method::kKl);
    MESSAGE("Gaussian: max |x| " << hg.max_abs() << ", KL threshold " << tg);
    CHECK(tg > 2.5f);
    CHECK(tg < 5.0f);
    CHECK(tg <= hg.max_abs());
    // The same with one value of 1000: min-max follows it, KL does not.
    std::vector<float> o = g;
    o[5] = 1000.f;
    const q::AbsHistogram ho = histogram(o);
    CHECK(q::threshold(ho, q::Method::kMinMax) == 1000.f);
    // KL keeps at least kLevels bins (here 128 of 2048 over 0..1000: 62.5), so it can
    // clip no closer than that.
    CHECK(q::threshold(ho, q::Method::kKl) == doctest::Approx(1000.0 * q::kLevels / q::AbsHistogram::kBins));
    // Sparse outliers (0.1% of the values spread over 50 sigma, as a few saturated
    // pixels make): KL clips near the bulk, where min-max spends most levels on them.
    std::mt19937 mr(5);
    std::uniform_real_distribution<float> wide(-50.f, 50.f);
    std::vector<float> mix = gaussian(200000, 6);
    for (size_t i = 0; i < mix.size(); i += 1000) mix[i] = wide(mr);
    const q::AbsHistogram hm = histogram(mix);
    const float tm = q::threshold(hm, q::Method::kKl);
    MESSAGE("Gaussian + 0.1% outliers: max |x| " << hm.max_abs() << ", KL threshold " << tm);
    CHECK(tm < 0.25f * hm.max_abs());
    CHECK(tm > 3.f);
    // Uniform |x|: every level is used as much as any other; clipping only loses.
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> un(200000);
    for (float& x : un) x = u(rng);
    CHECK(q::threshold(histogram(un), q::Method::kKl) > 0.9f);
  }

  TEST_CASE("calibration: KL leaves exact zeros out (a ReLU's), and they are counted") {
    // |x| of a ReLU'd Gaussian: half the values exactly 0. The zeros are exact at any
    // scale, so KL's threshold is that of the nonzero values alone.
    const std::vector<float> g = gaussian(200000, 8);
    std::vector<float> pos;
    for (float x : g) {
      if (x > 0.f) pos.push_back(x);
    }
    std::vector<float> relu = pos;
    relu.resize(pos.size() * 4, 0.f);  // 75% zeros
    const q::AbsHistogram hp = histogram(pos), hr = histogram(relu);
    CHECK(hr.zero_count() == pos.size() * 3);
    CHECK(hp.zero_count() == 0);
    const float tp = q::threshold(hp, q::Method::kKl), tr = q::threshold(hr, q::Method::kKl);
    MESSAGE("positive half of a Gaussian: KL threshold " << tp << ", with 75% zeros " << tr);
    CHECK(tr == tp);
    CHECK(tp > 2.5f);
  }

  TEST_CASE("calibration: KL divergence per candidate, least where the threshold is") {
    const q::AbsHistogram h = histogram(gaussian(50000, 4));
    const std::vector<double> d = q::kl_divergences(h.bins());
    REQUIRE(d.size() == static_cast<size_t>(q::AbsHistogram::kBins - q::kLevels + 1));
    size_t best = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      CHECK(d[i] >= 0.0);
      if (d[i] < d[best]) best = i;
    }
    CHECK(q::threshold(h, q::Method::kKl) == static_cast<float>((q::kLevels + best) * h.bin_width()));
    // Keeping every bin is no divergence at all only when nothing is merged: with 2048
    // bins over 128 levels something always is.
    CHECK(d.back() > 0.0);
    CHECK(q::kl_divergences(std::vector<double>(q::kLevels - 1, 1.0)).empty());
  }

  TEST_CASE("calibration: a blob that is always zero has no threshold; NaN and infinities are counted, not binned") {
    const std::vector<float> zeros(1000, 0.f);
    const q::AbsHistogram z = histogram(zeros);
    for (q::Method m : {q::Method::kMinMax, q::Method::kKl, q::Method::kPercentile}) {
      CAPTURE(q::method_name(m));
      CHECK(q::threshold(z, m) == 0.f);
    }
    std::vector<float> v = {1.f, -2.f, std::numeric_limits<float>::quiet_NaN(), 0.5f};
    const q::AbsHistogram h = histogram(v);
    CHECK(h.nan_count() == 1);
    CHECK(h.values() == 3);
    CHECK(q::threshold(h, q::Method::kMinMax) == 2.f);
    std::vector<float> w = {1.f, std::numeric_limits<float>::infinity()};
    const q::AbsHistogram hi = histogram(w);
    CHECK(hi.inf_count() == 1);
    CHECK(q::threshold(hi, q::Method::kMinMax) == 0.f);  // an infinite range has no scale
  }

  TEST_CASE("calibration: pass-2 values beyond pass 1's range go to the last bin") {
    q::AbsHistogram h;
    const std::vector<float> first = {0.5f, -1.f};
    h.observe_max(first.data(), first.size());
    h.freeze();
    const std::vector<float> second = {3.f, -0.25f};
    h.add(second.data(), second.size());
    CHECK(h.bins().back() == 1.0);
    CHECK(h.values() == 2);
    CHECK(q::threshold(h, q::Method::kMinMax) == 1.f);
  }

  TEST_CASE("calibration: method names round-trip, others are refused") {
    for (q::Method m : {q::Method::kMinMax, q::Method::kKl, q::Method::kPercentile}) {
      q::Method back = q::Method::kMinMax;
      CHECK(q::parse_method(q::method_name(m), &back));
      CHECK(back == m);
    }
    q::Method m = q::Method::kKl;
    CHECK_FALSE(q::parse_method("entropy", &m));
    CHECK(m == q::Method::kKl);
  }

  TEST_CASE("calibrate: min-max scales are 127 over each int8 blob's largest |x| across the inputs") {
    kestrel::ModelBuilder b;
    b.add_input("data", {3, 9, 7});
    kt::add_conv(b, "a", "data", 3, 6);
    b.add_layer("Activation", "r", {"a"}, {"r"}, kt::relu_params());
    kt::add_conv(b, "c", "r", 6, 4, 1);
    b.add_output("c");
    const std::vector<uint8_t> raw = b.serialize();
    const std::string bytes(raw.begin(), raw.end());
    kestrel::Net net;
    REQUIRE(kt::load(net, b).ok());
    std::vector<kestrel::Mat> inputs;
    for (uint32_t seed = 1; seed <= 3; ++seed) inputs.push_back(kt::random_input(net, "data", seed));
    const q::InputSource source = [&](size_t i, std::map<std::string, kestrel::Mat>* in) {
      (*in)["data"] = inputs[i];
      return kestrel::Status::Ok();
    };
    // The largest |x| of each blob, from the fp32 net itself.
    std::map<std::string, float> want;
    for (const kestrel::Mat& in : inputs) {
      for (const char* blob : {"data", "a", "r", "c"}) {
        kestrel::Extractor ex = net.create_extractor();
        REQUIRE(ex.input("data", in).ok());
        kestrel::Mat m;
        REQUIRE(ex.extract(blob, m).ok());
        for (int ch = 0; ch < m.c; ++ch) {
          for (int j = 0; j < m.w * m.h; ++j) want[blob] = std::max(want[blob], std::fabs(m.channel(ch)[j]));
        }
      }
    }
    q::CalibrationOptions opt;
    opt.method = q::Method::kMinMax;
    std::string out;
    std::vector<q::BlobReport> report;
    kestrel::Status s = q::calibrate(bytes, inputs.size(), source, opt, &out, &report);
    INFO(s.message());
    REQUIRE(s.ok());
    // The convolutions' inputs and outputs; r is c's input, not "a"'s ReLU alone.
    std::map<std::string, float> scale;
    for (const auto* blob : *kestrel::fb::GetModel(out.data())->blobs()) scale[blob->name()->str()] = blob->int8_scale();
    for (const char* blob : {"data", "a", "r", "c"}) {
      CAPTURE(blob);
      CHECK(scale[blob] == doctest::Approx(127.0 / want[blob]));
    }
    CHECK(report.size() == 4);
    const kestrel::fb::Quantization* qz = kestrel::fb::GetModel(out.data())->quantization();
    REQUIRE(qz != nullptr);
    CHECK(qz->scheme_version() == 1);
    CHECK(qz->method()->str() == "minmax");
    CHECK(qz->images() == 3);
    kestrel::Net back;
    CHECK(back.load(out.data(), out.size()).ok());

    // Refusals, each writing nothing.
    std::string none;
    s = q::calibrate(out, inputs.size(), source, opt, &none, nullptr);
    CHECK(s.message().find("already calibrated") != std::string::npos);
    opt.keep_fp32 = {"nope"};
    s = q::calibrate(bytes, inputs.size(), source, opt, &none, nullptr);
    CHECK(s.message().find("no layer 'nope'") != std::string::npos);
    // c kept in fp32: only a's operands get scales (r is read by c alone, and the ReLU
    // that writes it is not an int8 layer type).
    opt.keep_fp32 = {"c"};
    REQUIRE(q::calibrate(bytes, inputs.size(), source, opt, &none, nullptr).ok());
    std::map<std::string, float> kept;
    for (const auto* blob : *kestrel::fb::GetModel(none.data())->blobs()) kept[blob->name()->str()] = blob->int8_scale();
    CHECK(kept["a"] > 0.f);
    CHECK(kept["r"] == 0.f);
    CHECK(kept["c"] == 0.f);
    CHECK(kestrel::fb::GetModel(none.data())->quantization()->keep_fp32()->size() == 1);
    opt.keep_fp32.clear();
    const q::InputSource failing = [&](size_t i, std::map<std::string, kestrel::Mat>* in) {
      if (i == 1) return kestrel::Status(kestrel::ErrorCode::kIoError, "calibration image 'x.jpg': cannot open");
      (*in)["data"] = inputs[i];
      return kestrel::Status::Ok();
    };
    std::string untouched = "before";
    s = q::calibrate(bytes, inputs.size(), failing, opt, &untouched, nullptr);
    CHECK(s.message().find("x.jpg") != std::string::npos);
    CHECK(untouched == "before");
    // A blob that is 0 on every input has no scale.
    const q::InputSource zeros = [&](size_t, std::map<std::string, kestrel::Mat>* in) {
      kestrel::Mat z = inputs[0].clone();
      for (int ch = 0; ch < z.c; ++ch) std::fill(z.channel(ch), z.channel(ch) + z.w * z.h, 0.f);
      (*in)["data"] = z;
      return kestrel::Status::Ok();
    };
    s = q::calibrate(bytes, 2, zeros, opt, &none, nullptr);
    CHECK(s.message().find("blob 'data' is 0 on every calibration input") != std::string::npos);
  }

  TEST_CASE("int8: a calibrated Net computes its convolutions with the int8 oracle, the rest fp32") {
    // data -> conv a -> ReLU r -> conv c (3x3, channels not a multiple of anything).
    kestrel::ModelBuilder b;
    b.add_input("data", {5, 9, 11});
    kt::add_conv(b, "a", "data", 5, 7);
    b.add_layer("Activation", "r", {"a"}, {"r"}, kt::relu_params());
    kt::add_conv(b, "c", "r", 7, 3);
    b.add_output("c");
    const std::vector<uint8_t> raw = b.serialize();
    const std::string bytes(raw.begin(), raw.end());
    std::vector<kestrel::Mat> inputs;
    const std::string quantized = calibrated_minmax(bytes, 3, &inputs);
    std::map<std::string, float> scale = blob_scales(quantized);
    // The expected output, written out: each convolution's input quantized with its
    // blob's scale, weights per output channel, the int8 oracle, fp32 in between.
    const kestrel::fb::Model* model = kestrel::fb::GetModel(quantized.data());
    auto weight = [&](const std::string& name) {
      for (const auto* w : *model->weights()) {
        if (w->name()->str() == name) {
          return std::vector<float>(reinterpret_cast<const float*>(w->data()->data()),
                                    reinterpret_cast<const float*>(w->data()->data()) + w->data()->size() / 4);
        }
      }
      return std::vector<float>();
    };
    auto conv_i8 = [&](const std::string& name, const kestrel::Mat& in, int out_c, float in_scale) {
      kestrel::kernels::ConvGeometry g;
      g.in_c = in.c;
      g.in_h = g.out_h = in.h;
      g.in_w = g.out_w = in.w;
      g.out_c = out_c;
      g.kh = g.kw = 3;
      g.pad_top = g.pad_left = 1;
      g.bias = true;
      const std::vector<float> w = weight(name + "/w"), bias = weight(name + "/b");
      const size_t taps = static_cast<size_t>(in.c) * 9, plane = static_cast<size_t>(in.w) * in.h;
      std::vector<int8_t> w8(w.size()), x8(static_cast<size_t>(in.c) * plane);
      std::vector<float> ws(out_c), dq(out_c);
      kestrel::kernels::quantize_rows_i8(w.data(), out_c, taps, w8.data(), ws.data());
      for (int o = 0; o < out_c; ++o) dq[o] = 1.f / (in_scale * ws[o]);
      for (int ch = 0; ch < in.c; ++ch) kestrel::kernels::quantize_i8(in.channel(ch), x8.data() + ch * plane, plane, in_scale);
      kestrel::Mat out;
      REQUIRE(out.create(kestrel::Shape::make3(in.w, in.h, out_c)));
      kestrel::kernels::conv_reference_i8(g, w8.data(), dq.data(), bias.data(), x8.data(), plane, 0.f, nullptr,
                                          out.data, out.cstep, 1);
      return out;
    };
    for (kestrel::KernelSet kernels : {kestrel::KernelSet::kReference, kestrel::KernelSet::kFast}) {
      for (int threads : {1, 3}) {
        CAPTURE(int(kernels));
        CAPTURE(threads);
        kestrel::Net net;
        net.option().precision = kestrel::Precision::kInt8;
        net.option().kernels = kernels;
        net.option().num_threads = threads;
        REQUIRE(net.load(quantized.data(), quantized.size()).ok());
        const auto seen = precisions(net, inputs[0]);
        CHECK(seen.at("a") == kestrel::Precision::kInt8);
        CHECK(seen.at("c") == kestrel::Precision::kInt8);
        CHECK(seen.at("r") == kestrel::Precision::kFp32);
        for (const kestrel::Mat& in : inputs) {
          kestrel::Mat a = conv_i8("a", in, 7, scale["data"]);
          for (int ch = 0; ch < a.c; ++ch) {
            for (int j = 0; j < a.w * a.h; ++j) a.channel(ch)[j] = std::max(0.f, a.channel(ch)[j]);
          }
          const kestrel::Mat want = conv_i8("c", a, 3, scale["r"]);
          kestrel::Extractor ex = net.create_extractor();
          REQUIRE(ex.input("data", in).ok());
          kestrel::Mat got;
          REQUIRE(ex.extract("c", got).ok());
          CHECK(kt::same_plane_values(got, want));
        }
      }
    }
    // The same model at fp32, and an uncalibrated one at int8, are the fp32 network.
    auto output = [&](const std::string& model_bytes, kestrel::Precision p, const std::string& keep = "") {
      kestrel::Net net;
      net.option().precision = p;
      if (!keep.empty()) net.option().layer_precision[keep] = kestrel::Precision::kFp32;
      REQUIRE(net.load(model_bytes.data(), model_bytes.size()).ok());
      kestrel::Extractor ex = net.create_extractor();
      REQUIRE(ex.input("data", inputs[0]).ok());
      kestrel::Mat m;
      REQUIRE(ex.extract("c", m).ok());
      return m.clone();
    };
    const kestrel::Mat ref = output(bytes, kestrel::Precision::kFp32);
    CHECK(kt::same_plane_values(output(quantized, kestrel::Precision::kFp32), ref));
    CHECK(kt::same_plane_values(output(bytes, kestrel::Precision::kInt8), ref));
    CHECK_FALSE(kt::same_plane_values(output(quantized, kestrel::Precision::kInt8), ref));
    // Both layers named fp32: the fp32 network again.
    {
      kestrel::Net net;
      net.option().precision = kestrel::Precision::kInt8;
      net.option().layer_precision["a"] = kestrel::Precision::kFp32;
      net.option().layer_precision["c"] = kestrel::Precision::kFp32;
      REQUIRE(net.load(quantized.data(), quantized.size()).ok());
      kestrel::Extractor ex = net.create_extractor();
      REQUIRE(ex.input("data", inputs[0]).ok());
      kestrel::Mat m;
      REQUIRE(ex.extract("c", m).ok());
      CHECK(kt::same_plane_values(m, ref));
    }
    // A layer the calibration kept in fp32 stays fp32 at int8.
    std::vector<kestrel::Mat> again;
    const std::string kept = calibrated_minmax(bytes, 3, &again, {"c"});
    kestrel::Net net;
    net.option().precision = kestrel::Precision::kInt8;
    REQUIRE(net.load(kept.data(), kept.size()).ok());
    const auto seen = precisions(net, inputs[0]);
    CHECK(seen.at("c") == kestrel::Precision::kFp32);
    CHECK(seen.at("a") == kestrel::Precision::kInt8);
  }

  TEST_CASE("int8: the fast kernels give the reference set's int8 oracle bits on a MobileNet, any thread count") {
    // Pointwise layers and the stem on the int8 kernels (VNNI here), depthwise layers on
    // the int8 depthwise kernel, or, without them, fp32 kernels over the quantized values
    // (exact: kExactFloatTaps).
    const std::vector<uint8_t> raw = kestrel::mobilenet_v1({3, 64}).serialize();
    const std::string bytes(raw.begin(), raw.end());
    std::vector<kestrel::Mat> inputs;
    const std::string quantized = calibrated_minmax(bytes, 2, &inputs);
    auto run = [&](kestrel::KernelSet kernels, int threads, std::map<std::string, std::string>* ran) {
      return run_calibrated(quantized, kestrel::Precision::kInt8, kernels, threads, inputs[0], "conv6/sep",
                            ran ? [ran](const kestrel::LayerEvent& e) { (*ran)[e.layer_name] = e.kernel; }
                                : std::function<void(const kestrel::LayerEvent&)>());
    };
    std::map<std::string, std::string> ran;
    const kestrel::Mat want = run(kestrel::KernelSet::kReference, 1, nullptr);
    CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, 1, &ran), want));
    CHECK(kt::same_plane_values(run(kestrel::KernelSet::kFast, 3, nullptr), want));
    CHECK(ran.at("conv1").rfind("i8_", 0) == 0);
    CHECK(ran.at("conv5_1/dw").rfind("i8_", 0) == 0);  // an int8 kernel, or the exact fp32 route
    const bool vnni = kestrel::kernels::select_i8_conv_kernel(
                          kt::pointwise(256, 4, 4, 256, kestrel::fb::ActivationType::ReLU),
                          kestrel::kernels::active_isa()) != nullptr;
    CHECK((ran.at("conv5_1/sep").rfind("i8_conv1x1", 0) == 0) == vnni);
    if (!vnni) MESSAGE("no int8 kernel runs on this CPU: pointwise layers take the exact fp32 route");
  }

  TEST_CASE("int8: an InnerProduct runs as the convolution it equals, on a map and on a vector") {
    // data -> conv a -> fc (over a's [7, 5, 6] map) -> fc2 (over fc's 9 values).
    kestrel::ModelBuilder b;
    b.add_input("data", {4, 5, 6});
    kt::add_conv(b, "a", "data", 4, 7);
    kt::add_inner_product(b, "fc", "a", 9, 7 * 5 * 6, 3);
    kt::add_inner_product(b, "fc2", "fc", 6, 9, 4);
    b.add_output("fc2");
    const std::vector<uint8_t> raw = b.serialize();
    const std::string bytes(raw.begin(), raw.end());
    std::vector<kestrel::Mat> inputs;
    const std::string quantized = calibrated_minmax(bytes, 3, &inputs);
    std::map<std::string, float> scale = blob_scales(quantized);
    REQUIRE(scale["a"] > 0.f);
    REQUIRE(scale["fc"] > 0.f);
    auto run = [&](kestrel::Precision p, kestrel::KernelSet kernels, int threads, const char* out,
                   std::map<std::string, kestrel::Precision>* seen) {
      return run_calibrated(quantized, p, kernels, threads, inputs[0], out,
                            seen ? [seen](const kestrel::LayerEvent& e) { (*seen)[e.layer_name] = e.precision; }
                                 : std::function<void(const kestrel::LayerEvent&)>());
    };
    std::map<std::string, kestrel::Precision> seen;
    const kestrel::Mat a = run(kestrel::Precision::kInt8, kestrel::KernelSet::kReference, 1, "a", nullptr);
    const kestrel::Mat fc = run(kestrel::Precision::kInt8, kestrel::KernelSet::kReference, 1, "fc", nullptr);
    (void)run(kestrel::Precision::kInt8, kestrel::KernelSet::kReference, 1, "fc2", &seen);
    CHECK(seen.at("fc") == kestrel::Precision::kInt8);
    CHECK(seen.at("fc2") == kestrel::Precision::kInt8);
    // fc written out: a's values quantized with a's scale, the weights per output, the
    // exact sums, float(sum) * dequant + bias.
    const kestrel::fb::Model* model = kestrel::fb::GetModel(quantized.data());
    std::vector<float> w, bias;
    for (const auto* wt : *model->weights()) {
      const float* d = reinterpret_cast<const float*>(wt->data()->data());
      if (wt->name()->str() == "fc/w") w.assign(d, d + wt->data()->size() / 4);
      if (wt->name()->str() == "fc/b") bias.assign(d, d + wt->data()->size() / 4);
    }
    REQUIRE(w.size() == size_t(9) * 7 * 5 * 6);
    const size_t n = size_t(7) * 5 * 6, plane = size_t(5) * 6;
    std::vector<int8_t> w8(w.size()), x8(n);
    std::vector<float> ws(9);
    kestrel::kernels::quantize_rows_i8(w.data(), 9, n, w8.data(), ws.data());
    for (int c = 0; c < 7; ++c) kestrel::kernels::quantize_i8(a.channel(c), x8.data() + c * plane, plane, scale["a"]);
    for (int o = 0; o < 9; ++o) {
      int32_t sum = 0;
      for (size_t i = 0; i < n; ++i) sum += int32_t{w8[o * n + i]} * x8[i];
      const float scaled = static_cast<float>(sum) * (1.f / (scale["a"] * ws[o]));
      CHECK(fc.data[o] == scaled + bias[o]);
    }
    // Every route gives those bits: the fast kernels at 1 and 3 threads; and fp32 differs.
    const kestrel::Mat want = run(kestrel::Precision::kInt8, kestrel::KernelSet::kReference, 1, "fc2", nullptr);
    CHECK(kt::same_plane_values(run(kestrel::Precision::kInt8, kestrel::KernelSet::kFast, 1, "fc2", nullptr), want));
    CHECK(kt::same_plane_values(run(kestrel::Precision::kInt8, kestrel::KernelSet::kFast, 3, "fc2", nullptr), want));
    CHECK(kt::same_plane_values(run(kestrel::Precision::kInt8, kestrel::KernelSet::kFast, 1, "fc", nullptr), fc));
    const kestrel::Mat f32 = run(kestrel::Precision::kFp32, kestrel::KernelSet::kFast, 1, "fc2", nullptr);
    CHECK_FALSE(kt::same_plane_values(f32, want));
    CHECK(kt::relative_error(want, f32) < 0.05);
  }
}
