// Runs a converter Graph through Kestrel (serialize, Net::load, one Extractor), for the
// converter suites that check numbers by hand.
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "kestrel/net.h"
#include "mat_npy.h"

namespace kt {

// Feeds `input` (logical order, batch dropped) to the graph's first input and returns
// blob `output` in logical order.
inline std::vector<float> run_graph(const kestrel::convert::Graph& g, const std::vector<float>& input,
                                    const std::string& output) {
  const std::vector<uint8_t> bytes = kestrel::convert::to_builder(g).serialize();
  kestrel::Net net;
  const kestrel::Status ls = net.load(bytes.data(), bytes.size());
  REQUIRE_MESSAGE(ls.ok(), ls.message());
  kestrel::Shape s;
  REQUIRE(net.input_shape(g.inputs[0].name, &s).ok());
  kestrel::Mat in;
  REQUIRE(in.create(s));
  const size_t plane = static_cast<size_t>(s.w) * s.h * s.d;
  REQUIRE(input.size() == plane * s.c);
  for (int q = 0; q < s.c; ++q) std::copy_n(input.data() + q * plane, plane, in.channel(q));
  kestrel::Extractor ex = net.create_extractor();
  REQUIRE(ex.input(g.inputs[0].name, in).ok());
  kestrel::Mat out;
  const kestrel::Status st = ex.extract(output, out);
  REQUIRE_MESSAGE(st.ok(), st.message());
  return values_of(out);
}

}  // namespace kt
