// The model zoo against the real Caffe deploy definitions (layer for layer: names,
// types, bottoms/tops, parameters), the shapes its networks produce, and seeding.
#include "zoo_test_util.h"

using namespace zt;

TEST_SUITE("zoo") {

TEST_CASE("prototxt reader") {
  const PtNode n = PrototxtParser(
                       "name: \"net\"  # a comment with { braces }\n"
                       "input_dim: 1 input_dim: 3\n"
                       "layer {\n  name: 'a \\\"b\\\"' type: \"Conv\"\n  p: { k: 3 k: [4, 5] }\n}\n"
                       "layer { name: \"c\" }\n")
                       .parse();
  CHECK(n.get("name") == "net");
  CHECK(n.all("input_dim") == std::vector<std::string>{"1", "3"});
  REQUIRE(n.children("layer").size() == 2);
  const PtNode& a = *n.children("layer")[0];
  CHECK(a.get("name") == "a \"b\"");
  CHECK(a.get("type") == "Conv");
  REQUIRE(a.child("p") != nullptr);
  CHECK(a.child("p")->all("k") == std::vector<std::string>{"3", "4", "5"});
  CHECK(n.children("layer")[1]->get("name") == "c");
  CHECK_THROWS(PrototxtParser("layer { name: \"x\"").parse());
  CHECK_THROWS(PrototxtParser("a: }").parse());
}

TEST_CASE("MobileNet v1 matches mobilenet_deploy.prototxt") {
  std::string dir;
  if (!have_caffe_models(&dir)) {
    MESSAGE("skipped: " << dir << " not found (the Caffe definitions live in ../shared, which a clone lacks)");
    return;
  }
  compare_with_caffe(kestrel::mobilenet_v1(), dir + "/mobilenet_deploy.prototxt");
}

TEST_CASE("MobileNet-SSD matches mobilenet_ssd_deploy.prototxt") {
  std::string dir;
  if (!have_caffe_models(&dir)) {
    MESSAGE("skipped: " << dir << " not found (the Caffe definitions live in ../shared, which a clone lacks)");
    return;
  }
  compare_with_caffe(kestrel::mobilenet_ssd(), dir + "/mobilenet_ssd_deploy.prototxt");
}

TEST_CASE("MobileNet v1 shapes: prob is [1000,1,1] and sums to 1") {
  kestrel::Net net;
  const kestrel::Status ls = kt::load(net, kestrel::mobilenet_v1());
  REQUIRE_MESSAGE(ls.ok(), ls.message());
  CHECK(net.input_names() == std::vector<std::string>{"data"});
  CHECK(net.output_names() == std::vector<std::string>{"prob"});
  kestrel::Shape in_shape;
  REQUIRE(net.input_shape("data", &in_shape).ok());
  CHECK(in_shape == kestrel::Shape::make3(224, 224, 3));

  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(1);
  const kestrel::Mat in = kt::random_input(net, "data", 1);
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat prob;
  const kestrel::Status s = ex.extract("prob", prob);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(prob.dims == 3);
  CHECK(prob.w == 1);
  CHECK(prob.h == 1);
  REQUIRE(prob.elempack == 1);
  CHECK(prob.c == 1000);
  double sum = 0;
  bool in_range = true;
  for (int q = 0; q < prob.c; ++q) {
    const float v = prob.channel(q)[0];
    in_range = in_range && v >= 0.f && v <= 1.f && std::isfinite(v);
    sum += v;
  }
  CHECK(in_range);
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-4));
}

