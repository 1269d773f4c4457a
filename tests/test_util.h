// Helpers shared by the core tests: small graphs, counting allocators, Mat compare.
#pragma once
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kestrel/builder.h"
#include "kestrel/model_zoo.h"
#include "kestrel/net.h"
#include "mat_util.h"

namespace kt {

// Counts calls into the default allocator (the "system" under an Extractor).
class CountingAllocator final : public kestrel::Allocator {
 public:
  void* allocate(size_t size) override {
    ++allocations;
    return kestrel::default_allocator()->allocate(size);
  }
  void deallocate(void* p) override {
    ++deallocations;
    kestrel::default_allocator()->deallocate(p);
  }
  std::atomic<long> allocations{0};
  std::atomic<long> deallocations{0};
};

inline kestrel::Mat random_mat(const kestrel::Shape& s, uint32_t seed) {
  kestrel::Mat m;
  REQUIRE(m.create(s));
  kestrel_test::fill_uniform(m, seed);
  return m;
}

inline kestrel::Mat random_input(const kestrel::Net& net, const std::string& name, uint32_t seed) {
  kestrel::Shape s;
  REQUIRE(net.input_shape(name, &s).ok());
  return random_mat(s, seed);
}

using kestrel_test::same_bits;

inline kestrel::fb::LayerParamsUnion conv_params(int out, int kernel, int stride, int pad, bool relu) {
  kestrel::fb::ConvolutionParamT p;
  p.num_output = out;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.bias_term = true;
  p.activation = std::make_unique<kestrel::fb::ActivationT>();
  p.activation->type = relu ? kestrel::fb::ActivationType::ReLU : kestrel::fb::ActivationType::None;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// Adds a 3x3 (or kxk) convolution with seeded weights.
inline void add_conv(kestrel::ModelBuilder& b, const std::string& name, const std::string& bottom, int in, int out,
                     int kernel = 3, uint32_t seed = 7) {
  std::mt19937 rng(seed + static_cast<uint32_t>(name.size()));
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> w(size_t(out) * in * kernel * kernel), bias(out);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  const uint32_t wi = b.add_weight(name + "/w", {out, in, kernel, kernel}, w);
  const uint32_t bi = b.add_weight(name + "/b", {out}, bias);
  b.add_layer("Convolution", name, {bottom}, {name}, conv_params(out, kernel, 1, kernel / 2, false), {wi, bi});
}

// Adds an InnerProduct of num_output outputs over num_input values, with bias, weights
// seeded uniform in [-0.3, 0.3].
inline void add_inner_product(kestrel::ModelBuilder& b, const std::string& name, const std::string& bottom,
                              int num_output, int num_input, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> w(size_t(num_output) * num_input), bias(num_output);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  kestrel::fb::InnerProductParamT fc;
  fc.num_output = num_output;
  fc.bias_term = true;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(fc));
  b.add_layer("InnerProduct", name, {bottom}, {name}, std::move(u),
              {b.add_weight(name + "/w", {num_output, num_input}, w), b.add_weight(name + "/b", {num_output}, bias)});
}

// Adds a 3x3 (or kxk) depthwise convolution (padding k / 2, fused ReLU) with seeded weights.
inline void add_depthwise(kestrel::ModelBuilder& b, const std::string& name, const std::string& bottom, int channels,
                          int stride, uint32_t seed, int kernel = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> w(size_t(channels) * kernel * kernel), bias(channels);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  const uint32_t wi = b.add_weight(name + "/w", {channels, 1, kernel, kernel}, w);
  const uint32_t bi = b.add_weight(name + "/b", {channels}, bias);
  kestrel::fb::LayerParamsUnion u = conv_params(channels, kernel, stride, kernel / 2, true);
  u.AsConvolutionParam()->group = channels;
  b.add_layer("Convolution", name, {bottom}, {name}, std::move(u), {wi, bi});
}

inline kestrel::fb::LayerParamsUnion relu_params() {
  kestrel::fb::ActivationParamT p;
  p.activation = std::make_unique<kestrel::fb::ActivationT>();
  p.activation->type = kestrel::fb::ActivationType::ReLU;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

inline kestrel::fb::LayerParamsUnion concat_params(int axis) {
  kestrel::fb::ConcatParamT p;
  p.axis = axis;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// data[4,8,8] -> a -> {b, c} -> concat d -> relu e (in place) -> out f
// Feature maps: a,b,c [4,8,8]; d [8,8,8]; e [8,8,8] (in place over d); f [4,8,8].
inline kestrel::ModelBuilder branch_net() {
  kestrel::ModelBuilder b;
  b.add_input("data", {4, 8, 8});
  add_conv(b, "a", "data", 4, 4);
  add_conv(b, "b", "a", 4, 4);
  add_conv(b, "c", "a", 4, 4);
  b.add_layer("Concat", "d", {"b", "c"}, {"d"}, concat_params(0));
  b.add_layer("Activation", "e", {"d"}, {"e"}, relu_params());
  add_conv(b, "f", "e", 8, 4);
  b.add_output("f");
  return b;
}

// Loads through the copying path: the bytes are placed off 64-byte alignment on
// purpose so that the Net cannot borrow a buffer that dies with this function.
inline kestrel::Status load_bytes(kestrel::Net& net, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> shifted(bytes.size() + kestrel::kAlignment + 1);
  const uintptr_t base = reinterpret_cast<uintptr_t>(shifted.data());
  const size_t skew = (kestrel::kAlignment - base % kestrel::kAlignment) % kestrel::kAlignment + 1;
  std::memcpy(shifted.data() + skew, bytes.data(), bytes.size());
  return net.load(shifted.data() + skew, bytes.size());
}

inline kestrel::Status load(kestrel::Net& net, const kestrel::ModelBuilder& b) {
  return load_bytes(net, b.serialize());
}

inline std::string shared_dir() { return KESTREL_SHARED_DIR; }

}  // namespace kt
