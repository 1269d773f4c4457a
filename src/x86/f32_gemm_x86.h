// The register-blocked SGEMM microkernel of the x86 convolutions, written once over
// the vector traits of x86_vec.h: C[MR][NV * W] = A[MR][k] * B[k][NV * W] + bias,
// MR * NV accumulators, per k step NV vector loads of B (pixels) and MR broadcasts
// of A (weights of one input channel / tap for MR output channels), MR * NV FMAs.
//
// Tiles (chosen for 2 FMA ports x 4-cycle latency = at least 8 independent chains,
// and few loads per FMA):
//   AVX-512  8 x 48: 24 zmm accumulators + 3 pixel vectors (27 of 32 registers);
//            per step 3 loads + 8 broadcasts (folded into the FMA as {1to16}) for 24 FMAs
//   AVX2     4 x 24: 12 ymm accumulators + 3 pixel vectors + 1 broadcast (16 of 16);
//            per step 3 loads + 4 broadcasts for 12 FMAs
// A partial tile (the last pixels of a map) runs the same code with fewer vectors
// (NV - 1, ...), its last vector stored under a mask.
//
// Operand layouts:
//   A  a[kk * MR + r]  : step kk, row r (output channel r of an MR-channel panel),
//                        packed once at Net load, rows past the real ones zero
//   B  b[kk * ldb + j] : step kk, column j (a pixel); ldb = NV * W for packed tiles,
//                        the channel stride when B is the input itself
// Each C element is bias followed by the fma chain over kk = 0..k-1 in order, so its
// bits depend neither on the tile shape nor on the thread count.
#pragma once
#include <algorithm>
#include <cstddef>

#include "layers/activation.h"
#include "x86/x86_kernels.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN
namespace gemm {

enum class Act { kNone, kReLU, kClip, kLeaky, kOther };

// Activation on the accumulators on their way out: ReLU, Clip and LeakyReLU in
// vector form; any other activation is applied by finish() to the stored values, by
// the ISA's activation kernel (vector exp/erf; the scalar reference loop it replaced
// took 3 of CenterNet's 30 ms in its sigmoid head alone, bench/bf16/RESULTS.md).
template <class V, Act kAct>
struct Epilogue {
  using reg = typename V::reg;
  static constexpr bool kAfter = kAct == Act::kOther;
  reg alpha, beta;
  const ActivationSpec* spec;

  explicit Epilogue(const ActivationSpec& a) : alpha(V::set1(a.alpha)), beta(V::set1(a.beta)), spec(&a) {}

  KESTREL_X86_INLINE reg operator()(reg x) const {
    if constexpr (kAct == Act::kReLU) {
      // max/min return their second operand when either is NaN: x last keeps NaN, as
      // the reference does.
      return V::max(V::zero(), x);
    } else if constexpr (kAct == Act::kClip) {
      return V::min(beta, V::max(alpha, x));
    } else if constexpr (kAct == Act::kLeaky) {
      return V::select_pos(x, V::mul(x, alpha));
    } else {
      return x;
    }
  }

