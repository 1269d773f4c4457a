#include "kernels/fc_gemv_pack.h"

#include <cstdint>

#include "core/half.h"

namespace kestrel::kernels {

size_t gemv_blocks(const FcGeometry& g, size_t block) {
  return (static_cast<size_t>(g.num_output) + block - 1) / block;
}

bool gemv_supports(const FcGeometry& g) { return g.num_output >= 1 && g.in_planes >= 1 && g.in_plane >= 1; }

size_t gemv_weight_floats(const FcGeometry& g, size_t block, bool halves) {
  const size_t n = gemv_blocks(g, block) * block * g.num_input();
  return halves ? half_units(n) : n;
}

size_t gemv_packed_floats(const FcGeometry& g, size_t block, bool halves) {
  return gemv_weight_floats(g, block, halves) + gemv_blocks(g, block) * block;
}

namespace {
template <class A, class Convert>
void pack_blocks(const FcGeometry& g, size_t block, const float* weight, A* packed, Convert convert) {
  const size_t k_total = g.num_input(), nb = gemv_blocks(g, block);
  for (size_t b = 0; b < nb; ++b) {
    A* dst = packed + b * block * k_total;
    for (size_t r = 0; r < block; ++r) {
      const size_t o = b * block + r;
      const float* src = o < size_t(g.num_output) ? weight + o * k_total : nullptr;
      for (size_t k = 0; k < k_total; ++k) dst[k * block + r] = convert(src ? src[k] : 0.f);
    }
  }
}
}  // namespace

void gemv_pack(const FcGeometry& g, size_t block, const float* weight, const float* bias, float* packed,
               bool halves) {
  if (halves) {
    pack_blocks(g, block, weight, reinterpret_cast<uint16_t*>(packed), float_to_half);
  } else {
    pack_blocks(g, block, weight, packed, [](float x) { return x; });
  }
  float* pb = packed + gemv_weight_floats(g, block, halves);
  const size_t n = gemv_blocks(g, block) * block;
  for (size_t o = 0; o < n; ++o) pb[o] = bias && o < size_t(g.num_output) ? bias[o] : 0.f;
}

size_t gemv_workspace_bytes(const FcGeometry& g) { return g.in_planes > 1 ? g.num_input() * sizeof(float) : 0; }

}  // namespace kestrel::kernels
