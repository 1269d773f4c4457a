// The FMA chain loop, written once over a vector type's traits and instantiated in
// each ISA's translation unit (compiled with that ISA's flags).
#pragma once
#include "fma_peak.h"

namespace kestrel::bench::detail {

template <class V>
float fma_chains(long iters) {
  typename V::reg acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = V::set1(1.0f + 1e-3f * i);
  // Multiplier and addend near 1 and 0 keep values finite for any count.
  const typename V::reg a = V::set1(0.999999f), b = V::set1(1e-7f);
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = V::fma(acc[i], a, b);
  }
  float s = 0;
  for (int i = 0; i < kChains; ++i) s += V::first(acc[i]);
  return s;
}

}  // namespace kestrel::bench::detail
