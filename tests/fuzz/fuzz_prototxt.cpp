// libFuzzer target: a Caffe deploy prototxt (text) through the Caffe front end
// without weights (layers then get zero-filled ones of the declared sizes, as
// kestrel-convert does with no caffemodel), then optimize, load and run.
#include <cstddef>
#include <cstdint>
#include <string>

#include "caffe/caffe_import.h"
#include "fuzz_convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kestrel::convert::Graph g;
  if (!kestrel::convert::import_caffe_bytes(text, nullptr, 0, {}, &g).ok()) return 0;
  kestrel_fuzz::optimize_and_run(g, static_cast<uint32_t>(size));
  return 0;
}
