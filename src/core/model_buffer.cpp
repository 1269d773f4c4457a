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

}  // namespace kestrel
