// Bad models never crash the loader: truncated, flipped and crafted files. Each
// case gets a non-ok Status naming the problem; the Net keeps its previous model.
#include "bad_input_util.h"

using namespace bi;

TEST_SUITE("bad_input") {

TEST_CASE("truncated models fail to load and keep the previous model") {
  const std::vector<uint8_t>& full = full_mobilenet_bytes();
  REQUIRE(full.size() > 1000000);
  AlignedBytes buf(full);
  Resident r(small_mobilenet_bytes());
  constexpr int kCuts = 64;
  for (int i = 0; i < kCuts; ++i) {
    const size_t len = static_cast<size_t>(static_cast<unsigned long long>(full.size() - 1) * i / (kCuts - 1));
    CAPTURE(len);
    const Status s = r.net.load(buf.data(), len);
    INFO("message: " << s.message());
    REQUIRE_FALSE(s.ok());
    const ErrorCode want = len == 0 ? ErrorCode::kInvalidArgument : ErrorCode::kCorruptModel;
    CHECK_MESSAGE(s.code() == want, "code " << code_name(s.code()) << ", expected " << code_name(want));
    CHECK_FALSE(s.message().empty());
    if (len >= 8) CHECK(contains(s.message(), "truncated"));
    // The full-size model was never accepted: the net still has the 32x32 model.
    kestrel::Shape shape;
    REQUIRE(r.net.input_shape("data", &shape).ok());
    CHECK(shape == kestrel::Shape::make3(32, 32, 3));
  }
  r.check_unchanged();
  // The untruncated buffer does load (so the failures above were the truncation's).
  Net whole;
  CHECK(whole.load(buf.data(), buf.size()).ok());
}

TEST_CASE("random byte flips never crash the loader") {
  const std::vector<uint8_t>& full = full_mobilenet_bytes();
  const std::vector<size_t> structural = complement_offsets(full.size(), weight_payload_ranges(full));
  REQUIRE(!structural.empty());
  MESSAGE("model: " << full.size() << " bytes, " << structural.size() << " outside weight payloads");

  // Declared before the Net that borrows them, so that they outlive it.
  AlignedBytes buf(full);
  AlignedBytes resident_bytes(small_mobilenet_bytes());
  Resident r(small_mobilenet_bytes());
  size_t baseline_plan = 0;
  {
    Net ref;
    REQUIRE(kt::load_bytes(ref, full).ok());
    baseline_plan = ref.planned_bytes();
  }
  // Reload the resident model from a buffer that outlives the Net (borrowed, no copy).
  auto restore_resident = [&] { REQUIRE(r.net.load(resident_bytes.data(), resident_bytes.size()).ok()); };
  restore_resident();

  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> flip_value(1, 255);
  std::uniform_int_distribution<size_t> pick_structural(0, structural.size() - 1);
  std::uniform_int_distribution<size_t> pick_any(0, full.size() - 1);
  constexpr int kFlips = 1000, kStructural = 900;
  int loaded = 0, failed = 0, loaded_structural = 0, inferences = 0, inference_failures = 0, skipped_large = 0;

  for (int i = 0; i < kFlips; ++i) {
    const bool in_structure = i < kStructural;
    const size_t pos = in_structure ? structural[pick_structural(rng)] : pick_any(rng);
    const uint8_t mask = static_cast<uint8_t>(flip_value(rng));
    CAPTURE(i);
    CAPTURE(pos);
    CAPTURE(static_cast<int>(mask));
    buf.data()[pos] ^= mask;
    const Status s = r.net.load(buf.data(), buf.size());
    if (!s.ok()) {
      ++failed;
      INFO("message: " << s.message());
      CHECK_FALSE(s.message().empty());
      CHECK(s.code() != ErrorCode::kInternal);
      kestrel::Shape shape;
      REQUIRE(r.net.input_shape("data", &shape).ok());
      CHECK(shape == kestrel::Shape::make3(32, 32, 3));  // still the resident model
    } else {
      ++loaded;
      loaded_structural += in_structure ? 1 : 0;
      if (inferences < 5) {
        // Only models whose feature maps stay within a few times the real one: a flip
        // may legitimately ask for terabytes, which is not what this test is about.
        kestrel::Shape in_shape;
        const std::vector<std::string> inputs = r.net.input_names();
        REQUIRE(!inputs.empty());
        REQUIRE(r.net.input_shape(inputs[0], &in_shape).ok());
        if (r.net.planned_bytes() <= 4 * baseline_plan && in_shape.bytes() <= (size_t{64} << 20)) {
          ++inferences;
          Mat in = kt::random_mat(in_shape, 100 + i);
          Mat out;
          const Status rs = run_net(r.net, in, &out);
          if (!rs.ok()) {
            ++inference_failures;
            CHECK_FALSE(rs.message().empty());
            CHECK(rs.code() != ErrorCode::kInternal);
          }
        } else {
          ++skipped_large;
        }
      }
      // Back to the resident model before the flipped buffer (which the Net borrows)
      // is restored.
      restore_resident();
    }
    buf.data()[pos] ^= mask;
  }
  MESSAGE("byte flips: " << loaded << " loaded (" << loaded_structural << " of them structural), " << failed
                         << " failed; " << inferences << " inferences run on flipped models (" << inference_failures
                         << " returned an error), " << skipped_large << " skipped as too large");
  // Structural bytes are mostly offsets, counts, indices and parameters: a fair share of
  // flips there must be caught.
  CHECK(failed > kStructural / 10);
  r.check_unchanged();
}

TEST_CASE("unknown layer type") {
  Resident r(kt::branch_net().serialize());
  ModelBuilder b;
  b.add_input("data", {4, 8, 8});
  kt::add_conv(b, "a", "data", 4, 4);
  b.add_layer("NoSuchLayer", "mystery", {"a"}, {"mystery"}, relu());
  b.add_output("mystery");
  expect_load_failure(r, b.serialize(), ErrorCode::kUnsupported, {"unknown layer type", "NoSuchLayer", "mystery"});
}

TEST_CASE("blob index out of range") {
  Resident r(kt::branch_net().serialize());
  SUBCASE("bottom") {
    ModelBuilder b = kt::branch_net();
    layer_named(b, "c")->bottoms[0] = 9999;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"out of range", "'c'", "9999"});
  }
  SUBCASE("top") {
    ModelBuilder b = kt::branch_net();
    layer_named(b, "b")->tops[0] = 9999;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"out of range", "'b'", "9999"});
  }
  SUBCASE("input") {
    ModelBuilder b = kt::branch_net();
    b.model().inputs[0]->blob = 9999;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"out of range", "9999"});
  }
  SUBCASE("output") {
    ModelBuilder b = kt::branch_net();
    b.model().outputs[0] = 9999;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"out of range", "9999"});
  }
  SUBCASE("weight") {
    ModelBuilder b = kt::branch_net();
    layer_named(b, "f")->weights[0] = 9999;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"out of range", "'f'", "weight"});
  }
}

