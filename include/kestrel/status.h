// Kestrel: the error type every public call returns.
#pragma once
#include <string>
#include <utility>

namespace kestrel {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // wrong name, wrong shape, bad option
  kNotFound,         // missing file
  kIoError,          // file could not be read or written
  kCorruptModel,     // verifier or semantic check failed
  kUnsupported,      // unknown layer type, dtype not implemented, ...
  kOutOfMemory,      // an allocation failed; nothing was leaked
  kInternal,         // a bug in Kestrel: please report it
};

// A result: ok, or an error code with a message that names the file, layer or blob
// and what was expected. Cheap to copy when ok (no allocation).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  // Empty when ok.
  const std::string& message() const { return message_; }
  // Prefix the message with context ("layer 'conv1': ...").
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

const char* error_code_name(ErrorCode code);

}  // namespace kestrel
