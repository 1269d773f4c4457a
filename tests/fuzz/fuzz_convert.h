// Shared by the converter fuzz targets: what kestrel-convert does after an import
// (optimize, then Kestrel's own loader through infer_shapes), and then the
// converted model is run like fuzz_model runs one, so a converter that writes a
// model the runtime accepts but mishandles is found too.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fuzz_run.h"
#include "graph/graph.h"
#include "graph/optimize.h"

namespace kestrel_fuzz {

// Converted models above this many weight bytes are not serialized and run: the
// import and the optimizer have seen them, and running them is fuzz_model's job.
constexpr size_t kMaxRunWeightBytes = size_t{16} << 20;

inline void optimize_and_run(kestrel::convert::Graph& g, uint32_t seed) {
  kestrel::convert::OptimizeReport report;
  if (!kestrel::convert::optimize(g, &report).ok()) return;
  std::map<std::string, kestrel::Shape> shapes;
  if (!kestrel::convert::infer_shapes(g, &shapes).ok()) return;
  if (g.weight_bytes() > kMaxRunWeightBytes) return;
  const std::vector<uint8_t> bytes = kestrel::convert::to_builder(g).serialize();
  run_model_bytes(bytes.data(), bytes.size(), seed);
}

}  // namespace kestrel_fuzz
