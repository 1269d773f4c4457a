// Size arithmetic that refuses to wrap: model files are untrusted input.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <limits>

namespace kestrel {

// Sets *out to the product and returns true, or returns false on overflow.
inline bool checked_mul(std::initializer_list<size_t> factors, size_t* out) {
  size_t r = 1;
  for (size_t f : factors) {
    if (f != 0 && r > std::numeric_limits<size_t>::max() / f) return false;
    r *= f;
  }
  *out = r;
  return true;
}

inline bool checked_add(size_t a, size_t b, size_t* out) {
  if (a > std::numeric_limits<size_t>::max() - b) return false;
  *out = a + b;
  return true;
}

}  // namespace kestrel
