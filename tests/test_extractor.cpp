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
    // Light mode freed a once b was done with it, so f recomputes it; b is reused.
    CHECK(layers_run(ex, "f", &f) == std::vector<std::string>{"a", "c", "d", "e", "f"});
    CHECK(layers_run(ex, "f", &again).empty());
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
