// Running one convolution kernel on blocked or planar operands, for the kernel suites
// (test_kernels_blocked.cpp, test_kernels_pack4_neon.cpp).
#pragma once
#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/conv_kernels.h"

namespace kt {

// Runs k on g with `in` (planar) given in g.in_pack's layout; the output comes back
// planar. With nan_padding the input's channel padding (past each channel's values up
// to its cstep) is NaN, so a kernel that reads it into a result shows.
inline kestrel::Mat run_conv_kernel(const kestrel::kernels::ConvKernel* k, const kestrel::kernels::ConvGeometry& g,
                                    const kestrel::Mat& in, const float* packed, int threads,
                                    bool nan_padding = false) {
  kestrel::Mat src = g.in_pack == 1 ? (nan_padding ? in.clone() : in) : kestrel::convert_packing(in, g.in_pack);
  REQUIRE(src.data != nullptr);
  if (nan_padding) {
    const size_t plane = size_t(src.w) * src.h * src.elempack;
    for (int q = 0; q < src.c; ++q) std::fill(src.channel(q) + plane, src.channel(q) + src.cstep, NAN);
  }
  kestrel::Shape os = kestrel::Shape::make3(g.out_w, g.out_h, g.out_c / g.out_pack);
  os.elempack = g.out_pack;
  kestrel::Mat out;
  REQUIRE(out.create(os));
  fill_sentinel(out);
  KernelScratch scratch;
  const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
  k->run(g, packed, src.data, src.cstep, out.data, out.cstep, ctx);
  CHECK_MESSAGE(padding_untouched(out), "wrote into channel padding");
  return g.out_pack == 1 ? out : kestrel::convert_packing(out, 1);
}

// The same shape and the same bits in every channel's values (padding not compared).
inline bool same_plane_values(const kestrel::Mat& a, const kestrel::Mat& b) {
  if (a.shape() != b.shape()) return false;
  const size_t plane = size_t(a.w) * a.h;
  for (int c = 0; c < a.c; ++c) {
    if (std::memcmp(a.channel(c), b.channel(c), plane * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace kt
