#include "kestrel/status.h"

namespace kestrel {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kCorruptModel: return "corrupt model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

}  // namespace kestrel
