// libFuzzer target: an ONNX ModelProto (binary) through the ONNX front end (shape
// inference, constant folding, op mapping), then optimize, load and run.
#include <cstddef>
#include <cstdint>

#include "fuzz_convert.h"
#include "onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kestrel::convert::Graph g;
  if (!kestrel::convert::import_onnx_bytes(data, size, {}, &g).ok()) return 0;
  kestrel_fuzz::optimize_and_run(g, static_cast<uint32_t>(size));
  return 0;
}
