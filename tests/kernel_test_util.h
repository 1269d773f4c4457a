// Shared by the kernel-family tests (tests/test_kernels_*.cpp): every kernel in a
// registry that this CPU (and KESTREL_ISA) allows is run on seeded random geometries
// and compared with the family's reference. Operands are real Mats (64-byte-aligned
// channels), outputs are pre-filled with a sentinel so writes outside the real
// values are caught.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/layer.h"
#include "kernels/conv_kernels.h"
#include "kernels/isa.h"
#include "kernels/kernel_context.h"
#include "kestrel/mat.h"

namespace kt {

// Thread counts every kernel runs with (the "1 and several"; 4 exceeds this
// machine's 2 cores on purpose: the partition must not change the result).
inline const std::vector<int>& kernel_thread_counts() {
  static const std::vector<int> t = {1, 4};
  return t;
}

constexpr float kSentinel = -12345.f;

inline void fill_random(kestrel::Mat& m, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  const size_t plane = size_t(m.w) * m.h * m.d * m.elempack;
  for (int q = 0; q < m.c; ++q) {
    float* p = m.channel(q);
    for (size_t i = 0; i < plane; ++i) p[i] = dist(rng);
  }
}

inline std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Every float of the allocation (channel padding included) set to kSentinel.
inline void fill_sentinel(kestrel::Mat& m) {
  const size_t n = m.dims >= 3 ? m.cstep * m.c : size_t(m.w) * m.h * m.elempack;
  std::fill(m.data, m.data + n, kSentinel);
}

// Channel padding still holding kSentinel (nothing written past a channel's values).
inline bool padding_untouched(const kestrel::Mat& m) {
  if (m.dims < 3) return true;
  const size_t plane = size_t(m.w) * m.h * m.d * m.elempack;
  for (int q = 0; q < m.c; ++q) {
    const float* p = m.channel(q);
    for (size_t i = plane; i < m.cstep; ++i) {
      if (p[i] != kSentinel) return false;
    }
  }
  return true;
}

// max |got - ref| / max(1, max |ref|) over the real values; NaN anywhere gives +inf.
inline double relative_error(const kestrel::Mat& got, const kestrel::Mat& ref) {
  const size_t plane = size_t(ref.w) * ref.h * ref.d * ref.elempack;
  double max_ref = 0, max_diff = 0;
  for (int q = 0; q < ref.c; ++q) {
    const float* g = got.channel(q);
    const float* r = ref.channel(q);
    for (size_t i = 0; i < plane; ++i) {
      if (std::isnan(g[i]) != std::isnan(r[i])) return INFINITY;
      max_ref = std::max(max_ref, std::fabs(double(r[i])));
      max_diff = std::max(max_diff, std::fabs(double(g[i]) - double(r[i])));
    }
  }
  return max_diff / std::max(1.0, max_ref);
}

// Scratch for one kernel run: shared + per-thread regions, as the Extractor lays out.
struct KernelScratch {
  std::vector<float> storage;
  kestrel::kernels::KernelContext make(size_t shared_bytes, size_t per_thread_bytes, int threads) {
    const size_t a = kestrel::kAlignment;
    const size_t shared = (shared_bytes + a - 1) / a * a, stride = (per_thread_bytes + a - 1) / a * a;
    storage.assign((shared + stride * threads + 2 * a) / sizeof(float), 0.f);
    char* base = reinterpret_cast<char*>(storage.data());
    base += (a - reinterpret_cast<uintptr_t>(base) % a) % a;
    kestrel::kernels::KernelContext ctx;
    ctx.num_threads = threads;
    ctx.workspace = base;
    ctx.thread_scratch = base + shared;
    ctx.thread_scratch_stride = stride;
    return ctx;
  }
};

// Which kernels of a registry run here: those the active ISA allows.
template <class K>
std::vector<const K*> runnable_kernels(const std::vector<const K*>& all) {
  std::vector<const K*> r;
  for (const K* k : all) {
    if (kestrel::kernels::isa_allows(kestrel::kernels::active_isa(), k->isa)) r.push_back(k);
  }
  return r;
}

// True where fp16 kernels run: the CPU has fp16 arithmetic (Feature::kFp16Arith) and the
// build has fp16 kernels for its ISA (aarch64's). An x86 CPU with AVX512-FP16 has the
// feature but no kernels here: its fp16 layers keep fp32 kernels.
inline bool fp16_kernels_run() {
  if (!kestrel::kernels::active_has(kestrel::kernels::Feature::kFp16Arith)) return false;
  for (const auto* k : runnable_kernels(kestrel::kernels::conv_kernels())) {
    if (k->f16) return true;
  }
  return false;
}

// ---- Helpers of the pooling, inner-product, elementwise and softmax tests ----

// `n` floats starting `offset` floats past a 16-byte boundary, with kGuard values of
// `guard` on each side: kSentinel around outputs catches writes outside the array,
// NaN around inputs makes any value read from outside show up in the results.
struct GuardedArray {
  static constexpr size_t kGuard = 16;
  explicit GuardedArray(size_t n, size_t offset = 0, float guard = kSentinel)
      : storage(n + 2 * kGuard + offset, guard), size(n), at(offset), guard_value(guard) {}
  float* data() { return storage.data() + kGuard + at; }
  const float* data() const { return storage.data() + kGuard + at; }
  // The guards on both sides still hold their value.
  bool guards_untouched() const {
    const auto same = [&](float v) { return std::memcmp(&v, &guard_value, sizeof(float)) == 0; };
    for (size_t i = 0; i < kGuard + at; ++i) {
      if (!same(storage[i])) return false;
    }
    for (size_t i = kGuard + at + size; i < storage.size(); ++i) {
      if (!same(storage[i])) return false;
    }
    return true;
  }
  std::vector<float> storage;
  size_t size, at;
  float guard_value;
};

// max |got - ref| / max(1, max |ref|) over n values; a NaN on one side only gives +inf.
inline double relative_error(const float* got, const float* ref, size_t n) {
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(got[i]) != std::isnan(ref[i])) return INFINITY;
    if (std::isnan(ref[i])) continue;
    if (std::isinf(ref[i]) || std::isinf(got[i])) {
      if (got[i] != ref[i]) return INFINITY;
      continue;
    }
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    max_diff = std::max(max_diff, std::fabs(double(got[i]) - double(ref[i])));
  }
  return max_diff / std::max(1.0, max_ref);
}

