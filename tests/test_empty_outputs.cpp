// Outputs that hold no values: a detector that finds nothing gives a DetectionOutput
// of 0 rows, and a map can have 0 channels. Extractor::extract and the C API hand them
// out as what they are (the shape with its 0, no values), under every memory strategy,
// for declared outputs and copied intermediate blobs, again on the next inference;
// layers after them run on nothing. (kestrel-run's share: tests/tools.)
#include <cstring>

#include "kestrel/c_api.h"
#include "test_util.h"

namespace {

using kestrel::Mat;
using kestrel::MemoryStrategy;
using kestrel::Shape;

constexpr int kPriors = 5, kClasses = 3;

// loc, conf and priors as inputs -> DetectionOutput "det" (nothing scores above a
// confidence threshold of 1 after a softmax) -> ReLU "det_relu". Only det_relu is a
// declared output, so that extract("det") takes the copy path of the plan.
kestrel::ModelBuilder empty_detector() {
  kestrel::ModelBuilder b;
  b.add_input("loc", {4 * kPriors});
  b.add_input("conf", {kPriors, kClasses});
  b.add_input("priors", {2, 4 * kPriors});
  kestrel::fb::DetectionOutputParamT p;
  p.num_classes = kClasses;
  p.confidence_threshold = 1.f;
  p.keep_top_k = 10;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  b.add_layer("DetectionOutput", "det", {"loc", "conf", "priors"}, {"det"}, std::move(u));
  b.add_layer("Activation", "det_relu", {"det"}, {"det_relu"}, kt::relu_params());
  b.add_output("det_relu");
  return b;
}

std::vector<Mat> detector_inputs() {
  std::vector<Mat> in = {Mat(4 * kPriors), Mat(kClasses, kPriors), Mat(4 * kPriors, 2)};
  in[0].fill(0.f);
  in[1].fill(1.f / kClasses);
  for (int i = 0; i < kPriors; ++i) {
    const float box[4] = {0.1f * i, 0.1f * i, 0.1f * i + 0.2f, 0.1f * i + 0.2f};
    std::memcpy(in[2].row(0) + 4 * i, box, sizeof box);
    for (int k = 0; k < 4; ++k) in[2].row(1)[4 * i + k] = 0.1f;
  }
  return in;
}

void check_no_rows(const Mat& m) {
  CHECK(m.dims == 2);
  CHECK(m.w == 6);
  CHECK(m.h == 0);
  CHECK(m.total() == 0);
  CHECK(m.empty());
}

}  // namespace

