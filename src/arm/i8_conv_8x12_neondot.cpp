// int8 convolution with SDOT (ARMv8.2 dotprod; Precision::kInt8), one group: 8 output
// channels x 12 pixels per register tile, over the taps (input channels x window) in
// quads. Two kernels, as on x86 (i8_conv_32x12_avx512vnni.cpp): 1x1 stride 1, reading
// the input's rows as they are, and any other window, stride, padding or dilation,
// gathering each tap's row of pixels (im2col). SDOT by element adds four s8 x s8
// products into each int32 lane, so one instruction does 16 multiply-adds, four times
// FMLA's 4, and both operands are signed: no offset to take back out.
//
// The accumulators hold four pixels of one output channel (the input quads are the
// vector operand, the weight quads the indexed one), so a planar output is stored as it
// is: float(sum) * dequant + bias (a multiply and an add, as conv_reference_i8 does),
// the activation, an fp32 store; or (an int8 map, I8Operands) requantized in one fma
// and stored as bytes (i8_reference.h). An int8 input map's rows are interleaved into
// the quads as they are.
//
// The packing, threads and epilogue are i8_conv_driver_neon.h's, shared with the SMLAL
// kernels (i8_conv_4x4_neon.cpp); here the scheme: tap groups of a quad, weights
// [K / 4][8][4] per panel (tap 4q + i of row r at byte (q * 8 + r) * 4 + i), the tile
// loops of i8_conv_8x12_neondot.h, and a panel's whole int8 tiles in one asm.
#include "arm/arm_kernels.h"
#include "arm/i8_conv_8x12_neondot.h"
#include "arm/i8_conv_driver_neon.h"

namespace kestrel::kernels::arm {
namespace {

struct DotScheme {
  static constexpr int kGroup = 4;
  static constexpr bool kFusedI8 = true;
  static_assert(i8::kDotRows == i8conv::MR, "the SDOT tile is a panel high");

  static size_t weight_index(size_t, size_t q, int r, int i) { return (q * i8conv::MR + r) * kGroup + i; }

  template <int NV>
  static KESTREL_I8_NEON_INLINE void steps(size_t kd, const int8_t*& a, const int8_t* x, size_t xs,
                                           int32x4_t (&acc)[i8conv::MR][NV]) {
    i8::dot_steps<NV>(kd, a, x, xs, acc);
  }

  static KESTREL_I8_NEON_INLINE void tiles_i8(size_t kd, const int8_t* a, const int8_t* x, size_t xs, size_t tiles,
                                              const float* mc, const int8_t* bounds, int8_t* o, size_t ldc) {
    i8::dot_tiles_i8(kd, a, x, xs, tiles, mc, bounds, o, ldc);
  }
};

}  // namespace

const I8ConvKernel kI8Conv1x1_8x12_NeonDot =
    i8conv::pointwise_kernel<DotScheme>("i8_conv1x1_8x12_neondot", kI8NeedsDot8);
const I8ConvKernel kI8ConvIm2col_8x12_NeonDot =
    i8conv::im2col_kernel<DotScheme>("i8_conv_im2col_8x12_neondot", kI8NeedsDot8);

}  // namespace kestrel::kernels::arm