// Bit-identical values (NaN payloads included).
inline bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Runs a loaded layer as a Net would: prepare for the inputs' shapes with kernel set
// `set`, then forward with `threads` threads and the workspace the layer asked for.
// The output starts as NaN everywhere. With in_place, the output is inputs[0] itself
// (a layer must declare supports_inplace()).
inline kestrel::Mat run_layer(kestrel::Layer& layer, std::vector<kestrel::Mat> inputs, kestrel::KernelSet set,
                              int threads, bool in_place = false) {
  std::vector<kestrel::Shape> shapes;
  for (const kestrel::Mat& m : inputs) shapes.push_back(m.shape());
  std::vector<kestrel::Shape> out_shapes(1);
  kestrel::PrepareContext pc;
  pc.kernels = set;
  const kestrel::Status s = layer.prepare(shapes, out_shapes, pc);
  REQUIRE_MESSAGE(s.ok(), s.message());
  std::vector<kestrel::Mat> out(1);
  if (in_place) {
    REQUIRE(layer.supports_inplace());
    inputs[0] = inputs[0].clone();
    out[0] = inputs[0];
  } else {
    REQUIRE(out[0].create(out_shapes[0]));
    std::fill(out[0].data, out[0].data + out[0].total(), NAN);
  }
  KernelScratch scratch;
  const kestrel::kernels::KernelContext k =
      scratch.make(layer.workspace_bytes, layer.workspace_per_thread_bytes, threads);
  kestrel::ForwardContext fc;
  fc.num_threads = threads;
  fc.workspace = k.workspace;
  fc.thread_scratch = k.thread_scratch;
  fc.thread_scratch_stride = k.thread_scratch_stride;
  const kestrel::Status f = layer.forward(inputs, out, fc);
  REQUIRE_MESSAGE(f.ok(), f.message());
  return out[0];
}

// The real values of a Mat in logical order (channel padding skipped).
inline std::vector<float> values_of_mat(const kestrel::Mat& m) {
  const size_t plane = m.dims >= 3 ? size_t(m.w) * m.h * m.d : size_t(m.w) * m.h;
  const int planes = m.dims >= 3 ? m.c : 1;
  std::vector<float> v;
  for (int q = 0; q < planes; ++q) v.insert(v.end(), m.channel(q), m.channel(q) + plane);
  return v;
}

// A layer run with both kernel sets and 1 and 4 threads: the fast result within
// `tolerance` of the reference, and each kernel set's result independent of the
// thread count bit for bit. Returns the number of comparisons made.
inline int check_layer_kernel_sets(kestrel::Layer& layer, const std::vector<kestrel::Mat>& inputs, double tolerance,
                                   bool in_place = false) {
  const std::vector<float> ref = values_of_mat(run_layer(layer, inputs, kestrel::KernelSet::kReference, 1, in_place));
  int checks = 0;
  for (kestrel::KernelSet set : {kestrel::KernelSet::kReference, kestrel::KernelSet::kFast}) {
    const std::vector<float> one = values_of_mat(run_layer(layer, inputs, set, 1, in_place));
    const std::vector<float> four = values_of_mat(run_layer(layer, inputs, set, 4, in_place));
    REQUIRE(one.size() == ref.size());
    REQUIRE(four.size() == ref.size());
    const double err = relative_error(one.data(), ref.data(), ref.size());
    CHECK_MESSAGE(err <= tolerance, "kernel set ", int(set), ": relative error ", err, " > ", tolerance);
    CHECK_MESSAGE(same_bits(one.data(), four.data(), one.size()), "kernel set ", int(set),
                  ": 4 threads differ from 1 thread");
    ++checks;
  }
  return checks;
}

// The values rounded to IEEE halves: weights a half-weight kernel takes
// (ConvGeometry::half_weights).
inline std::vector<float> rounded_to_halves(std::vector<float> v) {
  for (float& x : v) x = kestrel::half_to_float(kestrel::float_to_half(x));
  return v;
}

// A half-weight kernel's fp32 twin, named as it is without "_f16w", or nullptr.
template <class K>
const K* fp32_twin(const std::vector<const K*>& all, const K* k) {
  std::string name = k->name;
  const size_t at = name.find("_f16w");
  if (at == std::string::npos) return nullptr;
  name.erase(at, 5);
  for (const K* t : all) {
    if (name == t->name && !t->half_weights) return t;
  }
  return nullptr;
}

}  // namespace kt
