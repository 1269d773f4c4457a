// Bad input never crashes: damaged and crafted model files, wrong API arguments, a
// failing allocator. Every case must return a non-ok Status whose message names the
// problem, and the Net / Extractor must stay usable afterwards (a failed load keeps the
// model loaded before it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

using kestrel::ErrorCode;
using kestrel::Mat;
using kestrel::ModelBuilder;
using kestrel::Net;
using kestrel::Status;
namespace fb = kestrel::fb;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A byte buffer that starts on a 64-byte boundary, so that Net::load borrows it
// instead of copying (17 MB copied a thousand times would dominate the suite). The
// caller must keep it unchanged while a Net or Extractor built from it lives.
class AlignedBytes {
 public:
  explicit AlignedBytes(const std::vector<uint8_t>& src)
      : size_(src.size()),
        data_(static_cast<uint8_t*>(::operator new(std::max<size_t>(size_, 1), std::align_val_t(kestrel::kAlignment)))) {
    std::memcpy(data_.get(), src.data(), size_);
  }
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t(kestrel::kAlignment)); }
  };
  size_t size_;
  std::unique_ptr<uint8_t, Free> data_;
};

kestrel::ZooOptions small_zoo(uint32_t seed) {
  kestrel::ZooOptions o;
  o.seed = seed;
  o.input_size = 32;
  return o;
}

// Full-size MobileNet v1 (~17 MB), serialized once per test binary.
const std::vector<uint8_t>& full_mobilenet_bytes() {
  static const std::vector<uint8_t> bytes = kestrel::mobilenet_v1(kestrel::ZooOptions{}).serialize();
  return bytes;
}

// Small MobileNet v1 (32x32 input, same weights layout): the model that stays loaded
// while bad models are thrown at a Net.
const std::vector<uint8_t>& small_mobilenet_bytes() {
  static const std::vector<uint8_t> bytes = kestrel::mobilenet_v1(small_zoo(5)).serialize();
  return bytes;
}

// Runs the net's first output on `in` with a fresh Extractor.
Status run_net(const Net& net, const Mat& in, Mat* out) {
  kestrel::Extractor ex = net.create_extractor();
  const std::vector<std::string> inputs = net.input_names();
  const std::vector<std::string> outputs = net.output_names();
  if (inputs.empty() || outputs.empty()) return Status(ErrorCode::kInternal, "net has no inputs or outputs");
  Status s = ex.input(inputs[0], in);
  if (!s.ok()) return s;
  return ex.extract(outputs[0], *out);
}

// A Net holding a known-good model and the output it gives for a fixed input, to check
// that failed loads leave that model in place.
struct Resident {
  Net net;
  Mat input;
  Mat expected;

  explicit Resident(const std::vector<uint8_t>& bytes) {
    REQUIRE(kt::load_bytes(net, bytes).ok());
    input = kt::random_input(net, net.input_names().at(0), 11);
    REQUIRE(run_net(net, input, &expected).ok());
    REQUIRE(!expected.empty());
  }

  // The model loaded at construction is still there and computes the same values.
  void check_unchanged() const {
    Mat out;
    const Status s = run_net(net, input, &out);
    CHECK_MESSAGE(s.ok(), s.message());
    CHECK_MESSAGE(kt::same_bits(out, expected), "the previously loaded model no longer gives the same output");
  }
};

std::string code_name(ErrorCode c) { return kestrel::error_code_name(c); }

// Loads `bytes` into the resident net, expects failure with `code` and a message
// containing every word in `words`, then checks the resident model still works.
void expect_load_failure(Resident& r, const std::vector<uint8_t>& bytes, ErrorCode code,
                         std::initializer_list<std::string> words) {
  const Status s = kt::load_bytes(r.net, bytes);
  INFO("message: " << s.message());
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(s.code() == code, "code " << code_name(s.code()) << ", expected " << code_name(code));
  for (const std::string& w : words) CHECK_MESSAGE(contains(s.message(), w), "message lacks '" << w << "'");
  r.check_unchanged();
}

kestrel::fb::LayerParamsUnion relu() { return kt::relu_params(); }

