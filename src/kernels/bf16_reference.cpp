// The bf16 oracle (conv_kernels.h: conv_reference_bf16) and the geometry rule that
// decides which convolutions run in bf16 at Precision::kBf16.
#include <cmath>
#include <cstring>

#include "kernels/conv_kernels.h"
#include "layers/activation.h"

namespace kestrel::kernels {

uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet, sign and payload's top kept
  if ((u & 0x7F800000u) == 0) u &= 0x80000000u;                       // subnormal: signed zero
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

bool bf16_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1 &&
         g.pad_top == 0 && g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w && g.in_c >= kBf16MinInputs &&
         g.out_c >= kBf16MinOutputs;
}

namespace {

// vdpbf16ps's subnormal rule for the fp32 sums: results flush to signed zero.
float flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.f, x) : x; }

}  // namespace

void conv_reference_bf16(const ConvGeometry& g, const float* weight, const float* bias, const float* in,
                         size_t in_cstep, float* out, size_t out_cstep, int num_threads) {
  const size_t pixels = static_cast<size_t>(g.out_h) * g.out_w, k = static_cast<size_t>(g.in_c);
  // Both operands rounded where they are read: forward() allocates nothing.
  auto bf = [](float x) { return from_bf16(to_bf16(x)); };
#pragma omp parallel for num_threads(num_threads)
  for (int oc = 0; oc < g.out_c; ++oc) {
    const float* wo = weight + static_cast<size_t>(oc) * k;
    for (size_t p = 0; p < pixels; ++p) {
      float sum = bias ? bias[oc] : 0.f;
      for (size_t c = 0; c < k; c += 2) {
        // An odd count's last pair is (x, 0): its zero product still adds (-0 + 0 = +0).
        sum = flush(sum + (c + 1 < k ? bf(wo[c + 1]) * bf(in[(c + 1) * in_cstep + p]) : 0.f));
        sum = flush(sum + bf(wo[c]) * bf(in[c * in_cstep + p]));
      }
      out[static_cast<size_t>(oc) * out_cstep + p] = activate(sum, g.act);
    }
  }
}

}  // namespace kestrel::kernels
