// Helpers of the bad-input tests: small nets, byte surgery, expected-failure checks.
#pragma once
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

namespace bi {

using kestrel::ErrorCode;
using kestrel::Mat;
using kestrel::ModelBuilder;
using kestrel::Net;
using kestrel::Status;
namespace fb = kestrel::fb;

inline bool contains(const std::string& haystack, const std::string& needle) {
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

inline kestrel::ZooOptions small_zoo(uint32_t seed) {
  kestrel::ZooOptions o;
  o.seed = seed;
  o.input_size = 32;
  return o;
}

// Full-size MobileNet v1 (~17 MB), serialized once per test binary.
inline const std::vector<uint8_t>& full_mobilenet_bytes() {
  static const std::vector<uint8_t> bytes = kestrel::mobilenet_v1(kestrel::ZooOptions{}).serialize();
  return bytes;
}

// Small MobileNet v1 (32x32 input, same weights layout): the model that stays loaded
// while bad models are thrown at a Net.
inline const std::vector<uint8_t>& small_mobilenet_bytes() {
  static const std::vector<uint8_t> bytes = kestrel::mobilenet_v1(small_zoo(5)).serialize();
  return bytes;
}

// Runs the net's first output on `in` with a fresh single-threaded Extractor (the
// models here are small; one thread keeps the suite quick when ctest runs suites side
// by side).
inline Status run_net(const Net& net, const Mat& in, Mat* out) {
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(1);
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

inline std::string code_name(ErrorCode c) { return kestrel::error_code_name(c); }

// Loads `bytes` into the resident net, expects failure with `code` and a message
// containing every word in `words`, then checks the resident model still works.
inline void expect_load_failure(Resident& r, const std::vector<uint8_t>& bytes, ErrorCode code,
                         std::initializer_list<std::string> words) {
  const Status s = kt::load_bytes(r.net, bytes);
  INFO("message: " << s.message());
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(s.code() == code, "code " << code_name(s.code()) << ", expected " << code_name(code));
  for (const std::string& w : words) CHECK_MESSAGE(contains(s.message(), w), "message lacks '" << w << "'");
  r.check_unchanged();
}

inline kestrel::fb::LayerParamsUnion relu() { return kt::relu_params(); }

// data[4,8,8] -> conv "a" -> relu "r" -> output "r". Small graphs for crafted errors.
inline ModelBuilder tiny_net() {
  ModelBuilder b;
  b.add_input("data", {4, 8, 8});
  kt::add_conv(b, "a", "data", 4, 4);
  b.add_layer("Activation", "r", {"a"}, {"r"}, relu());
  b.add_output("r");
  return b;
}

inline fb::ConvolutionParamT* conv_param(ModelBuilder& b, const std::string& layer) {
  for (auto& l : b.model().layers) {
    if (l->name == layer) {
      REQUIRE(l->params.AsConvolutionParam() != nullptr);
      return l->params.AsConvolutionParam();
    }
  }
  FAIL("no layer " << layer);
  return nullptr;
}

inline fb::LayerT* layer_named(ModelBuilder& b, const std::string& name) {
  for (auto& l : b.model().layers) {
    if (l->name == name) return l.get();
  }
  FAIL("no layer " << name);
  return nullptr;
}

// Byte ranges [begin, end) of the weights' data payloads inside a serialized model.
inline std::vector<std::pair<size_t, size_t>> weight_payload_ranges(const std::vector<uint8_t>& bytes) {
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
inline std::vector<size_t> complement_offsets(size_t size, const std::vector<std::pair<size_t, size_t>>& ranges) {
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

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  REQUIRE(f.good());
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

}  // namespace bi
