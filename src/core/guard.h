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

// For one step inside an API call: std::bad_alloc from `body` becomes kOutOfMemory
// naming the step ("planning memory: out of memory") where guarded() alone could only
// name the API call. If even that message cannot be made, the exception goes on to
// the caller's guarded().
template <typename F>
Status oom_names(const char* what, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kOutOfMemory, std::string(what) + ": out of memory");
  }
}

}  // namespace kestrel