TEST_SUITE("extractor") {
  TEST_CASE("a DetectionOutput of 0 rows is handed out as 0 rows of 6, and read by later layers") {
    for (MemoryStrategy strategy : {MemoryStrategy::kNone, MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
      for (bool light : {true, false}) {
        for (int threads : {1, 2}) {
          CAPTURE(int(strategy));
          CAPTURE(light);
          CAPTURE(threads);
          kestrel::Net net;
          net.option().memory = strategy;
          net.option().num_threads = threads;
          REQUIRE(kt::load(net, empty_detector()).ok());
          CHECK(net.producer_type("det") == "DetectionOutput");
          CHECK(net.producer_type("det_relu") == "Activation");
          CHECK(net.producer_type("loc").empty());
          CHECK(net.producer_type("nosuch").empty());
          kestrel::Extractor ex = net.create_extractor();
          ex.set_light_mode(light);
          const std::vector<Mat> in = detector_inputs();
          for (int round = 0; round < 2; ++round) {
            REQUIRE(ex.input("loc", in[0]).ok());
            REQUIRE(ex.input("conf", in[1]).ok());
            REQUIRE(ex.input("priors", in[2]).ok());
            Mat out, det;
            kestrel::Status s = ex.extract("det_relu", out);
            REQUIRE_MESSAGE(s.ok(), s.message());
            check_no_rows(out);
            s = ex.extract("det", det);
            REQUIRE_MESSAGE(s.ok(), s.message());
            check_no_rows(det);
            // A copy of nothing is nothing, not an allocation failure.
            const Mat copy = det.clone();
            CHECK(copy.h == 0);
            CHECK(copy.w == 6);
          }
        }
      }
    }
  }

  TEST_CASE("a layer that cannot follow a data-dependent row count is refused at load, naming both") {
    kestrel::ModelBuilder b = empty_detector();
    kestrel::fb::SoftmaxParamT p;
    p.axis = 1;
    kestrel::fb::LayerParamsUnion u;
    u.Set(std::move(p));
    b.add_layer("Softmax", "rows_softmax", {"det_relu"}, {"rows_softmax"}, std::move(u));
    b.add_output("rows_softmax");
    kestrel::Net net;
    const kestrel::Status s = kt::load(net, b);
    CHECK(s.code() == kestrel::ErrorCode::kUnsupported);
    CHECK_MESSAGE(s.message().find("layer 'rows_softmax' (Softmax) reads 'det_relu', whose row count layer 'det' "
                                   "(DetectionOutput) decides at each inference") != std::string::npos,
                  s.message());
  }

  TEST_CASE("the C API hands out a 0-row output as shape {0, 6} and count 0") {
    const std::vector<uint8_t> bytes = empty_detector().serialize();
    kestrel_net* net = kestrel_net_create();
    REQUIRE(kestrel_net_load_memory(net, bytes.data(), bytes.size()) == KESTREL_OK);
    kestrel_extractor* ex = kestrel_extractor_create(net);
    const std::vector<Mat> in = detector_inputs();
    const int loc_shape[1] = {4 * kPriors}, conf_shape[2] = {kPriors, kClasses}, prior_shape[2] = {2, 4 * kPriors};
    CHECK(kestrel_extractor_input(ex, "loc", in[0].data, 1, loc_shape) == KESTREL_OK);
    CHECK(kestrel_extractor_input(ex, "conf", in[1].data, 2, conf_shape) == KESTREL_OK);
    CHECK(kestrel_extractor_input(ex, "priors", in[2].data, 2, prior_shape) == KESTREL_OK);
    for (const char* name : {"det_relu", "det"}) {
      CAPTURE(name);
      kestrel_tensor t;
      t.count = 99;
      REQUIRE_MESSAGE(kestrel_extractor_extract(ex, name, &t) == KESTREL_OK, kestrel_extractor_last_error(ex));
      CHECK(t.ndims == 2);
      CHECK(t.shape[0] == 0);
      CHECK(t.shape[1] == 6);
      CHECK(t.count == 0);
    }
    kestrel_extractor_destroy(ex);
    kestrel_net_destroy(net);
  }

  TEST_CASE("a map of 0 channels: extracted with its shape, or refused at load naming it") {
    kestrel::ModelBuilder b;
    b.add_input("x", {0, 4, 4});
    b.add_layer("Activation", "y", {"x"}, {"y"}, kt::relu_params());
    b.add_layer("Activation", "z", {"y"}, {"z"}, kt::relu_params());
    b.add_output("z");
    for (MemoryStrategy strategy : {MemoryStrategy::kNone, MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
      CAPTURE(int(strategy));
      kestrel::Net net;
      net.option().memory = strategy;
      const kestrel::Status load = kt::load(net, b);
      if (!load.ok()) {
        // Refusing is allowed; crashing or a message that names nothing is not.
        MESSAGE("a 0-channel input is refused: ", load.message());
        CHECK_MESSAGE(load.message().find("'x'") != std::string::npos, load.message());
        continue;
      }
      Shape shape;
      REQUIRE(net.input_shape("x", &shape).ok());
      CHECK(shape.c == 0);
      Mat x;
      REQUIRE(x.create(shape));
      kestrel::Extractor ex = net.create_extractor();
      REQUIRE(ex.input("x", x).ok());
      for (const char* name : {"z", "y"}) {
        Mat out;
        const kestrel::Status s = ex.extract(name, out);
        REQUIRE_MESSAGE(s.ok(), s.message());
        CHECK(out.dims == 3);
        CHECK(out.channels() == 0);
        CHECK(out.w == 4);
        CHECK(out.h == 4);
        CHECK(out.empty());
      }
      // The C API: shape {0, 4, 4}, count 0.
      const std::vector<uint8_t> bytes = b.serialize();
      kestrel_net* cnet = kestrel_net_create();
      REQUIRE(kestrel_net_load_memory(cnet, bytes.data(), bytes.size()) == KESTREL_OK);
      kestrel_extractor* cex = kestrel_extractor_create(cnet);
      const int dims[3] = {0, 4, 4};
      const float none = 0.f;
      CHECK(kestrel_extractor_input(cex, "x", &none, 3, dims) == KESTREL_OK);
      kestrel_tensor t;
      REQUIRE_MESSAGE(kestrel_extractor_extract(cex, "z", &t) == KESTREL_OK, kestrel_extractor_last_error(cex));
      CHECK(t.ndims == 3);
      CHECK(t.shape[0] == 0);
      CHECK(t.count == 0);
      kestrel_extractor_destroy(cex);
      kestrel_net_destroy(cnet);
    }
  }
}
