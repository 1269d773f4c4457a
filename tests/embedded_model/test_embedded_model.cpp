// A model compiled into the program (kestrel-convert --emit-c-array) loads with
// Net::load(ptr, size) in place: the array is 64-byte aligned, the load allocates
// the model's size less than a load of the same bytes from an unaligned buffer (which
// Kestrel must copy; both loads allocate the packed weights of the fast kernels), and
// it classifies the sample images as the file does.
//
// usage: test_embedded_model MODELS_DIR   (the repository's models/fashion)
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "fashion_model.h"
#include "kestrel/image.h"
#include "kestrel/net.h"

namespace {

std::atomic<size_t> g_allocated{0};
int g_failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "CHECK failed: %s\n", what);
    ++g_failures;
  }
}

size_t bytes_allocated_by_load(const void* data, size_t size) {
  kestrel::Net net;
  const size_t before = g_allocated.load();
  const kestrel::Status s = net.load(data, size);
  const size_t used = g_allocated.load() - before;
  check(s.ok(), "Net::load from memory");
  return used;
}

int classify(kestrel::Extractor& ex, const kestrel::Net& net, const std::string& png) {
  kestrel::Image img;
  kestrel::Mat in, prob;
  if (!kestrel::load_image(png, &img).ok() ||
      !kestrel::from_image_resize(img, kestrel::PixelType::kGray, 28, 28, &in).ok()) {
    return -1;
  }
  const float mean = std::strtof(net.metadata("mean").c_str(), nullptr);
  const float norm = std::strtof(net.metadata("norm").c_str(), nullptr);
  kestrel::substract_mean_normalize(in, &mean, &norm);
  if (!ex.input("data", in).ok() || !ex.extract("prob", prob).ok()) return -1;
  int best = 0;
  for (int i = 1; i < 10; ++i) best = prob[i] > prob[best] ? i : best;
  return best;
}

}  // namespace

// Counts every heap byte, so that a copy of the model shows up.
void* operator new(size_t n) {
  g_allocated += n;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  g_allocated += n;
  return std::malloc(n ? n : 1);
}
void* operator new(size_t n, std::align_val_t a) {
  g_allocated += n;
  if (void* p = std::aligned_alloc(static_cast<size_t>(a), (n + static_cast<size_t>(a) - 1) / static_cast<size_t>(a) * static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  g_allocated += n;
  return std::aligned_alloc(static_cast<size_t>(a), (n + static_cast<size_t>(a) - 1) / static_cast<size_t>(a) * static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_embedded_model MODELS_DIR\n");
    return 2;
  }
  const void* model = kestrel_fashion_model;
  const size_t size = kestrel_fashion_model_size;
  std::printf("embedded model: %zu bytes at %p\n", size, model);
  check(reinterpret_cast<uintptr_t>(model) % 64 == 0, "the array is 64-byte aligned");

  // The same bytes at an odd address must be copied; in place they must not.
  std::vector<unsigned char> shifted(size + 1);
  std::memcpy(shifted.data() + 1, model, size);
  bytes_allocated_by_load(model, size);  // first-use statics (kernel tables) are not the model's
  const size_t in_place = bytes_allocated_by_load(model, size);
  const size_t copied = bytes_allocated_by_load(shifted.data() + 1, size);
  std::printf("heap bytes during load: %zu in place, %zu from an unaligned copy\n", in_place, copied);
  // Small allocations (names, maps) may differ by a few hundred bytes between loads.
  check(copied >= in_place + size - 4096, "the aligned array is used without a copy");

  kestrel::Net net;
  check(net.load(model, size).ok(), "Net::load(kestrel_fashion_model, size)");
  kestrel::Extractor ex = net.create_extractor();
  const char* samples[] = {"00000_ankle_boot", "00001_pullover", "00002_trouser", "00004_shirt", "00006_coat", "00008_sandal"};
  const int expected[] = {9, 2, 1, 6, 4, 5};
  for (int i = 0; i < 6; ++i) {
    const int got = classify(ex, net, std::string(argv[1]) + "/samples/" + samples[i] + ".png");
    std::printf("  %-18s class %d (expected %d)\n", samples[i], got, expected[i]);
    check(got == expected[i], samples[i]);
  }
  if (g_failures) {
    std::printf("embedded_model: %d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("embedded_model: all checks passed\n");
  return 0;
}
