// Shared by the fuzz targets: load a .kst from bytes and, when it loads, run it on a
// small deterministic input. The public API must return a Status for anything, so
// the only outcomes here are "refused" or "ran"; a crash, a sanitizer report or a
// leak is the finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kestrel/net.h"

namespace kestrel_fuzz {

// Inputs above this many floats are skipped: a fuzzed shape may be legal and still
// too big to run thousands of times a second (the loader's own limits are tested by
// loading, which happens before this check).
constexpr size_t kMaxInputFloats = size_t{1} << 18;
// Feature maps above this size are refused by the allocator, as a device with little
// memory would: the Extractor must turn that into kOutOfMemory, and a legal but
// huge intermediate blob (an upsampling by 1000) does not trip libFuzzer's
// -rss_limit_mb or its timeout.
constexpr size_t kMaxFeatureMapBytes = size_t{64} << 20;

class CappedAllocator : public kestrel::Allocator {
 public:
  void* allocate(size_t size) override {
    return size > kMaxFeatureMapBytes ? nullptr : kestrel::default_allocator()->allocate(size);
  }
  void deallocate(void* ptr) override { kestrel::default_allocator()->deallocate(ptr); }
};

inline void run_model_bytes(const uint8_t* data, size_t size, uint32_t seed) {
  kestrel::Net net;
  net.option().num_threads = 1;
  // The memory strategies take different paths through the Extractor; the seed (from
  // the input) picks one so that all three are exercised.
  const kestrel::MemoryStrategy strategies[] = {kestrel::MemoryStrategy::kPool, kestrel::MemoryStrategy::kPlan,
                                                kestrel::MemoryStrategy::kNone};
  net.option().memory = strategies[seed % 3];
  static CappedAllocator allocator;
  net.option().allocator = &allocator;
  // Net::load borrows a 64-byte aligned buffer and copies any other, and where the
  // heap put libFuzzer's copy of the input is a matter of addresses: the seed places
  // the bytes on one path or the other instead, so that an input's coverage (and so
  // what a fixed-seed run fuzzes next) does not depend on the heap.
  std::vector<uint8_t> storage(size + 2 * kestrel::kAlignment);
  const uintptr_t start = reinterpret_cast<uintptr_t>(storage.data());
  uint8_t* at = storage.data() + (kestrel::kAlignment - start % kestrel::kAlignment) % kestrel::kAlignment +
                ((seed / 3) % 2 ? 4 : 0);
  if (size > 0) std::memcpy(at, data, size);
  if (!net.load(at, size).ok()) return;
  std::vector<kestrel::Mat> inputs;  // an Extractor references its inputs
  for (const std::string& name : net.input_names()) {
    kestrel::Shape shape;
    if (!net.input_shape(name, &shape).ok() || !shape.valid() || shape.total() > kMaxInputFloats) return;
    kestrel::Mat m;
    if (!m.create(shape)) return;
    // Padding included, so no kernel reads uninitialized floats.
    const size_t n = shape.bytes() / sizeof(float);
    uint32_t x = seed | 1;
    for (size_t i = 0; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      m.data[i] = static_cast<float>(static_cast<int32_t>(x >> 8) - (1 << 23)) / static_cast<float>(1 << 22);
    }
    inputs.push_back(m);
  }
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(1);
  const std::vector<std::string> names = net.input_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (!ex.input(names[i], inputs[i]).ok()) return;
  }
  for (const std::string& out : net.output_names()) {
    kestrel::Mat m;
    (void)ex.extract(out, m);
  }
}

}  // namespace kestrel_fuzz
