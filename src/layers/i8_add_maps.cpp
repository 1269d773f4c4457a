#include "layers/i8_add_maps.h"

#include <algorithm>

#include "kernels/elementwise_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"
#include "layers/layers.h"

namespace kestrel::layer_util {

bool I8AddMaps::set(const std::vector<float>& in_scales, float out) {
  for (int i = 0; i < 2; ++i) in_dequant[i] = in_scales[i] > 0.f ? 1.f / in_scales[i] : 0.f;
  out_scale = out;
  return in_scales[0] > 0.f || in_scales[1] > 0.f || out > 0.f;
}

const char* I8AddMaps::kernel_name() const { return reference ? nullptr : kernels::i8_map_kernel().name; }

void run_i8_add(const I8AddMaps& maps, const Mat& a, const Mat& b, Mat& out, const ActivationSpec& act,
                int num_threads) {
  const int planes = plane_count(out);
  const size_t n = plane_size(out);
  const size_t chunk = kernels::kElementwiseChunk;
  const long long pieces = static_cast<long long>((n + chunk - 1) / chunk);
  const auto add = maps.reference ? kernels::i8_add_reference : kernels::i8_map_kernel().add;
  // A map's channels are cstep 4-byte units apart, whatever its elements.
  auto at = [](const Mat& m, int q, size_t first, bool bytes) {
    char* base = reinterpret_cast<char*>(m.data) + static_cast<size_t>(q) * m.cstep * sizeof(float);
    return base + first * (bytes ? 1 : sizeof(float));
  };
#pragma omp parallel for num_threads(num_threads)
  for (long long it = 0; it < planes * pieces; ++it) {
    const int q = static_cast<int>(it / pieces);
    const size_t first = static_cast<size_t>(it % pieces) * chunk;
    kernels::I8AddRow r;
    r.a = at(a, q, first, maps.in_dequant[0] > 0.f);
    r.a_dequant = maps.in_dequant[0];
    r.b = at(b, q, first, maps.in_dequant[1] > 0.f);
    r.b_dequant = maps.in_dequant[1];
    r.out = at(out, q, first, maps.out_scale > 0.f);
    r.out_scale = maps.out_scale;
    add(r, std::min(chunk, n - first), act);
  }
}

}  // namespace kestrel::layer_util
