// The bytes of a loaded model: a read-only file mapping, an aligned private copy, or
// a caller's buffer used in place.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "kestrel/status.h"

namespace kestrel {

class ModelBuffer {
 public:
  ModelBuffer() = default;
  ~ModelBuffer();
  ModelBuffer(const ModelBuffer&) = delete;
  ModelBuffer& operator=(const ModelBuffer&) = delete;

  // mmap()s the file read-only; page alignment satisfies the 64-byte weight alignment.
  Status map_file(const std::string& path);
  // Uses `data` in place when 64-byte aligned, else copies it into aligned memory.
  Status from_memory(const void* data, size_t size);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool borrowed() const { return kind_ == Kind::kBorrowed; }

  // A mapped file's memory of the whole pages inside [p, p + n) goes back to the kernel
  // (MADV_DONTNEED); returns their bytes. Safe at any time: such pages read back from
  // the file when touched again. A copy or a caller's buffer is never touched (0).
  size_t release(const uint8_t* p, size_t n) const;
  // True for a mapped file, whose released pages read back from the file.
  bool refaults() const { return kind_ == Kind::kMapped; }

 private:
  enum class Kind { kNone, kMapped, kCopied, kBorrowed };
  Kind kind_ = Kind::kNone;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kestrel
