// The plan shared by the x86 channel-tile dot-product kernels (bf16 pairs,
// bf16_conv1x1_32x12_avx512bf16.cpp; int8 quads, i8_conv_32x12_avx512vnni.cpp): the K
// taps of an output (input channels of a group x window) packed kPer to a dword, the map's pixels in groups of NP, the output
// channels in panels of MR.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

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

// The input of an im2col int8 kernel as zero-padded byte planes, one a channel: the
// rows and columns any tap reads, so every tap of a pixel is one load at an offset.
struct PaddedPlanes {
  int rows, cols;  // of a channel's plane
  size_t cstep;    // bytes from one channel's plane to the next
  explicit PaddedPlanes(const ConvGeometry& g)
      : rows(std::max(g.pad_top + g.in_h, (g.out_h - 1) * g.sh + (g.kh - 1) * g.dh + 1)),
        cols(std::max(g.pad_left + g.in_w, (g.out_w - 1) * g.sw + (g.kw - 1) * g.dw + 1)),
        cstep((static_cast<size_t>(rows) * cols + 63) / 64 * 64) {}
  // The planes and `slack` bytes after them, which a kernel's loads may read.
  size_t bytes(const ConvGeometry& g, size_t slack) const { return static_cast<size_t>(g.in_c) * cstep + slack; }

  // Channels [c0, c1) into their planes: the padding zero, then row(c, y, dst) writes
  // input row y of channel c at dst (quantized, or copied).
  template <class Row>
  void fill(const ConvGeometry& g, int8_t* planes, int c0, int c1, const Row& row) const {
    for (int c = c0; c < c1; ++c) {
      int8_t* plane = planes + static_cast<size_t>(c) * cstep;
      std::fill(plane, plane + cstep, int8_t{0});
      for (int y = 0; y < g.in_h; ++y) row(c, y, plane + static_cast<size_t>(g.pad_top + y) * cols + g.pad_left);
    }
  }

  // The runs of np output pixels from pixel px on (their pixels along one output row
  // each): run(j, len, origin) for lanes [j, j + len), whose first pixel's window
  // origin is origin bytes into a plane.
  template <class Run>
  void for_each_run(const ConvGeometry& g, size_t px, int np, const Run& run) const {
    int oy = static_cast<int>(px / g.out_w), ox = static_cast<int>(px % g.out_w);
    for (int j = 0; j < np; ox = 0, ++oy) {
      const int len = std::min(np - j, g.out_w - ox);
      run(j, len, static_cast<ptrdiff_t>(oy) * g.sh * cols + static_cast<ptrdiff_t>(ox) * g.sw);
      j += len;
    }
  }
};

// The taps in the weights' order (input channel, kernel row, kernel column) over the
// padded planes: at() the current tap's offset from a window origin, then step().
struct TapWalk {
  const ConvGeometry& g;
  const PaddedPlanes& pad;
  const int8_t* plane;
  int ky = 0, kx = 0;
  const int8_t* at() const { return plane + static_cast<ptrdiff_t>(ky) * g.dh * pad.cols + kx * g.dw; }
  void step() {
    if (++kx < g.kw) return;
    kx = 0;
    if (++ky < g.kh) return;
    ky = 0;
    plane += pad.cstep;
  }
};

KESTREL_X86_NS_END
