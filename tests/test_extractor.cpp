#include <map>

#include "test_util.h"

namespace {

std::vector<std::string> layers_run(kestrel::Extractor& ex, const char* target, kestrel::Mat* out) {
  std::vector<std::string> ran;
  ex.set_observer([&](const kestrel::LayerEvent& e) { ran.emplace_back(e.layer_name); });
  const kestrel::Status s = ex.extract(target, *out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  ex.set_observer(nullptr);
  return ran;
}

}  // namespace

TEST_SUITE("extractor") {
  TEST_CASE("extract runs only the layers the blob needs, once") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 1);
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    kestrel::Mat b, f, again;
    CHECK(layers_run(ex, "b", &b) == std::vector<std::string>{"a", "b"});
    const kestrel::Mat b_copy = b.clone();
    // a also feeds c, on the way to the declared output f: light mode kept it, so f
    // does not compute it again; b is reused.
    CHECK(layers_run(ex, "f", &f) == std::vector<std::string>{"c", "d", "e", "f"});
    CHECK(layers_run(ex, "f", &again).empty());
    // b is no declared output: computing f alone freed a and b once d and c had read
    // them, and b needs both again.
    {
      kestrel::Extractor ex2 = net.create_extractor();
      REQUIRE(ex2.input("data", in).ok());
      kestrel::Mat f2, b2;
      CHECK(layers_run(ex2, "f", &f2).size() == 6);
      CHECK(layers_run(ex2, "b", &b2) == std::vector<std::string>{"a", "b"});
      CHECK(kt::same_bits(f2, f));
      CHECK(kt::same_bits(b2, b_copy));
    }
    CHECK(again.data == f.data);
    // The user's b was neither freed nor overwritten by the later layers.
    CHECK(kt::same_bits(b, b_copy));
    // A new input starts a new inference.
    REQUIRE(ex.input("data", kt::random_input(net, "data", 2)).ok());
    CHECK(layers_run(ex, "f", &again).size() == 6);
    CHECK_FALSE(kt::same_bits(again, f));
  }

  TEST_CASE("a held input of an in-place layer is not overwritten") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 3);
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    kestrel::Mat d, e;
    REQUIRE(ex.extract("d", d).ok());
    const kestrel::Mat d_copy = d.clone();
    REQUIRE(ex.extract("e", e).ok());
    CHECK(e.data != d.data);
    CHECK(kt::same_bits(d, d_copy));
    for (size_t i = 0; i < e.total(); ++i) REQUIRE(e[i] == std::max(d[i], 0.f));
  }

  TEST_CASE("the Extractor keeps its model alive") {
    auto net = std::make_unique<kestrel::Net>();
    REQUIRE(kt::load(*net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(*net, "data", 4);
    kestrel::Extractor ex = net->create_extractor();
    kestrel::Mat before, after;
    REQUIRE(ex.input("data", in).ok());
    REQUIRE(ex.extract("f", before).ok());
    REQUIRE(kt::load(*net, kestrel::mobilenet_v1({1, 32})).ok());  // reload under the Extractor
    net.reset();
    REQUIRE(ex.input("data", in).ok());
    REQUIRE(ex.extract("f", after).ok());
    CHECK(kt::same_bits(before, after));
  }

  TEST_CASE("an empty Net gives Extractors that report it") {
    kestrel::Net net;
    kestrel::Extractor ex = net.create_extractor();
    kestrel::Mat out;
    const kestrel::Status s = ex.extract("x", out);
    CHECK(s.code() == kestrel::ErrorCode::kInvalidArgument);
    CHECK(s.message().find("no model") != std::string::npos);
  }
}

TEST_SUITE("extractor") {
  TEST_CASE("the observer reports each layer's multiply-adds and kernel") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", kt::random_input(net, "data", 5)).ok());
    std::map<std::string, std::pair<double, std::string>> seen;
    ex.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = {e.multiply_adds, e.kernel}; });
    kestrel::Mat f;
    REQUIRE(ex.extract("f", f).ok());
    // 3x3 convolutions on 8x8 maps: out * in * 9 multiply-adds per pixel.
    CHECK(seen.at("a").first == 8.0 * 8 * 4 * 4 * 9);
    CHECK(seen.at("f").first == 8.0 * 8 * 4 * 8 * 9);
    CHECK(seen.at("d").first == 0);  // Concat
    // The kernel name is the registry's, or empty for the layer's own code.
    CHECK((seen.at("a").second.empty() || seen.at("a").second.rfind("f32_", 0) == 0));

    kestrel::Net ref;
    ref.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(kt::load(ref, kt::branch_net()).ok());
    kestrel::Extractor rex = ref.create_extractor();
    REQUIRE(rex.input("data", kt::random_input(ref, "data", 5)).ok());
    seen.clear();
    rex.set_observer([&](const kestrel::LayerEvent& e) { seen[e.layer_name] = {e.multiply_adds, e.kernel}; });
    REQUIRE(rex.extract("f", f).ok());
    CHECK(seen.at("a").second.empty());
  }

  TEST_CASE("set_input_shape prepares the Net for another input size") {
    kestrel::Net net;
    net.set_input_shape("data", kestrel::Shape::make3(12, 6, 4));  // w, h, c
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    kestrel::Shape s;
    REQUIRE(net.input_shape("data", &s).ok());
    CHECK(s == kestrel::Shape::make3(12, 6, 4));
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", kt::random_input(net, "data", 6)).ok());
    kestrel::Mat f;
    REQUIRE(ex.extract("f", f).ok());
    CHECK(f.w == 12);
    CHECK(f.h == 6);
    CHECK(f.c == 4);
    // The model's own shape is refused now, with the prepared one named.
    CHECK_FALSE(ex.input("data", kestrel::Mat(8, 8, 4)).ok());

    // An unknown input name or a shape the layers cannot take: load fails and names
    // it, and the Net keeps its previous model.
    net.set_input_shape("nope", kestrel::Shape::make3(8, 8, 4));
    kestrel::Status st = kt::load(net, kt::branch_net());
    CHECK(st.code() == kestrel::ErrorCode::kInvalidArgument);
    CHECK(st.message().find("'nope'") != std::string::npos);
    REQUIRE(net.input_shape("data", &s).ok());
    CHECK(s == kestrel::Shape::make3(12, 6, 4));
    net.set_input_shape("nope", kestrel::Shape{});
    net.set_input_shape("data", kestrel::Shape::make3(8, 8, 3));  // 3 channels, the convolution wants 4
    st = kt::load(net, kt::branch_net());
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("channels") != std::string::npos);
    net.set_input_shape("data", kestrel::Shape{});
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    REQUIRE(net.input_shape("data", &s).ok());
    CHECK(s == kestrel::Shape::make3(8, 8, 4));
  }
}
