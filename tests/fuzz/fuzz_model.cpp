// libFuzzer target: a .kst model from bytes through Net::load, then, if it loads, one
// inference of every output on a small input (fuzz_run.h).
#include <cstddef>
#include <cstdint>

#include "fuzz_run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kestrel_fuzz::run_model_bytes(data, size, size > 0 ? data[size - 1] : 0u);
  return 0;
}
