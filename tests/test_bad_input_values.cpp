// NaN and Inf in the input: inference completes, and a NaN reaches the output instead
// of being turned into a plausible-looking answer (ReLU and max pooling in the fast
// kernels must keep NaN, as the reference's comparisons do). Same for every kernel set
// and thread count.
#include <cmath>
#include <limits>

#include "bad_input_util.h"

using namespace bi;

namespace {

struct Run {
  Status status;
  Mat out;
};

Run infer(const std::vector<uint8_t>& bytes, kestrel::KernelSet kernels, int threads, const Mat& in,
          const std::string& output) {
  Net net;
  net.option().kernels = kernels;
  net.option().num_threads = threads;
  Run r;
  r.status = kt::load_bytes(net, bytes);
  if (!r.status.ok()) return r;
  kestrel::Extractor ex = net.create_extractor();
  r.status = ex.input("data", in);
  if (r.status.ok()) r.status = ex.extract(output, r.out);
  return r;
}

size_t count_nan(const Mat& m) {
  size_t n = 0;
  for (int q = 0; q < m.c; ++q) {
    const float* p = m.channel(q);
    for (size_t i = 0; i < static_cast<size_t>(m.w) * m.h * m.d * m.elempack; ++i) n += std::isnan(p[i]) ? 1 : 0;
  }
  return n;
}

size_t count_values(const Mat& m) { return static_cast<size_t>(m.w) * m.h * m.d * m.c * m.elempack; }

}  // namespace

TEST_SUITE("bad_input") {

TEST_CASE("NaN and Inf inputs propagate through MobileNet v1 and never crash") {
  const std::vector<uint8_t>& bytes = small_mobilenet_bytes();
  Net probe;
  REQUIRE(kt::load_bytes(probe, bytes).ok());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();

  Mat all_nan = kt::random_input(probe, "data", 3);
  all_nan.fill(nan);
  Mat one_nan = kt::random_input(probe, "data", 4);
  for (int q = 0; q < one_nan.c; ++q) one_nan.channel(q)[one_nan.w * (one_nan.h / 2) + one_nan.w / 2] = nan;
  Mat infs = kt::random_input(probe, "data", 5);
  infs.channel(0)[0] = inf;
  infs.channel(1)[7] = -inf;
  const struct {
    const char* name;
    const Mat& in;
    bool all_nan_out;  // the softmax's sum takes a NaN logit along: every probability NaN
  } cases[] = {{"every value NaN", all_nan, true}, {"one NaN pixel per channel", one_nan, true},
               {"+Inf and -Inf pixels", infs, false}};

  for (const auto& c : cases) {
    CAPTURE(c.name);
    const Run ref = infer(bytes, kestrel::KernelSet::kReference, 1, c.in, "prob");
    REQUIRE_MESSAGE(ref.status.ok(), ref.status.message());
    if (c.all_nan_out) CHECK(count_nan(ref.out) == count_values(ref.out));
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      const Run fast = infer(bytes, kestrel::KernelSet::kFast, threads, c.in, "prob");
      REQUIRE_MESSAGE(fast.status.ok(), fast.status.message());
      // The fast kernels see Inf and NaN as the reference does.
      CHECK(count_nan(fast.out) == count_nan(ref.out));
      if (c.all_nan_out) CHECK(count_nan(fast.out) == count_values(fast.out));
    }
  }
}

TEST_CASE("NaN input through MobileNet-SSD's detection output does not crash") {
  kestrel::ZooOptions o;
  o.seed = 9;
  static const std::vector<uint8_t> bytes = kestrel::mobilenet_ssd(o).serialize();
  Net probe;
  REQUIRE(kt::load_bytes(probe, bytes).ok());
  Mat in = kt::random_input(probe, "data", 6);
  in.fill(std::numeric_limits<float>::quiet_NaN());
  for (kestrel::KernelSet kernels : {kestrel::KernelSet::kReference, kestrel::KernelSet::kFast}) {
    CAPTURE(static_cast<int>(kernels));
    const Run r = infer(bytes, kernels, 2, in, "detection_out");
    REQUIRE_MESSAGE(r.status.ok(), r.status.message());
    // NaN scores never pass the confidence threshold: no box is made of them.
    for (int y = 0; y < r.out.h; ++y) CHECK_FALSE(std::isnan(r.out.row(y)[1]));
  }
}

}  // TEST_SUITE
