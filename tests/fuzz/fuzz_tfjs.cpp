// libFuzzer target: a TF.js graph model through the TF.js front end (JSON parsing, the
// weights manifest, cutting, op mapping, layouts, folding), then optimize, load and run.
// Input: model.json's text, a NUL byte, then the one weight shard the manifest may name
// ("w.bin", as tests/tfjs/graphs.py writes them).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_convert.h"
#include "tfjs/tfjs_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  const void* nul = std::memchr(data, 0, size);
  const size_t json_size = nul ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - data) : size;
  kestrel::convert::TfjsFiles files;
  files.model_json.assign(text, json_size);
  if (nul) files.shards.emplace_back("w.bin", std::string(text + json_size + 1, size - json_size - 1));
  kestrel::convert::Graph g;
  if (!kestrel::convert::import_tfjs_files(files, {}, &g).ok()) return 0;
  kestrel_fuzz::optimize_and_run(g, static_cast<uint32_t>(size));
  return 0;
}
