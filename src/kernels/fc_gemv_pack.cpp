#include "kernels/fc_gemv_pack.h"

namespace kestrel::kernels {

size_t gemv_blocks(const FcGeometry& g, size_t block) {
  return (static_cast<size_t>(g.num_output) + block - 1) / block;
}

bool gemv_supports(const FcGeometry& g) { return g.num_output >= 1 && g.in_planes >= 1 && g.in_plane >= 1; }

size_t gemv_packed_floats(const FcGeometry& g, size_t block) {
  return gemv_blocks(g, block) * block * (g.num_input() + 1);
}

void gemv_pack(const FcGeometry& g, size_t block, const float* weight, const float* bias, float* packed) {
  const size_t k_total = g.num_input(), nb = gemv_blocks(g, block);
  for (size_t b = 0; b < nb; ++b) {
    float* dst = packed + b * block * k_total;
    for (size_t r = 0; r < block; ++r) {
      const size_t o = b * block + r;
      const float* src = o < size_t(g.num_output) ? weight + o * k_total : nullptr;
      for (size_t k = 0; k < k_total; ++k) dst[k * block + r] = src ? src[k] : 0.f;
    }
  }
  float* pb = packed + nb * block * k_total;
  for (size_t o = 0; o < nb * block; ++o) pb[o] = bias && o < size_t(g.num_output) ? bias[o] : 0.f;
}

size_t gemv_workspace_bytes(const FcGeometry& g) { return g.in_planes > 1 ? g.num_input() * sizeof(float) : 0; }

}  // namespace kestrel::kernels
