#include "core/model_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "kestrel/mat.h"

namespace kestrel {

ModelBuffer::~ModelBuffer() {
  if (kind_ == Kind::kMapped) munmap(const_cast<uint8_t*>(data_), size_);
  if (kind_ == Kind::kCopied) ::operator delete(const_cast<uint8_t*>(data_), std::align_val_t(kAlignment));
}

Status ModelBuffer::map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIoError;
    return Status(code, "cannot open model '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(ErrorCode::kIoError, "model '" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return Status(ErrorCode::kCorruptModel, "model '" + path + "' is empty");
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    return Status(ErrorCode::kIoError, "cannot map model '" + path + "': " + std::strerror(err));
  }
  kind_ = Kind::kMapped;
  data_ = static_cast<const uint8_t*>(p);
  size_ = static_cast<size_t>(st.st_size);
  return Status::Ok();
}

Status ModelBuffer::from_memory(const void* data, size_t size) {
  if (data == nullptr || size == 0) {
    return Status(ErrorCode::kInvalidArgument, "model buffer is null or empty");
  }
  if (reinterpret_cast<uintptr_t>(data) % kAlignment == 0) {
    kind_ = Kind::kBorrowed;
    data_ = static_cast<const uint8_t*>(data);
    size_ = size;
    return Status::Ok();
  }
  void* p = ::operator new(size, std::align_val_t(kAlignment), std::nothrow);
  if (!p) {
    return Status(ErrorCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(size) + " bytes to copy an unaligned model buffer");
  }
  std::memcpy(p, data, size);
  kind_ = Kind::kCopied;
  data_ = static_cast<const uint8_t*>(p);
  size_ = size;
  return Status::Ok();
}

size_t ModelBuffer::release(const uint8_t* p, size_t n) const {
  if (kind_ != Kind::kMapped || n == 0) return 0;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end <= begin) return 0;
  // Advice: where the kernel refuses, the pages just stay.
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED) != 0) return 0;
  return end - begin;
}

}  // namespace kestrel
