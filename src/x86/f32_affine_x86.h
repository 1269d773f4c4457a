// The affine microkernel, y = x * scale + shift (BatchNorm folded at load, Scale):
// four vectors per step, one FMA each.
#pragma once
#include <cstddef>

#include "x86/x86_math.h"

namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS {

template <class V>
void affine_row_x86(const float* src, float* dst, size_t n, float scale, float shift) {
  constexpr size_t W = V::kWidth;
  const typename V::reg a = V::set1(scale), b = V::set1(shift);
  size_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const auto x0 = V::load(src + i), x1 = V::load(src + i + W);
    const auto x2 = V::load(src + i + 2 * W), x3 = V::load(src + i + 3 * W);
    V::store(dst + i, V::fmadd(x0, a, b));
    V::store(dst + i + W, V::fmadd(x1, a, b));
    V::store(dst + i + 2 * W, V::fmadd(x2, a, b));
    V::store(dst + i + 3 * W, V::fmadd(x3, a, b));
  }
  for (; i + W <= n; i += W) V::store(dst + i, V::fmadd(V::load(src + i), a, b));
  if (i < n) V::store_partial(dst + i, V::fmadd(V::load_partial(src + i, n - i), a, b), n - i);
}

}  // namespace kestrel::kernels::x86::KESTREL_X86_MISC_NS