TEST_CASE("graph errors") {
  Resident r(kt::branch_net().serialize());

  SUBCASE("blob produced twice") {
    ModelBuilder b = kt::branch_net();
    // Layer "c" now also writes "b".
    layer_named(b, "c")->tops[0] = layer_named(b, "b")->tops[0];
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"already produced", "'b'", "'c'"});
  }
  SUBCASE("layer writes a network input") {
    ModelBuilder b = tiny_net();
    b.add_layer("Activation", "clobber", {"r"}, {"data"}, relu());
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"already produced", "'data'", "clobber"});
  }
  SUBCASE("layer reads a blob nothing produces") {
    ModelBuilder b = tiny_net();
    b.add_layer("Activation", "reader", {"ghost"}, {"reader"}, relu());
    b.add_output("reader");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"ghost", "nothing produces", "reader"});
  }
  SUBCASE("cycle") {
    ModelBuilder b;
    b.add_input("data", {4, 8, 8});
    // p = concat(data, q); q = relu(p): each waits for the other.
    b.add_layer("Concat", "p", {"data", "q"}, {"p"}, kt::concat_params(0));
    b.add_layer("Activation", "q", {"p"}, {"q"}, relu());
    b.add_output("p");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"cycle"});
  }
  SUBCASE("self loop") {
    ModelBuilder b = tiny_net();
    b.add_layer("Activation", "loop", {"loop"}, {"loop"}, relu());
    b.add_output("loop");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"cycle", "loop"});
  }
  SUBCASE("output never produced") {
    ModelBuilder b = tiny_net();
    b.add_output("nowhere");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"nowhere", "never produced"});
  }
  SUBCASE("no inputs") {
    ModelBuilder b = kt::branch_net();
    b.model().inputs.clear();
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"no inputs"});
  }
  SUBCASE("no outputs") {
    ModelBuilder b = kt::branch_net();
    b.model().outputs.clear();
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"no outputs"});
  }
  SUBCASE("no layers") {
    ModelBuilder b = kt::branch_net();
    b.model().layers.clear();
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"no layers"});
  }
  SUBCASE("duplicate blob name") {
    ModelBuilder b = kt::branch_net();
    b.model().blobs[2]->name = b.model().blobs[1]->name;
    const std::string dup = b.model().blobs[1]->name;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"used twice", "'" + dup + "'"});
  }
}

