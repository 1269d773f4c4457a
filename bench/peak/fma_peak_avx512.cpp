#include <immintrin.h>

#include "fma_loop.h"

namespace kestrel::bench::detail {
namespace {
struct Avx512 {
  using reg = __m512;
  static reg set1(float v) { return _mm512_set1_ps(v); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float first(reg a) { return _mm512_cvtss_f32(a); }
};
}  // namespace

float fma_loop_avx512(long iters) { return fma_chains<Avx512>(iters); }

}  // namespace kestrel::bench::detail
