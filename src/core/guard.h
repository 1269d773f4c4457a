// No exception may leave the public API: std::bad_alloc from a container becomes
// kOutOfMemory, anything else kInternal.
#pragma once
#include <exception>
#include <new>
#include <string>

#include "kestrel/status.h"

namespace kestrel {

template <typename F>
Status guarded(const char* what, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    try {
      return Status(ErrorCode::kOutOfMemory, std::string(what) + ": out of memory");
    } catch (...) {
      return Status(ErrorCode::kOutOfMemory, std::string());
    }
  } catch (const std::exception& e) {
    try {
      return Status(ErrorCode::kInternal, std::string(what) + ": " + e.what());
    } catch (...) {
      return Status(ErrorCode::kInternal, std::string());
    }
  } catch (...) {
    return Status(ErrorCode::kInternal, std::string());
  }
}

}  // namespace kestrel
