#include "kestrel/mat.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/checked_math.h"
#include "core/half.h"

namespace kestrel {

namespace {

#if defined(__linux__)
void advise_huge_pages(void* p, size_t n) { madvise(p, n, MADV_HUGEPAGE); }
#else
void advise_huge_pages(void*, size_t) {}
#endif

// Blocks of at least a huge page (packed weights of the large layers, big feature maps)
// start on a huge-page boundary and ask for huge pages over the whole pages they cover:
// a network streams tens of MiB of weights per inference, and with 4 KiB pages the TLB
// misses cost MobileNet v1 0.2 ms of 11.4 at 1 thread (its 4 MiB classifier ran in
// 0.27 ms instead of 0.14; AMD EPYC, THP in "madvise" mode, 2026-11-25). Only whole
// huge pages inside the block are advised, so nothing beyond the block is backed.
constexpr size_t kHugePage = size_t{2} << 20;

class DefaultAllocator final : public Allocator {
 public:
  // Every block is carved out of one 64-byte-aligned operator new with a header line
  // in front that keeps its start, so that delete always matches its new whatever the
  // block's alignment.
  void* allocate(size_t size) override {
    const size_t align = size >= kHugePage ? kHugePage : kAlignment;
    if (size > std::numeric_limits<size_t>::max() - align - kAlignment) return nullptr;
    char* base = static_cast<char*>(::operator new(size + align + kAlignment, std::align_val_t(kAlignment), std::nothrow));
    if (!base) return nullptr;
    const uintptr_t first = reinterpret_cast<uintptr_t>(base) + kAlignment;
    char* p = base + ((first + align - 1) / align * align - reinterpret_cast<uintptr_t>(base));
    reinterpret_cast<char**>(p)[-1] = base;
    if (align == kHugePage) advise_huge_pages(p, size / kHugePage * kHugePage);
    return p;
  }
  void deallocate(void* ptr) override {
    if (ptr) ::operator delete(static_cast<char**>(ptr)[-1], std::align_val_t(kAlignment));
  }
};

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

Allocator* default_allocator() {
  static DefaultAllocator instance;
  return &instance;
}

size_t Shape::cstep() const {
  size_t plane = 0;
  if (!checked_mul({size_t(w), size_t(h), size_t(d), size_t(elempack)}, &plane)) return 0;
  if (plane > std::numeric_limits<size_t>::max() / sizeof(float) - kAlignment) return 0;
  const size_t plane_bytes = plane * (i8 ? 1 : f16 ? 2 : sizeof(float));
  // Channels start on kAlignment so that kernels can use aligned vector loads per channel.
  if (dims >= 3) return align_up(plane_bytes, kAlignment) / sizeof(float);
  return align_up(plane_bytes, sizeof(float)) / sizeof(float);
}

size_t Shape::bytes() const {
  if (dims < 1 || dims > 4 || w < 0 || h < 0 || d < 0 || c < 0 || elempack < 1) return 0;
  size_t plane = 0, b = 0;
  if (!checked_mul({size_t(w), size_t(h), size_t(d), size_t(elempack), sizeof(float)}, &plane)) return 0;
  if (plane > std::numeric_limits<size_t>::max() - kAlignment) return 0;
  if (!checked_mul({cstep(), size_t(c), sizeof(float)}, &b)) return 0;
  return b;
}

bool Shape::valid() const {
  const bool any_zero = w == 0 || h == 0 || d == 0 || c == 0;
  return dims >= 1 && dims <= 4 && w >= 0 && h >= 0 && d >= 0 && c >= 0 && elempack >= 1 &&
         (bytes() > 0 || any_zero);
}

size_t Shape::total() const {
  return size_t(w) * size_t(h) * size_t(d) * size_t(c) * size_t(elempack);
}

bool Shape::operator==(const Shape& o) const {
  return dims == o.dims && w == o.w && h == o.h && d == o.d && c == o.c && elempack == o.elempack && f16 == o.f16 &&
         i8 == o.i8;
}

Mat Mat::external(const Shape& shape, float* data, size_t cstep) {
  Mat m;
  m.data = data;
  m.dims = shape.dims;
  m.w = shape.w;
  m.h = shape.h;
  m.d = shape.d;
  m.c = shape.c;
  m.elempack = shape.elempack;
  m.f16 = shape.f16;
  m.i8 = shape.i8;
  m.cstep = cstep ? cstep : shape.cstep();
  return m;
}

Mat Mat::view_of_shared(const Shape& shape, float* data, void* base, std::atomic<int>* refcount,
                        Allocator* a) {
  Mat m = external(shape, data);
  m.base = base;
  m.refcount = refcount;
  m.allocator = a;
  if (refcount) refcount->fetch_add(1, std::memory_order_relaxed);
  return m;
}

void Mat::copy_fields(const Mat& m) {
  data = m.data;
  base = m.base;
  refcount = m.refcount;
  allocator = m.allocator;
  dims = m.dims;
  w = m.w;
  h = m.h;
  d = m.d;
  c = m.c;
  elempack = m.elempack;
  f16 = m.f16;
  i8 = m.i8;
  cstep = m.cstep;
}

Mat::Mat(const Mat& m) {
  copy_fields(m);
  if (refcount) refcount->fetch_add(1, std::memory_order_relaxed);
}

Mat::Mat(Mat&& m) noexcept {
  copy_fields(m);
  m.refcount = nullptr;
  m.release();
}

Mat& Mat::operator=(const Mat& m) {
  if (this == &m) return *this;
  if (m.refcount) m.refcount->fetch_add(1, std::memory_order_relaxed);
  release();
  copy_fields(m);
  return *this;
}

Mat& Mat::operator=(Mat&& m) noexcept {
  if (this == &m) return *this;
  release();
  copy_fields(m);
  m.refcount = nullptr;  // ownership moved: release() below only clears the fields
  m.release();
  return *this;
}

bool Mat::create(const Shape& shape, Allocator* a) {
  release();
  if (!shape.valid()) return false;
  const size_t bytes = shape.bytes();
  if (!a) a = default_allocator();
  // The reference count lives after the data, inside the over-read zone that kernels
  // may read but never write; one allocation per Mat.
  const size_t payload = align_up(bytes, kAlignment);
  void* p = a->allocate(payload + kOverreadBytes);
  if (!p) return false;
  refcount = new (static_cast<char*>(p) + payload) std::atomic<int>(1);
  base = p;
  data = static_cast<float*>(p);
  allocator = a;
  dims = shape.dims;
  w = shape.w;
  h = shape.h;
  d = shape.d;
  c = shape.c;
  elempack = shape.elempack;
  f16 = shape.f16;
  i8 = shape.i8;
  cstep = shape.cstep();
  return true;
}

void Mat::release() {
  if (refcount && refcount->fetch_sub(1, std::memory_order_acq_rel) == 1) {
    allocator->deallocate(base);
  }
  data = nullptr;
  base = nullptr;
  refcount = nullptr;
  allocator = nullptr;
  dims = 0;
  w = h = d = c = 0;
  elempack = 1;
  f16 = false;
  i8 = false;
  cstep = 0;
}

Mat Mat::clone(Allocator* a) const {
  Mat m;
  if (data == nullptr) return m;
  if (!m.create(shape(), a)) return m;
  if (cstep == m.cstep) {
    std::memcpy(m.data, data, total() * sizeof(float));
  } else {
    const size_t plane_bytes = size_t(w) * h * d * elempack * (i8 ? 1 : f16 ? 2 : sizeof(float));
    for (int q = 0; q < c; ++q) std::memcpy(m.channel(q), channel(q), plane_bytes);
  }
  return m;
}

void Mat::fill(float v) {
  const size_t plane = size_t(w) * h * d * elempack;
  for (int q = 0; q < c; ++q) {
    float* p = channel(q);
    for (size_t i = 0; i < plane; ++i) p[i] = v;
  }
}

Mat Mat::reshape(const Shape& s) const {
  Mat m;
  if (data == nullptr || s.total() != shape().total() || s.elempack != 1 || elempack != 1 || f16 || s.f16 || i8 ||
      s.i8) {
    return m;
  }
  const size_t plane = size_t(w) * h * d;
  const bool dense = dims <= 2 || c == 1 || cstep == plane;
  const bool dense_target = s.dims <= 2 || s.c == 1 || s.cstep() == size_t(s.w) * s.h * s.d;
  if (!dense || !dense_target) return m;
  m = *this;
  m.dims = s.dims;
  m.w = s.w;
  m.h = s.h;
  m.d = s.d;
  m.c = s.c;
  m.cstep = s.dims <= 2 ? s.cstep() : size_t(s.w) * s.h * s.d;
  return m;
}

Mat convert_packing(const Mat& src, int elempack, Allocator* a) {
  Mat dst;
  const bool valid_pack = elempack == 1 || elempack == 4 || elempack == 8 || elempack == 16;
  if (src.data == nullptr || !valid_pack || src.dims < 3 || src.i8) return dst;
  const int channels = src.channels();
  if (channels % elempack != 0) return dst;
  Shape s = src.shape();
  s.c = channels / elempack;
  s.elempack = elempack;
  s.f16 = false;
  if (!dst.create(s, a)) return dst;
  const size_t plane = size_t(src.w) * src.h * src.d;
  // Real channel k lives in block k / pack at lane k % pack.
  for (int k = 0; k < channels; ++k) {
    float* dp = dst.channel(k / elempack) + k % elempack;
    if (src.f16) {
      const uint16_t* sp = reinterpret_cast<const uint16_t*>(src.channel(k / src.elempack)) + k % src.elempack;
      for (size_t i = 0; i < plane; ++i) dp[i * elempack] = half_to_float(sp[i * src.elempack]);
    } else {
      const float* sp = src.channel(k / src.elempack) + k % src.elempack;
      for (size_t i = 0; i < plane; ++i) dp[i * elempack] = sp[i * src.elempack];
    }
  }
  return dst;
}

}  // namespace kestrel