TEST_CASE("file format errors") {
  Resident r(kt::branch_net().serialize());

  SUBCASE("format version 99") {
    ModelBuilder b = kt::branch_net();
    b.model().format_version = 99;
    expect_load_failure(r, b.serialize(), ErrorCode::kUnsupported, {"version 99"});
  }
  SUBCASE("format version 0") {
    ModelBuilder b = kt::branch_net();
    b.model().format_version = 0;
    expect_load_failure(r, b.serialize(), ErrorCode::kUnsupported, {"version 0"});
  }
  SUBCASE("wrong file identifier") {
    std::vector<uint8_t> bytes = kt::branch_net().serialize();
    REQUIRE(bytes.size() > 8);
    REQUIRE(std::memcmp(bytes.data() + 4, "KST1", 4) == 0);
    std::memcpy(bytes.data() + 4, "XXXX", 4);
    expect_load_failure(r, bytes, ErrorCode::kCorruptModel, {"identifier"});
  }
  SUBCASE("too small to be a model") {
    const std::vector<uint8_t> bytes = {'K', 'S', 'T'};
    expect_load_failure(r, bytes, ErrorCode::kCorruptModel, {"too small"});
  }
}

TEST_CASE("weight and parameter errors") {
  Resident r(kt::branch_net().serialize());

  SUBCASE("weight data size does not match its shape") {
    ModelBuilder b = tiny_net();
    auto& w = b.model().weights[0];
    const std::string name = w->name;
    w->data.resize(w->data.size() - sizeof(float));
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {name, "bytes"});
  }
  SUBCASE("weight with a negative dimension") {
    ModelBuilder b = tiny_net();
    auto& w = b.model().weights[0];
    const std::string name = w->name;
    w->shape[1] = -w->shape[1];
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {name, "shape"});
  }
  SUBCASE("convolution num_output disagrees with the kernel weight") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->num_output = 8;  // weights are [4,4,3,3]
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "Convolution", "num_output"});
  }
  SUBCASE("convolution kernel size disagrees with the kernel weight") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->kernel_h = 5;
    conv_param(b, "a")->pad_top = conv_param(b, "a")->pad_bottom = 2;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "kernel"});
  }
  SUBCASE("convolution weight count does not match num_output * in * k * k") {
    // A consistent [4,3,3,3] tensor, but the input has 4 channels: 4*3*3*3 values
    // where num_output * in * k * k = 4*4*3*3 are needed.
    ModelBuilder b;
    b.add_input("data", {4, 8, 8});
    const uint32_t wi = b.add_weight("k/w", {4, 3, 3, 3}, std::vector<float>(4 * 3 * 3 * 3, 0.1f));
    const uint32_t bi = b.add_weight("k/b", {4}, std::vector<float>(4, 0.f));
    b.add_layer("Convolution", "k", {"data"}, {"k"}, kt::conv_params(4, 3, 1, 1, false), {wi, bi});
    b.add_output("k");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'k'", "channels"});
  }
  SUBCASE("convolution kernel stored flat") {
    ModelBuilder b = tiny_net();
    b.model().weights[0]->shape = {4 * 4 * 3 * 3};
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "kernel weight shape"});
  }
  SUBCASE("convolution bias count") {
    ModelBuilder b = tiny_net();
    b.model().weights[1]->shape = {3};
    b.model().weights[1]->data.resize(3 * sizeof(float));
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "bias"});
  }
  SUBCASE("convolution missing its weights") {
    ModelBuilder b = tiny_net();
    layer_named(b, "a")->weights.clear();
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "weight"});
  }
  SUBCASE("stride 0") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->stride_w = 0;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "stride_w"});
  }
  SUBCASE("group 0") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->group = 0;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "group"});
  }
  SUBCASE("negative group") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->group = -4;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "group"});
  }
  SUBCASE("dilation 0") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->dilation_h = 0;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "dilation_h"});
  }
  SUBCASE("num_output not divisible by group") {
    ModelBuilder b = tiny_net();
    conv_param(b, "a")->group = 3;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "divisible", "group"});
  }
  SUBCASE("pooling stride 0") {
    ModelBuilder b = tiny_net();
    fb::PoolingParamT p;
    p.kernel_h = p.kernel_w = 2;
    p.stride_h = p.stride_w = 0;
    fb::LayerParamsUnion u;
    u.Set(std::move(p));
    b.add_layer("Pooling", "pool", {"r"}, {"pool"}, std::move(u));
    b.add_output("pool");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'pool'", "stride"});
  }
  SUBCASE("wrong parameter table for the layer type") {
    ModelBuilder b = tiny_net();
    layer_named(b, "a")->params = kt::concat_params(0);
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'a'", "ConvolutionParam"});
  }
  SUBCASE("I8 weight whose bytes are sized for fp32") {
    ModelBuilder b = tiny_net();
    b.model().weights[0]->dtype = fb::DType::I8;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"a/w", "int8 values"});
  }
  SUBCASE("F16 weight whose bytes are sized for fp32") {
    ModelBuilder b = tiny_net();
    b.model().weights[0]->dtype = fb::DType::F16;
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"a/w", "halves"});
  }
}

