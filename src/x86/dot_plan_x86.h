// The plan shared by the x86 channel-tile dot-product kernels (bf16 pairs,
// bf16_conv1x1_32x12_avx512bf16.cpp; int8 quads, i8_conv_32x12_avx512vnni.cpp): the K
// taps of an output (input channels of a group x window) packed kPer to a dword, the map's pixels in groups of NP, the output
// channels in panels of MR.
#pragma once
#include <cstddef>

#include "kernels/conv_kernels.h"
#include "x86/x86_vec.h"

// In each ISA's own namespace (x86_vec.h), like everything built with ISA flags.
KESTREL_X86_NS_BEGIN

template <int kPer, int MR, int NP>
struct DotPlan {
  size_t k, kd, pixels, full;  // kd: dwords of K; full: groups of NP pixels
  int rest, panels;

  explicit DotPlan(const ConvGeometry& g)
      : k(static_cast<size_t>(g.in_c / g.group) * g.kh * g.kw),
        kd((k + kPer - 1) / kPer),
        pixels(static_cast<size_t>(g.out_h) * g.out_w),
        full(pixels / NP),
        rest(static_cast<int>(pixels % NP)),
        panels((g.out_c + MR - 1) / MR) {}

  int group_pixels(size_t gi) const { return gi < full ? NP : rest; }
  size_t group_count() const { return full + (rest ? 1 : 0); }
};

KESTREL_X86_NS_END