  void finish(float* p, size_t n) const {
    if constexpr (kAfter) {
      const ActivationKernel& k = V::kWidth == 16 ? kF32Activation_Avx512 : kF32Activation_Avx2;
      k.run(*spec, p, p, n);
    }
  }
};

// Calls fn(Epilogue<V, A>(act)) for the A that computes `act`: the caller's loop nest
// is instantiated once per kind, so no store branches on the activation.
template <class V, class Fn>
inline void with_epilogue(const ActivationSpec& act, Fn&& fn) {
  using T = fb::ActivationType;
  switch (act.type) {
    case T::None: fn(Epilogue<V, Act::kNone>(act)); break;
    case T::ReLU: fn(Epilogue<V, Act::kReLU>(act)); break;
    case T::Clip: fn(Epilogue<V, Act::kClip>(act)); break;
    case T::LeakyReLU: fn(Epilogue<V, Act::kLeaky>(act)); break;
    default: fn(Epilogue<V, Act::kOther>(act)); break;
  }
}

// Where row kk of B starts. StridedRows: b + kk * ldb (an im2col tile, or the input
// itself for a 1x1 convolution). OffsetRows: base + off[kk], for B rows read straight
// from padded input rows (f32_conv_rows_x86.h), with no im2col copy.
// at(j): the same rows from column j on.
struct StridedRows {
  const float* b;
  size_t ldb;
  KESTREL_X86_INLINE const float* row() const { return b; }
  KESTREL_X86_INLINE void next() { b += ldb; }
  KESTREL_X86_INLINE StridedRows at(size_t j) const { return {b + j, ldb}; }
};
struct OffsetRows {
  const float* base;
  const ptrdiff_t* off;
  KESTREL_X86_INLINE const float* row() const { return base + *off; }
  KESTREL_X86_INLINE void next() { ++off; }
  KESTREL_X86_INLINE OffsetRows at(size_t j) const { return {base + j, off}; }
};

// One MR x (NV * W) tile: C rows r < mr, columns j < nr (nr > (NV - 1) * W) at
// c + r * ldc + j. Not inlined, so that each tile shape gets its own register
// allocation.
template <class V, int MR, int NV, class Epi, class Rows>
__attribute__((noinline)) void tile(size_t k, const float* __restrict a, const float* __restrict bias, Rows rows,
                                    float* c, size_t ldc, int mr, int nr, const Epi& epi) {
  using R = typename V::reg;
  constexpr int W = V::kWidth;
  R acc[MR][NV];
  static_for<MR>([&](auto i) {
    const R bi = V::broadcast(bias + i);
    static_for<NV>([&](auto j) { acc[i][j] = bi; });
  });
  for (size_t kk = 0; kk < k; ++kk) {
    R x[NV];
    const float* __restrict b = rows.row();
    static_for<NV>([&](auto j) { x[j] = V::loadu(b + j * W); });
    static_for<MR>([&](auto i) {
      const R w = V::broadcast(a + i);
      static_for<NV>([&](auto j) { acc[i][j] = V::fmadd(w, x[j], acc[i][j]); });
    });
    a += MR;
    rows.next();
  }
  if (mr == MR && nr == NV * W) {
    static_for<MR>([&](auto i) {
      static_for<NV>([&](auto j) { V::storeu(c + i * ldc + j * W, epi(acc[i][j])); });
    });
  } else {
    static_for<MR>([&](auto i) {
      if (i < mr) {
        static_for<NV>([&](auto j) {
          const int n = nr - j * W;
          if (n >= W) {
            V::storeu(c + i * ldc + j * W, epi(acc[i][j]));
          } else if (n > 0) {
            V::store_partial(c + i * ldc + j * W, epi(acc[i][j]), n);
          }
        });
      }
    });
  }
  if constexpr (Epi::kAfter) {
    for (int i = 0; i < mr; ++i) epi.finish(c + static_cast<size_t>(i) * ldc, static_cast<size_t>(nr));
  }
}

// A tile of nr <= NV * W columns, with the fewest vectors that cover them.
template <class V, int MR, int NV, class Epi, class Rows>
KESTREL_X86_INLINE void any_tile(size_t k, const float* a, const float* bias, Rows rows, float* c, size_t ldc, int mr,
                                 int nr, const Epi& epi) {
  if constexpr (NV > 1) {
    if (nr <= (NV - 1) * V::kWidth) {
      any_tile<V, MR, NV - 1>(k, a, bias, rows, c, ldc, mr, nr, epi);
      return;
    }
  }
  tile<V, MR, NV>(k, a, bias, rows, c, ldc, mr, nr, epi);
}

// Writes an MV x NP channel tile's accumulators to C through the epilogue: blocked
// (P::kOut = W) or planar rows of NP pixels. Shared by ctile and the bf16 channel tile
// (bf16_conv1x1_32x12_avx512bf16.cpp).
template <class V, int MV, int NP, class Epi, class P>
KESTREL_X86_INLINE void store_ctile(typename V::reg (&acc)[NP][MV], float* c, size_t ldc, int mr, const Epi& epi) {
  using R = typename V::reg;
  constexpr int W = V::kWidth, MR = MV * W;
  if constexpr (P::kOut != 0) {
    static_assert(P::kOut == W, "a blocked C holds one vector of channels per pixel");
    // mr is a multiple of W (blocked channel counts are).
    static_for<MV>([&](auto v) {
      if (v * W < mr) {
        float* blk = c + v * ldc;
        static_for<NP>([&](auto p) { V::storeu(blk + p * W, epi(acc[p][v])); });
        epi.finish(blk, static_cast<size_t>(NP) * W);
      }
    });
    return;
  }
  alignas(64) float buf[NP][MR];
  static_for<NP>([&](auto p) { static_for<MV>([&](auto v) { V::storeu(&buf[p][v * W], epi(acc[p][v])); }); });
  // The costly activations on the whole tile at once: a call a row of NP pixels cost
  // the bf16 kernel's 12-pixel tiles 2x on CenterNet's sigmoid head.
  epi.finish(&buf[0][0], static_cast<size_t>(NP) * MR);
  if constexpr (2 * NP >= W) {
    // Each vector's W channels become W rows of NP pixels (the lanes past NP zero) in
    // registers, a masked store a channel: MobileNet v1's 14x14 tiles ran 7% faster
    // than copying the buffer out float by float, 20% at K = 128. The buffer between
    // keeps the transposes' registers from competing with the accumulators: without
    // it GCC spilled the accumulators inside the k loop, at half the speed.
    static_for<MV>([&](auto v) {
      R t[W];
      static_for<W>([&](auto p) {
        if constexpr (p < NP) {
          t[p] = V::loadu(&buf[p][v * W]);
        } else {
          t[p] = V::zero();
        }
      });
      transpose_square(t);
      static_for<W>([&](auto r) {
        if (v * W + r < mr) {
          float* row = c + static_cast<size_t>(v * W + r) * ldc;
          V::store_partial(row, t[r], NP);
        }
      });
    });
  } else {
    for (int r = 0; r < mr; ++r) {
      float* row = c + static_cast<size_t>(r) * ldc;
      for (int p = 0; p < NP; ++p) row[p] = buf[p][r];
    }
  }
}

// The transposed tile, for maps with few pixels (7x7, 14x14), where pixel vectors
// would run mostly empty: MV vectors of output channels x NP pixels, NP * MV
// accumulators, per k step MV vector loads of A (the packed panel row kk, MV * W output
// channels) and NP broadcasts of B (one per pixel), MV * NP FMAs. A pixel tail costs
// in proportion to its pixels, and the same fma chain order per C element keeps the
// bits equal to the pixel-vector tile's. The accumulators leave through a small
// [NP][MV * W] buffer and are written out row by row (C is [channel][pixel]).
//
// kPrefetch: the tile also prefetches into L2 a 64-byte line per k step from pf on, K
// lines: the next panel's weights (K x MV * W floats) take MV * W / 16 such tiles. On
// maps of 7x7 pixels a panel's weights serve only a few tiles, and cold weights from L3
// held 7x7 layers at 66-69% of the FMA peak in whole networks against 85% warm; all
// of them prefetched within one tile (2 lines per step with AVX-512) came too late.
//
// Resume: a tile over a slice of K starts from the accumulators an earlier slice parked
// ([NP][MV * W] at `from`, else the bias) and parks its own at `park` for the next
// slice (else the epilogue writes C): the same fma chain per output as one pass.
struct Resume {
  const float* from = nullptr;
  float* park = nullptr;
  Resume at(size_t offset) const { return {from ? from + offset : nullptr, park ? park + offset : nullptr}; }
};

// The operands' layouts of a channel tile: 0 = planar (B rows ldb apart, C rows ldc
// apart, a pixel a float), W = blocked by W channels (conv_kernels.h): B's k steps go
// through a block's W lanes and then ldb on to the next block, a pixel W floats on;
// C's W-channel blocks are ldc apart, each pixel one stored vector, no transpose.
template <int InW, int OutW>
struct Packs {
  static constexpr int kIn = InW, kOut = OutW;
  static constexpr int kInPixel = InW ? InW : 1, kOutPixel = OutW ? OutW : 1;  // floats per pixel
};
using PlanarPacks = Packs<0, 0>;

// How many prefetching tiles cover a panel's weights (a line per k step each), A the
// packed weights' type: floats, or IEEE halves (uint16_t, a half-weight kernel's,
// ConvKernel::half_weights, widened a panel slice at a time before its tiles run).
template <class V, int MV, class A = float>
constexpr int kPrefetchTiles = std::max(1, MV * V::kWidth * static_cast<int>(sizeof(A)) / 64);

// Rows: where B's k steps start (StridedRows; OffsetRows for the stems' padded input
// rows, f32_conv_rows_x86.h). A blocked B steps through a block's W lanes and then on
// to the next row. pf: where the bytes to prefetch start.
template <class V, int MV, int NP, bool kPrefetch, class Epi, class P = PlanarPacks, class Rows = StridedRows>
__attribute__((noinline)) void ctile(size_t k, const float* __restrict a, const float* __restrict bias, Rows rows,
                                     float* c, size_t ldc, int mr, const char* pf, const Epi& epi,
                                     const Resume& rs) {
  using R = typename V::reg;
  constexpr int W = V::kWidth, MR = MV * W;
  R acc[NP][MV];
  if (rs.from) {
    static_for<NP>([&](auto p) { static_for<MV>([&](auto v) { acc[p][v] = V::loadu(rs.from + p * MR + v * W); }); });
  } else {
    static_for<MV>([&](auto v) {
      const R bv = V::loadu(bias + v * W);
      static_for<NP>([&](auto p) { acc[p][v] = bv; });
    });
  }
  auto step = [&](const float* __restrict bk) __attribute__((always_inline)) {
    R w[MV];
    static_for<MV>([&](auto v) { w[v] = V::loadu(a + v * W); });
    if constexpr (kPrefetch) {
      _mm_prefetch(pf, _MM_HINT_T1);
      pf += 64;
    }
    static_for<NP>([&](auto p) {
      const R x = V::broadcast(bk + p * P::kInPixel);
      static_for<MV>([&](auto v) { acc[p][v] = V::fmadd(w[v], x, acc[p][v]); });
    });
    a += MR;
  };
  if constexpr (P::kIn != 0) {
    // k is a multiple of the block (the slices start on one).
    for (size_t kb = 0; kb < k; kb += P::kIn, rows.next()) {
      const float* __restrict b = rows.row();
      for (int j = 0; j < P::kIn; ++j) step(b + j);
    }
  } else {
    for (size_t kk = 0; kk < k; ++kk, rows.next()) step(rows.row());
  }
  if (rs.park) {
    static_for<NP>([&](auto p) { static_for<MV>([&](auto v) { V::storeu(rs.park + p * MR + v * W, acc[p][v]); }); });
    return;
  }
  store_ctile<V, MV, NP, Epi, P>(acc, c, ldc, mr, epi);
}

// Columns [0, nr) of an MV x any tile: NP pixels at a time, the rest by 4 and by 1.
// The first NP-pixel tiles prefetch the next panel's weights (pf, or nullptr), a line
// per k step each (ctile).
// rs: as ctile's, for pixel 0 of the columns ([nr][MV * W] floats). PfA: the type of
// the weights at pf (kPrefetchTiles).
template <class V, int MV, int NP, class Epi, class P = PlanarPacks, class Rows = StridedRows, class PfA = float>
KESTREL_X86_INLINE void any_ctile(size_t k, const float* a, const float* bias, Rows b, float* c, size_t ldc, int mr,
                                  int nr, const void* pf, const Epi& epi, const Resume& rs = Resume()) {
  constexpr int MR = MV * V::kWidth, BI = P::kInPixel, CO = P::kOutPixel;
  int j = 0;
  for (int i = 0; pf && i < kPrefetchTiles<V, MV, PfA> && j + NP <= nr; ++i, j += NP) {
    ctile<V, MV, NP, true, Epi, P>(k, a, bias, b.at(j * BI), c + j * CO, ldc, mr,
                                   static_cast<const char*>(pf) + i * k * 64, epi, rs.at(j * MR));
  }
  for (; j + NP <= nr; j += NP) {
    ctile<V, MV, NP, false, Epi, P>(k, a, bias, b.at(j * BI), c + j * CO, ldc, mr, nullptr, epi, rs.at(j * MR));
  }
  for (; j + 4 <= nr; j += 4) {
    ctile<V, MV, 4, false, Epi, P>(k, a, bias, b.at(j * BI), c + j * CO, ldc, mr, nullptr, epi, rs.at(j * MR));
  }
  for (; j < nr; ++j) {
    ctile<V, MV, 1, false, Epi, P>(k, a, bias, b.at(j * BI), c + j * CO, ldc, mr, nullptr, epi, rs.at(j * MR));
  }
}

// n IEEE halves (a multiple of W) widened into floats at dst: a half-weight kernel's
// panel slice, once before the tiles that use it. Widening in the tiles instead (a
// vcvtph2ps per weight vector per k step) cost MobileNet v1's 1x1 layers up to 13%
// (AMD EPYC); a slice widened once serves every pixel group of the panel.
template <class V>
KESTREL_X86_INLINE void widen_halves(const uint16_t* __restrict src, size_t n, float* __restrict dst) {
  for (size_t i = 0; i < n; i += V::kWidth) V::storeu(dst + i, V::loadu(src + i));
}

// The weights a tile reads: a float panel as it is, a half one widened into `room`.
template <class V>
KESTREL_X86_INLINE const float* panel_floats(const float* a, size_t, float*) {
  return a;
}
template <class V>
KESTREL_X86_INLINE const float* panel_floats(const uint16_t* a, size_t n, float* room) {
  widen_halves<V>(a, n, room);
  return room;
}

}  // namespace gemm
KESTREL_X86_NS_END