TEST_CASE("oversized input shapes fail at load") {
  Resident r(kt::branch_net().serialize());
  // Each shape is far beyond any real network; load must refuse it rather than try to
  // allocate it later. The only layer accepts any shape, so the size check is all that
  // stands between the file and an allocation.
  const std::vector<std::vector<int>> shapes = {
      {3, 1 << 30, 1 << 30},           // 12 * 2^60 bytes
      {16, 1 << 30, 1 << 30},          // 2^64 values: wraps to 0 in 64-bit arithmetic
      {1 << 30, 1 << 30, 1 << 30},     // 2^90 values
      {1 << 20, 1 << 20},              // 2-D, 4 TB
      {4, 1 << 16, 1 << 16, 1 << 16},  // 4-D, 4 PB
  };
  for (const std::vector<int>& dims : shapes) {
    std::string text;
    for (int d : dims) text += std::to_string(d) + " ";
    SUBCASE(("shape " + text).c_str()) {
      ModelBuilder b;
      b.add_input("huge", dims);
      b.add_layer("Activation", "act", {"huge"}, {"act"}, relu());
      b.add_output("act");
      expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"huge"});
    }
  }
  SUBCASE("non-positive dimension") {
    ModelBuilder b;
    b.add_input("data", {3, 0, 8});
    b.add_layer("Activation", "act", {"data"}, {"act"}, relu());
    b.add_output("act");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'data'", "dimension"});
  }
  SUBCASE("five dimensions") {
    ModelBuilder b;
    b.add_input("data", {1, 2, 3, 4, 5});
    b.add_layer("Activation", "act", {"data"}, {"act"}, relu());
    b.add_output("act");
    expect_load_failure(r, b.serialize(), ErrorCode::kCorruptModel, {"'data'", "dims"});
  }
}

}  // TEST_SUITE
