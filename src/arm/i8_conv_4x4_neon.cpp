// int8 convolution without dotprod (Precision::kInt8 on ARMv8.0: Cortex-A53, A72), one
// group: SMULL/SMLAL2 products of 16 taps paired into int16, SADALP into int32
// (i8_conv_4x4_neon.h), in 4 x 4 register tiles. On these cores the alternative is the
// fp32 kernels on quantized values with a quantize and a dequantize pass (exact,
// kExactFloatTaps), at 4 multiply-adds an FMLA; here 16 take 3 instructions.
//
// The packing, threads and epilogue are i8_conv_driver_neon.h's, shared with SDOT
// (i8_conv_8x12_neondot.cpp): the same two kernels (1x1 stride 1; im2col), panels of 8
// channels and groups of 12 pixels. Differences: a tap group holds 16 taps (a pixel's
// 16 bytes are one SMLAL2 operand, so the 4 x 4 tile needs no shuffles; the 16 tap rows
// are transposed as they are stored, store_group<16>), and a panel's weights are two
// halves of 4 channels, [2][K / 16][4][16], one 4 x 4 tile's whole operand stream each.
// Registers hold 16 accumulators, so the 8 x 12 tile is 2 x 3 such tiles, each its own
// pass over the taps: the groups are read twice, the weights three times, in 64-byte
// LD1s (2 per 48 arithmetic instructions). Into an int8 map, each 4 x 4 tile
// requantizes and stores its bytes itself (smlal_4x4_i8, the driver's fused path).
//
// MobileNet v1 int8, cortex-a72, 1 thread: 212.7 M guest instructions on the exact
// fp32 route, 148.1 M here (fp32: 153.9 M); bench/int8/RESULTS.md.
#include "arm/arm_kernels.h"
#include "arm/i8_conv_4x4_neon.h"
#include "arm/i8_conv_driver_neon.h"

namespace kestrel::kernels::arm {
namespace {

constexpr int kRows = 4, kGroupTaps = 16;

struct SmlalScheme {
  static constexpr int kGroup = kGroupTaps;
  static constexpr bool kFusedI8 = true;

  static size_t weight_index(size_t kd, size_t q, int r, int i) {
    return ((r / kRows) * kd + q) * kRows * kGroup + (r % kRows) * kGroup + i;
  }

  template <int NV>
  static KESTREL_I8_NEON_INLINE void steps(size_t kd, const int8_t*& a, const int8_t* x, size_t xs,
                                           int32x4_t (&acc)[i8conv::MR][NV]) {
    alignas(16) int32_t sums[NV][i8conv::MR][4];
    i8::unroll<i8conv::MR / kRows>([&](auto h) KESTREL_I8_LAMBDA {
      i8::unroll<NV>([&](auto j) KESTREL_I8_LAMBDA {
        i8::smlal_4x4(kd, a + h * kd * kRows * kGroup, x + j * 4 * kGroup, xs, sums[j][h * kRows]);
      });
    });
    a += kd * i8conv::MR * kGroup;
    i8::unroll<i8conv::MR>([&](auto r) KESTREL_I8_LAMBDA {
      i8::unroll<NV>([&](auto j) KESTREL_I8_LAMBDA { acc[r][j] = vld1q_s32(sums[j][r]); });
    });
  }

  // `tiles` whole 8 x 12 tiles of one panel, requantized into int8 rows in each 4 x 4
  // tile's asm (smlal_4x4_i8): mc m[8] then c[8], x and o moving 12 pixels a tile.
  // Loops, not unrolled: one copy of the asm.
  static __attribute__((noinline)) void tiles_i8(size_t kd, const int8_t* a, const int8_t* x, size_t xs,
                                                 size_t tiles, const float* mc, const int8_t* bounds, int8_t* o,
                                                 size_t ldc) {
    for (size_t t = 0; t < tiles; ++t, x += i8conv::NP * kGroup, o += i8conv::NP) {
      for (int h = 0; h < i8conv::MR / kRows; ++h) {
        for (int j = 0; j < i8conv::NP / 4; ++j) {
          i8::smlal_4x4_i8(kd, a + h * kd * kRows * kGroup, x + j * 4 * kGroup, xs, mc + h * kRows, bounds,
                           o + h * kRows * ldc + 4 * j, ldc);
        }
      }
    }
  }
};

}  // namespace

const I8ConvKernel kI8Conv1x1_4x4_Neon = i8conv::pointwise_kernel<SmlalScheme>("i8_conv1x1_4x4_neon", kI8NeedsNothing);
const I8ConvKernel kI8ConvIm2col_4x4_Neon =
    i8conv::im2col_kernel<SmlalScheme>("i8_conv_im2col_4x4_neon", kI8NeedsNothing);

}  // namespace kestrel::kernels::arm