TEST_CASE("MobileNet-SSD shapes at 300: 1917 priors, detections of 6 columns") {
  const kestrel::ModelBuilder builder = kestrel::mobilenet_ssd();
  kestrel::Net net;
  const kestrel::Status ls = kt::load(net, builder);
  REQUIRE_MESSAGE(ls.ok(), ls.message());
  kestrel::Shape in_shape;
  REQUIRE(net.input_shape("data", &in_shape).ok());
  CHECK(in_shape == kestrel::Shape::make3(300, 300, 3));

  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(1);
  ex.set_light_mode(false);  // keep every blob: one inference serves all the extracts below
  const kestrel::Mat in = kt::random_input(net, "data", 2);
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat det;
  const kestrel::Status s = ex.extract("detection_out", det);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(det.dims == 2);
  CHECK(det.w == 6);
  CHECK(det.h >= 0);
  CHECK(det.h <= 100);  // keep_top_k
  for (int i = 0; i < det.h; ++i) {
    const float* row = det.row(i);
    CAPTURE(i);
    CHECK(row[0] >= 1.f);  // never the background label 0
    CHECK(row[0] <= 20.f);
    CHECK(row[1] > 0.25f);  // confidence_threshold
    CHECK(row[1] <= 1.f);
  }

  // MobileNet-SSD 300: 19x19x3 + 10x10x6 + 5x5x6 + 3x3x6 + 2x2x6 + 1x1x6 = 1917 priors.
  constexpr int kPriors = 1917;
  kestrel::Mat priors;
  REQUIRE(ex.extract("mbox_priorbox", priors).ok());
  CHECK(priors.dims == 2);
  CHECK(priors.h == 2);
  CHECK(priors.w == kPriors * 4);
  // Row 1 holds the variances of every box coordinate.
  bool variances_ok = priors.h == 2;
  for (int i = 0; variances_ok && i < priors.w; ++i) {
    const float want = i % 4 < 2 ? 0.1f : 0.2f;
    variances_ok = priors.row(1)[i] == want;
  }
  CHECK(variances_ok);

  // The same count from the heads' feature maps and each PriorBox's boxes per cell.
  int counted = 0;
  for (const auto& l : builder.model().layers) {
    if (l->type != "PriorBox") continue;
    const fb::PriorBoxParamT* p = l->params.AsPriorBoxParam();
    REQUIRE(p != nullptr);
    const std::string source = builder.model().blobs[l->bottoms[0]]->name;
    kestrel::Mat fm;
    REQUIRE(ex.extract(source, fm).ok());
    const int per_cell = static_cast<int>(p->min_sizes.size() * (1 + p->aspect_ratios.size() * (p->flip ? 2 : 1)) +
                                          p->max_sizes.size());
    counted += fm.w * fm.h * per_cell;
    kestrel::Mat own;
    REQUIRE(ex.extract(l->name, own).ok());
    CHECK(own.w == fm.w * fm.h * per_cell * 4);
  }
  CHECK(counted == kPriors);

  kestrel::Mat loc, conf;
  REQUIRE(ex.extract("mbox_loc", loc).ok());
  CHECK(loc.total() == static_cast<size_t>(kPriors) * 4);
  REQUIRE(ex.extract("mbox_conf_flatten", conf).ok());
  CHECK(conf.dims == 1);
  CHECK(conf.w == kPriors * 21);
  // The class scores of every prior are a softmax: each group of 21 sums to 1.
  bool sums_ok = true;
  for (int i = 0; sums_ok && i < kPriors; ++i) {
    double sum = 0;
    for (int c = 0; c < 21; ++c) sum += conf[static_cast<size_t>(i) * 21 + c];
    sums_ok = std::fabs(sum - 1.0) < 1e-4;
  }
  CHECK(sums_ok);
}

TEST_CASE("seeding: same seed same bytes, different seed different weights") {
  kestrel::ZooOptions a, b;
  a.seed = 17;
  b.seed = 18;
  SUBCASE("MobileNet v1") {
    const std::vector<uint8_t> first = kestrel::mobilenet_v1(a).serialize();
    CHECK(kestrel::mobilenet_v1(a).serialize() == first);
    const std::vector<uint8_t> other = kestrel::mobilenet_v1(b).serialize();
    const fb::Model* m1 = fb::GetModel(first.data());
    const fb::Model* m2 = fb::GetModel(other.data());
    REQUIRE(m1->weights()->size() == m2->weights()->size());
    REQUIRE(m1->layers()->size() == m2->layers()->size());
    size_t differing = 0;
    for (flatbuffers::uoffset_t i = 0; i < m1->weights()->size(); ++i) {
      const fb::Weight* w1 = m1->weights()->Get(i);
      const fb::Weight* w2 = m2->weights()->Get(i);
      CHECK(w1->name()->str() == w2->name()->str());
      CHECK(vec(w1->shape()) == vec(w2->shape()));
      REQUIRE(w1->data()->size() == w2->data()->size());
      differing += std::memcmp(w1->data()->data(), w2->data()->data(), w1->data()->size()) != 0 ? 1 : 0;
    }
    // Every tensor is drawn from the seed: all of them change.
    CHECK(differing == m1->weights()->size());
  }
  SUBCASE("MobileNet-SSD") {
    const std::vector<uint8_t> first = kestrel::mobilenet_ssd(a).serialize();
    CHECK(kestrel::mobilenet_ssd(a).serialize() == first);
    CHECK(kestrel::mobilenet_ssd(b).serialize() != first);
  }
  SUBCASE("the input size does not change the weights") {
    kestrel::ZooOptions small = a;
    small.input_size = 64;
    const kestrel::ModelBuilder full = kestrel::mobilenet_v1(a);
    const kestrel::ModelBuilder reduced = kestrel::mobilenet_v1(small);
    REQUIRE(full.model().weights.size() == reduced.model().weights.size());
    bool same = true;
    for (size_t i = 0; i < full.model().weights.size(); ++i) {
      same = same && full.model().weights[i]->data == reduced.model().weights[i]->data;
    }
    CHECK(same);
    CHECK(reduced.model().inputs[0]->shape == std::vector<int>{3, 64, 64});
  }
}

}  // TEST_SUITE
