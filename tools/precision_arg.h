// --precision fp32|fp16|bf16 and --layer-precision NAME=fp32|fp16|bf16, as kestrel-run and
// kestrel-bench read them into an Option.
#pragma once
#include <string>

#include "kestrel/option.h"

namespace kestrel_tools {

// "fp32", "fp16", "bf16" or "int8" into *p; false for anything else.
inline bool parse_precision(const std::string& v, kestrel::Precision* p) {
  for (kestrel::Precision q : {kestrel::Precision::kFp32, kestrel::Precision::kFp16, kestrel::Precision::kBf16,
                               kestrel::Precision::kInt8}) {
    if (v == kestrel::precision_name(q)) {
      *p = q;
      return true;
    }
  }
  return false;
}

inline const char* precision_name(kestrel::Precision p) { return kestrel::precision_name(p); }

// "NAME=fp16" into o->layer_precision; false when malformed.
inline bool parse_layer_precision(const std::string& v, kestrel::Option* o) {
  const size_t eq = v.rfind('=');
  kestrel::Precision p;
  if (eq == std::string::npos || eq == 0 || !parse_precision(v.substr(eq + 1), &p)) return false;
  o->layer_precision[v.substr(0, eq)] = p;
  return true;
}

}  // namespace kestrel_tools
