// Bad API use and missing resources: wrong names and shapes, no model, bad files,
// a failing allocator. Clear errors, and the Extractor stays usable.
#include "bad_input_util.h"

using namespace bi;

TEST_SUITE("bad_input") {

TEST_CASE("wrong Extractor arguments leave it usable") {
  Net net;
  REQUIRE(kt::load_bytes(net, small_mobilenet_bytes()).ok());
  const Mat good = kt::random_input(net, "data", 21);
  Mat expected;
  REQUIRE(run_net(net, good, &expected).ok());

  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(1);
  // After each error, a normal inference on the same Extractor gives the right values.
  auto infer_ok = [&] {
    Mat out;
    const Status si = ex.input("data", good);
    REQUIRE_MESSAGE(si.ok(), si.message());
    const Status se = ex.extract("prob", out);
    REQUIRE_MESSAGE(se.ok(), se.message());
    CHECK(kt::same_bits(out, expected));
  };

  SUBCASE("extract before any input was set") {
    Mat out;
    const Status s = ex.extract("prob", out);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "'data'"));
    CHECK(contains(s.message(), "not set"));
    CHECK(out.empty());
    infer_ok();
  }
  SUBCASE("wrong input name") {
    const Status s = ex.input("image", good);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "'image'"));
    CHECK(contains(s.message(), "not an input"));
    CHECK(contains(s.message(), "'data'"));  // lists the real inputs
    infer_ok();
  }
  SUBCASE("an intermediate blob is not an input") {
    const Status s = ex.input("conv1", good);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "not an input"));
    infer_ok();
  }
  SUBCASE("wrong input shape") {
    const Mat wrong = kt::random_mat(kestrel::Shape::make3(31, 32, 3), 4);
    const Status s = ex.input("data", wrong);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "expected shape"));
    CHECK(contains(s.message(), "[3,32,32]"));
    CHECK(contains(s.message(), "[3,32,31]"));
    infer_ok();
  }
  SUBCASE("wrong number of dims") {
    const Mat flat = kt::random_mat(kestrel::Shape::make1(3 * 32 * 32), 4);
    const Status s = ex.input("data", flat);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "expected shape"));
    infer_ok();
  }
  SUBCASE("empty Mat") {
    const Status s = ex.input("data", Mat());
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "'data'"));
    CHECK(contains(s.message(), "empty"));
    infer_ok();
  }
  SUBCASE("a bad input does not replace the good one") {
    REQUIRE(ex.input("data", good).ok());
    CHECK_FALSE(ex.input("data", Mat()).ok());
    Mat out;
    const Status s = ex.extract("prob", out);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(kt::same_bits(out, expected));
  }
  SUBCASE("extract of an unknown blob") {
    REQUIRE(ex.input("data", good).ok());
    Mat out = good;  // extract must release what `out` held
    const Status s = ex.extract("no_such_blob", out);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(contains(s.message(), "no_such_blob"));
    CHECK(out.empty());
    // Still ready for the next extract, with the input set before the error.
    const Status s2 = ex.extract("prob", out);
    REQUIRE_MESSAGE(s2.ok(), s2.message());
    CHECK(kt::same_bits(out, expected));
    infer_ok();
  }
}

TEST_CASE("Net without a model") {
  Net net;
  CHECK(net.empty());
  kestrel::Shape shape;
  CHECK_FALSE(net.input_shape("data", &shape).ok());
  kestrel::Extractor ex = net.create_extractor();
  const Mat m = kt::random_mat(kestrel::Shape::make3(8, 8, 4), 1);
  const Status si = ex.input("data", m);
  CHECK_FALSE(si.ok());
  CHECK_FALSE(si.message().empty());
  Mat out;
  const Status se = ex.extract("f", out);
  CHECK_FALSE(se.ok());
  CHECK_FALSE(se.message().empty());
  // A failed load into an empty Net leaves it empty.
  CHECK_FALSE(net.load(nullptr, 0).ok());
  CHECK(net.empty());
}

