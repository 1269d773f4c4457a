#include <immintrin.h>

#include "fma_loop.h"

namespace kestrel::bench::detail {
namespace {
struct Avx2 {
  using reg = __m256;
  static reg set1(float v) { return _mm256_set1_ps(v); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float first(reg a) { return _mm256_cvtss_f32(a); }
};
}  // namespace

float fma_loop_avx2(long iters) { return fma_chains<Avx2>(iters); }

}  // namespace kestrel::bench::detail