// data[4,8,8] -> conv "a" -> relu "r" -> output "r". Small graphs for crafted errors.
ModelBuilder tiny_net() {
  ModelBuilder b;
  b.add_input("data", {4, 8, 8});
  kt::add_conv(b, "a", "data", 4, 4);
  b.add_layer("Activation", "r", {"a"}, {"r"}, relu());
  b.add_output("r");
  return b;
}

fb::ConvolutionParamT* conv_param(ModelBuilder& b, const std::string& layer) {
  for (auto& l : b.model().layers) {
    if (l->name == layer) {
      REQUIRE(l->params.AsConvolutionParam() != nullptr);
      return l->params.AsConvolutionParam();
    }
  }
  FAIL("no layer " << layer);
  return nullptr;
}

fb::LayerT* layer_named(ModelBuilder& b, const std::string& name) {
  for (auto& l : b.model().layers) {
    if (l->name == name) return l.get();
  }
  FAIL("no layer " << name);
  return nullptr;
}

// Byte ranges [begin, end) of the weights' data payloads inside a serialized model.
std::vector<std::pair<size_t, size_t>> weight_payload_ranges(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<size_t, size_t>> ranges;
  const fb::Model* m = fb::GetModel(bytes.data());
  REQUIRE(m->weights() != nullptr);
  for (const fb::Weight* w : *m->weights()) {
    if (!w->data() || w->data()->size() == 0) continue;
    const size_t begin = static_cast<size_t>(w->data()->data() - bytes.data());
    ranges.emplace_back(begin, begin + w->data()->size());
  }
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

// Every byte offset outside the given (sorted, disjoint) ranges.
std::vector<size_t> complement_offsets(size_t size, const std::vector<std::pair<size_t, size_t>>& ranges) {
  std::vector<size_t> out;
  size_t pos = 0;
  for (const auto& r : ranges) {
    for (; pos < r.first; ++pos) out.push_back(pos);
    pos = std::max(pos, r.second);
  }
  for (; pos < size; ++pos) out.push_back(pos);
  return out;
}

class FailingAllocator final : public kestrel::Allocator {
 public:
  void* allocate(size_t) override {
    ++attempts;
    return nullptr;
  }
  void deallocate(void* p) override {
    if (p) ++bad_frees;
  }
  long attempts = 0;
  long bad_frees = 0;
};

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("kestrel_bad_input_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  REQUIRE(f.good());
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

}  // namespace

TEST_SUITE("bad_input") {

TEST_CASE("truncated models fail to load and keep the previous model") {
  const std::vector<uint8_t>& full = full_mobilenet_bytes();
  REQUIRE(full.size() > 1000000);
  Resident r(small_mobilenet_bytes());
  AlignedBytes buf(full);
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

  Resident r(small_mobilenet_bytes());
  size_t baseline_plan = 0;
  {
    Net ref;
    REQUIRE(kt::load_bytes(ref, full).ok());
    baseline_plan = ref.planned_bytes();
  }
  AlignedBytes buf(full);
  AlignedBytes resident_bytes(small_mobilenet_bytes());
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
  CHECK(loaded + failed == kFlips);
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
  SUBCASE("weight dtype F16") {
    ModelBuilder b = tiny_net();
    b.model().weights[0]->dtype = fb::DType::F16;
    expect_load_failure(r, b.serialize(), ErrorCode::kUnsupported, {"F16", "a/w"});
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

TEST_CASE("wrong Extractor arguments leave it usable") {
  Net net;
  REQUIRE(kt::load(net, kestrel::mobilenet_v1(small_zoo(3))).ok());
  const Mat good = kt::random_input(net, "data", 21);
  Mat expected;
  REQUIRE(run_net(net, good, &expected).ok());

  kestrel::Extractor ex = net.create_extractor();
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
  const ModelBuilder model = kestrel::mobilenet_v1(small_zoo(9));
  Net net;
  REQUIRE(kt::load(net, model).ok());
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
      // The message names the blob it could not allocate.
      bool names_blob = false;
      for (const auto& blob : model.model().blobs) names_blob = names_blob || contains(s.message(), "'" + blob->name + "'");
      CHECK_MESSAGE(names_blob, "no blob of the model is named");
      CHECK(contains(s.message(), "blob"));
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
    CHECK(contains(s.message(), "blob"));
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
