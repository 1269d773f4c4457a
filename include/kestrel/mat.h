// Kestrel: Mat, the float tensor that carries inputs, feature maps and outputs,
// and Allocator, the hook through which every feature-map byte is obtained.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kestrel {

// Every Mat buffer starts on this boundary, and so does every channel of a Mat with
// three or more dims (cstep is rounded up to it).
constexpr size_t kAlignment = 64;
// Kernels may read (never write) up to this many bytes past the last element.
constexpr size_t kOverreadBytes = 64;

// Source of raw memory. allocate() returns kAlignment-aligned memory of at least
// `size` bytes, or nullptr on failure (it must not throw). Implementations used by
// several Extractors at once must be thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t size) = 0;
  virtual void deallocate(void* ptr) = 0;
};

// The process-wide default: aligned operator new/delete. Thread-safe, never null.
Allocator* default_allocator();

// Dimensions of a tensor without the batch: dims 1 = [w], 2 = [h][w], 3 = [c][h][w],
// 4 = [c][d][h][w]. With elempack p > 1, `c` counts blocks of p interleaved channels
// (the real channel count is c * p) and each element is p floats.
// f16: each value is an IEEE half (2 bytes), an element p halves. Such maps exist only
// between layers that compute in fp16 (Option::precision); inputs a user gives and
// everything extract() returns are fp32.
// i8: each value is a signed byte, the real value times the map's int8 scale (its
// kestrel-quantize scale). Such maps exist only between layers that compute in int8;
// extract() hands them out as fp32.
struct Shape {
  int dims = 0;
  int w = 0, h = 1, d = 1, c = 1;
  int elempack = 1;
  bool f16 = false;
  bool i8 = false;

  static Shape make1(int w) { return {1, w, 1, 1, 1, 1}; }
  static Shape make2(int w, int h) { return {2, w, h, 1, 1, 1}; }
  static Shape make3(int w, int h, int c) { return {3, w, h, 1, c, 1}; }
  static Shape make4(int w, int h, int d, int c) { return {4, w, h, d, c, 1}; }

  // 4-byte units (floats, pairs of halves, quads of bytes) between the starts of two
  // channels (whole tensor for dims <= 2).
  size_t cstep() const;
  // Bytes a Mat of this shape occupies, channel padding included; 0 when invalid().
  size_t bytes() const;
  // 1 to 4 dims, no negative extent, elempack >= 1, and a size that fits in size_t.
  bool valid() const;
  // Number of real values (w*h*d*c*elempack).
  size_t total() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

// A reference-counted float tensor. Copies share data; clone() copies it.
// A Mat made from external data does not own it and never frees it.
// Fields are public for kernels, as in ncnn; users should prefer the accessors.
class Mat {
 public:
  Mat() = default;
  // Allocating constructors: on allocation failure the Mat is empty().
  explicit Mat(int w, Allocator* a = nullptr) { create(Shape::make1(w), a); }
  Mat(int w, int h, Allocator* a = nullptr) { create(Shape::make2(w, h), a); }
  Mat(int w, int h, int c, Allocator* a = nullptr) { create(Shape::make3(w, h, c), a); }
  // Wraps external data laid out as `shape` with channel stride `cstep` floats
  // (0: shape.cstep()). The caller keeps `data` alive while any copy of the Mat lives.
  static Mat external(const Shape& shape, float* data, size_t cstep = 0);

  Mat(const Mat& m);
  Mat(Mat&& m) noexcept;
  Mat& operator=(const Mat& m);
  Mat& operator=(Mat&& m) noexcept;
  ~Mat() { release(); }

  // Allocates for `shape` from `a` (nullptr: default_allocator()). Returns false and
  // leaves the Mat empty when the allocation fails. Contents are uninitialized.
  bool create(const Shape& shape, Allocator* a = nullptr);
  // Drops this reference; frees the buffer when it was the last one.
  void release();
  // A deep copy with the same shape and packing; empty on allocation failure.
  Mat clone(Allocator* a = nullptr) const;
  void fill(float v);

  bool empty() const { return data == nullptr || total() == 0; }
  Shape shape() const { return Shape{dims, w, h, d, c, elempack, f16, i8}; }
  // 4-byte units of the buffer (floats; pairs of values where f16, quads where i8).
  size_t total() const { return cstep * static_cast<size_t>(c); }
  // Number of real channels (c * elempack for packed Mats).
  int channels() const { return c * elempack; }
  int refcount_value() const { return refcount ? refcount->load() : 0; }

  float* channel(int q) { return data + cstep * static_cast<size_t>(q); }
  const float* channel(int q) const { return data + cstep * static_cast<size_t>(q); }
  // Rows, element access and fill() are for fp32 Mats (f16 and i8 false).
  float* row(int y) { return data + static_cast<size_t>(w) * y * elempack; }
  const float* row(int y) const { return data + static_cast<size_t>(w) * y * elempack; }
  float& operator[](size_t i) { return data[i]; }
  const float& operator[](size_t i) const { return data[i]; }

  // A Mat of another shape over the same memory; requires the same total() and a
  // layout without channel padding (or dims <= 2). Empty if not possible.
  Mat reshape(const Shape& shape) const;

  // Internal: a view into a shared buffer (for example the Extractor's planned arena)
  // that keeps the buffer alive through its reference count.
  static Mat view_of_shared(const Shape& shape, float* data, void* base, std::atomic<int>* refcount,
                            Allocator* a);

  float* data = nullptr;
  void* base = nullptr;                   // what allocator->deallocate() receives
  std::atomic<int>* refcount = nullptr;   // null for external data and views
  Allocator* allocator = nullptr;
  int dims = 0;
  int w = 0, h = 0, d = 0, c = 0;
  int elempack = 1;
  bool f16 = false;  // values are halves (Shape::f16)
  bool i8 = false;   // values are bytes (Shape::i8)
  size_t cstep = 0;

 private:
  void copy_fields(const Mat& m);
};

// Layout conversion: returns `src` with channels interleaved in blocks of
// `elempack` (1, 4, 8 or 16), always as fp32 (an f16 `src` is widened). The channel
// count must be a multiple of elempack. Returns an empty Mat on allocation failure, a
// bad elempack, or an i8 `src` (its scale is the Net's).
Mat convert_packing(const Mat& src, int elempack, Allocator* a = nullptr);

}  // namespace kestrel