TEST_CASE("model files") {
  Resident r(kt::branch_net().serialize());
  TempDir dir;

  SUBCASE("missing file") {
    const std::string path = dir.file("does_not_exist.kst");
    const Status s = r.net.load(path);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kNotFound);
    CHECK(contains(s.message(), path));
  }
  SUBCASE("a directory") {
    const Status s = r.net.load(dir.path());
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kIoError);
    CHECK(contains(s.message(), dir.path()));
  }
  SUBCASE("empty file") {
    const std::string path = dir.file("empty.kst");
    write_file(path, {});
    const Status s = r.net.load(path);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), path));
    CHECK(contains(s.message(), "empty"));
  }
  SUBCASE("random bytes") {
    const std::string path = dir.file("noise.kst");
    std::mt19937 rng(99);
    std::vector<uint8_t> noise(4096);
    for (uint8_t& v : noise) v = static_cast<uint8_t>(rng());
    write_file(path, noise);
    const Status s = r.net.load(path);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), path));
  }
  SUBCASE("random bytes behind a valid identifier") {
    const std::string path = dir.file("noise_kst1.kst");
    std::mt19937 rng(7);
    std::vector<uint8_t> noise(4096);
    for (uint8_t& v : noise) v = static_cast<uint8_t>(rng());
    std::memcpy(noise.data() + 4, "KST1", 4);
    write_file(path, noise);
    const Status s = r.net.load(path);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kCorruptModel);
    CHECK(contains(s.message(), path));
  }
  SUBCASE("a valid file still loads") {
    const std::string path = dir.file("tiny.kst");
    REQUIRE(tiny_net().save(path).ok());
    Net other;
    const Status s = other.load(path);
    CHECK_MESSAGE(s.ok(), s.message());
  }
  r.check_unchanged();
}

TEST_CASE("an allocator that always fails") {
  FailingAllocator failing;  // outlives every Extractor below
  const std::vector<uint8_t>& bytes = small_mobilenet_bytes();
  Net net;
  REQUIRE(kt::load_bytes(net, bytes).ok());
  net.option().num_threads = 1;  // copied into every Extractor below
  const Mat in = kt::random_input(net, "data", 5);
  Mat expected;
  REQUIRE(run_net(net, in, &expected).ok());

  SUBCASE("pool strategy (default)") {
    net.option().allocator = &failing;
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    for (int attempt = 0; attempt < 2; ++attempt) {  // a second try fails the same way
      Mat out;
      const Status s = ex.extract("prob", out);
      INFO("message: " << s.message());
      REQUIRE_FALSE(s.ok());
      CHECK(s.code() == ErrorCode::kOutOfMemory);
      CHECK(out.empty());
      // The message names what it could not allocate: a blob of the model, or the
      // layers' scratch (allocated first when the fast kernels need one).
      bool names_blob = false;
      for (const fb::Blob* blob : *fb::GetModel(bytes.data())->blobs()) {
        names_blob = names_blob || contains(s.message(), "'" + blob->name()->str() + "'");
      }
      const bool names_workspace = contains(s.message(), "layer workspace");
      const bool named = (names_blob && contains(s.message(), "blob")) || names_workspace;
      CHECK_MESSAGE(named, "names neither a blob of the model nor the layer workspace");
    }
    CHECK(failing.attempts > 0);
  }
  SUBCASE("no pooling") {
    net.option().allocator = &failing;
    net.option().memory = kestrel::MemoryStrategy::kNone;
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    Mat out;
    const Status s = ex.extract("prob", out);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kOutOfMemory);
    const bool named = contains(s.message(), "blob") || contains(s.message(), "layer workspace");
    CHECK(named);
  }
  SUBCASE("static plan") {
    net.option().allocator = &failing;
    net.option().memory = kestrel::MemoryStrategy::kPlan;
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    Mat out;
    const Status s = ex.extract("prob", out);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kOutOfMemory);
    CHECK_FALSE(s.message().empty());
  }
  CHECK(failing.bad_frees == 0);

  // A working allocator on a new Extractor gives the right output again.
  kt::CountingAllocator counting;
  net.option().allocator = &counting;
  {
    kestrel::Extractor ex = net.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    Mat out;
    const Status s = ex.extract("prob", out);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(kt::same_bits(out, expected));
  }
  CHECK(counting.allocations > 0);
  CHECK(counting.allocations == counting.deallocations);
  net.option().allocator = nullptr;
}

}  // TEST_SUITE
