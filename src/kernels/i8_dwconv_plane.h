// The zero-padded plane the one-pass int8 depthwise kernels (x86 i8_dwconv_16_avx512,
// NEON i8_dwconv_8x2_neon) quantize a channel into: the rows the steps read, each wide
// enough for every step's loads (columns past the outputs' reach feed lanes never
// stored). At stride 2 a row is its even columns and then its odd ones (half = cols / 2
// each): tap kx of output x is column 2x + kx, entry x + kx / 2 of the even or the odd
// half, so every tap is adjacent values.
#pragma once
#include <algorithm>

#include "kernels/conv_kernels.h"

namespace kestrel::kernels {

struct I8DwPlane {
  int rows, cols, half;
};

// For a K x K kernel whose steps cover `step` output pixels of `row_step` output rows
// and load up to `overrun` values past a step's last tap; `room` columns past the
// input's last one (what the kernel's fill may write there).
// Internal linkage: the kernels that include this are built with their ISA's flags, and
// one shared out-of-line copy could carry another ISA's instructions.
static inline I8DwPlane i8_dwconv_plane(const ConvGeometry& g, int k, int step, int row_step, int overrun, int room) {
  const int steps = (g.out_w + step - 1) / step;
  const int reach = g.sh * steps * step + k + overrun;
  const int cols = (std::max(reach, g.pad_left + g.in_w + room) + 1) / 2 * 2;
  const int out_rows = (g.out_h + row_step - 1) / row_step * row_step;
  return {(out_rows - 1) * g.sh + k, cols, cols / 2};
}

}  // namespace kestrel::kernels
