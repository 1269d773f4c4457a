#include <arm_neon.h>

#include "fma_loop.h"

namespace kestrel::bench::detail {
namespace {
struct Neon {
  using reg = float32x4_t;
  static reg set1(float v) { return vdupq_n_f32(v); }
  static reg fma(reg a, reg b, reg c) { return vfmaq_f32(c, a, b); }
  static float first(reg a) { return vgetq_lane_f32(a, 0); }
};
}  // namespace

float fma_loop_neon(long iters) { return fma_chains<Neon>(iters); }

}  // namespace kestrel::bench::detail
