// Dense 3x3 stride-1 convolution by Winograd F(4x4, 3x3) on x86, written once over the
// vector traits of x86_vec.h (instantiated by f32_conv_winograd43_{avx512,avx2}.cpp):
// 36 multiplies per 4x4 output tile and channel pair instead of 144. The transforms
// are those of src/arm/f32_winograd43_transforms_neon.h (Lavin & Gray 2016):
//
//   V = B^T d B (6x6 input tile d),  Y = A^T M A (4x4 output from the 6x6 products M)
//   B^T = [4  0 -5  0 1 0]     A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]           [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]           [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]           [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]
//         [0  4  0 -5 0 1]
//
// Lanes. A vector holds W tiles (one lane each) as four "units": a unit is U = W / 4
// tiles side by side in one tile row, i.e. W consecutive input columns (+ 2 for the
// window). Row r of a unit is one unaligned load, and the 4 x 4 transpose inside each
// 128-bit lane (transpose4) of the four units' loads turns them into the six columns
// of the W tiles: lane 4 * i + k is tile i of unit k. The output side runs the same
// transpose backwards, so a unit's 4 output rows are W contiguous pixels each.
// Units are numbered in raster order, ceil(tiles_w / U) per tile row; a unit whose
// window (6 rows x W + 4 columns, the last two read but unused) is not inside the map
// is first copied into a zero-padded patch, so that no read passes a row's end.
//
// Layouts
//   packed weights  U[panel][xi][ic][MR] = (G g G^T)[xi] of output channel panel*MR + r,
//                   computed in double at Net load, missing channels zero; then the
//                   bias, out_c rounded up to panels * MR (zero-padded)
//   per-thread      V[xi][ic][NR] (NR = block vectors * W), M[xi][MR][NR], patches
// The 36 products of a panel are the MR x NR microkernel of f32_gemm_x86.h.
//
// Threading: work items are (block of unit vectors, chunk of output-channel panels).
// Every lane runs the same instructions whatever block, vector or path it lands in,
// and the in_c reduction is one fma chain in a fixed order, so the result is
// bit-identical for every thread count and partition.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv_kernels.h"
#include "kernels/winograd_weights.h"
#include "x86/f32_gemm_x86.h"

KESTREL_X86_NS_BEGIN
namespace wino43 {

constexpr int kAlpha = 6;  // input tile extent
constexpr int kOut = 4;    // output tile extent
constexpr int kXi = kAlpha * kAlpha;
constexpr int kUnits = 4;  // units per vector (the transpose is 4 x 4)
constexpr int kMaxInChannels = 4096;
// V bytes per thread that a block aims for (a share of L2: V is re-read per panel).
constexpr size_t kBlockBytes = 640 * 1024;

// In each 128-bit lane L: out c = (a[L][c], b[L][c], c[L][c], d[L][c]). Its own inverse.
KESTREL_X86_INLINE void transpose4(__m256& a, __m256& b, __m256& c, __m256& d) {
  const __m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(a, b)), t1 = _mm256_castps_pd(_mm256_unpackhi_ps(a, b));
  const __m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(c, d)), t3 = _mm256_castps_pd(_mm256_unpackhi_ps(c, d));
  a = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
  b = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
  c = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
  d = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
}
#if defined(__AVX512F__)
// The zero-masked forms with every lane set, for the reason x86_vec.h gives for max/min.
KESTREL_X86_INLINE void transpose4(__m512& a, __m512& b, __m512& c, __m512& d) {
  const __m512d t0 = _mm512_castps_pd(_mm512_maskz_unpacklo_ps(0xFFFF, a, b));
  const __m512d t1 = _mm512_castps_pd(_mm512_maskz_unpackhi_ps(0xFFFF, a, b));
  const __m512d t2 = _mm512_castps_pd(_mm512_maskz_unpacklo_ps(0xFFFF, c, d));
  const __m512d t3 = _mm512_castps_pd(_mm512_maskz_unpackhi_ps(0xFFFF, c, d));
  a = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, t0, t2));
  b = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, t0, t2));
  c = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, t1, t3));
  d = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, t1, t3));
}
#endif

// B^T applied to one line of 6 values (GCC vector operators for + and -).
template <class V>
KESTREL_X86_INLINE void input_line(const typename V::reg d[6], typename V::reg r[6]) {
  using R = typename V::reg;
  const R four = V::set1(4.f), two = V::set1(2.f), m4 = V::set1(-4.f), m5 = V::set1(-5.f), m2 = V::set1(-2.f);
  const R s12 = d[1] + d[2], s34 = d[3] + d[4];
  const R d12 = d[1] - d[2], d43 = d[4] - d[3];
  const R d31 = d[3] - d[1], d42 = d[4] - d[2];
  r[0] = V::fmadd(m5, d[2], V::fmadd(four, d[0], d[4]));
  r[1] = V::fmadd(m4, s12, s34);
  r[2] = V::fmadd(four, d12, d43);
  r[3] = V::fmadd(two, d31, d42);
  r[4] = V::fmadd(m2, d31, d42);
  r[5] = V::fmadd(m5, d[3], V::fmadd(four, d[1], d[5]));
}

// A^T applied to one line of 6 products.
template <class V>
KESTREL_X86_INLINE void output_line(const typename V::reg m[6], typename V::reg y[4]) {
  using R = typename V::reg;
  const R s12 = m[1] + m[2], d12 = m[1] - m[2];
  const R s34 = m[3] + m[4], d34 = m[3] - m[4];
  y[0] = (m[0] + s12) + s34;
  y[1] = V::fmadd(V::set1(2.f), d34, d12);
  y[2] = V::fmadd(V::set1(4.f), s34, s12);
  y[3] = V::fmadd(V::set1(8.f), d34, d12) + m[5];
}

template <class V, int MR, int NV>
struct Plan {
  static constexpr int W = V::kWidth, kUnitTiles = W / 4, kPatchW = W + 4;
  int panels, tiles_w, tiles_h, units_per_row;
  size_t units, vectors, blocks, block_vectors;

  explicit Plan(const ConvGeometry& g) {
    panels = (g.out_c + MR - 1) / MR;
    tiles_w = (g.out_w + kOut - 1) / kOut;
    tiles_h = (g.out_h + kOut - 1) / kOut;
    units_per_row = (tiles_w + kUnitTiles - 1) / kUnitTiles;
    units = static_cast<size_t>(units_per_row) * tiles_h;
    vectors = (units + kUnits - 1) / kUnits;
    const size_t vector_bytes = size_t(kXi) * std::max(g.in_c, 1) * W * sizeof(float);
    const size_t most = std::clamp<size_t>(kBlockBytes / vector_bytes, 1, NV);
    blocks = (vectors + most - 1) / most;
    block_vectors = (vectors + blocks - 1) / blocks;  // even blocks: no nearly empty last one
  }
  size_t weight_floats(int in_c) const { return size_t(kXi) * panels * MR * in_c; }
};

// Where the four units of one vector read row r of their windows.
struct UnitSrc {
  long offset = 0;  // window origin (iy0, ix0) in the channel; may lie outside it
  bool inside = false;
  int r0 = 0, r1 = 0, c0 = 0, c1 = 0;  // window part inside the map (patch copies)
  int ty = 0, tx0 = 0;                  // first tile (output side)
  bool real = false;
};

template <class V, int MR, int NV>
UnitSrc unit_src(const ConvGeometry& g, const Plan<V, MR, NV>& p, size_t n) {
  using P = Plan<V, MR, NV>;
  UnitSrc u;
  if (n >= p.units) return u;
  u.real = true;
  u.ty = static_cast<int>(n / p.units_per_row);
  u.tx0 = static_cast<int>(n % p.units_per_row) * P::kUnitTiles;
  const int iy0 = u.ty * kOut - g.pad_top, ix0 = u.tx0 * kOut - g.pad_left;
  u.offset = static_cast<long>(iy0) * g.in_w + ix0;
  u.inside = iy0 >= 0 && iy0 + kAlpha <= g.in_h && ix0 >= 0 && ix0 + P::kPatchW <= g.in_w;
  u.r0 = std::clamp(-iy0, 0, kAlpha);
  u.r1 = std::clamp(g.in_h - iy0, u.r0, kAlpha);
  u.c0 = std::clamp(-ix0, 0, P::kPatchW);
  u.c1 = std::clamp(g.in_w - ix0, u.c0, P::kPatchW);
  return u;
}

// Input transform of one channel's W tiles (row r of unit k at src[k] + r * stride[k]);
// element xi goes to v + xi * xi_stride.
template <class V>
KESTREL_X86_INLINE void input_tiles(const float* const src[kUnits], const size_t stride[kUnits], float* v,
                                    size_t xi_stride) {
  using R = typename V::reg;
  R t[kAlpha][kAlpha];
#pragma GCC unroll 6
  for (int r = 0; r < kAlpha; ++r) {
    R lo[kUnits], hi[kUnits];
    static_for<kUnits>([&](auto k) {
      lo[k] = V::loadu(src[k] + r * stride[k]);
      hi[k] = V::loadu(src[k] + r * stride[k] + 4);
    });
    transpose4(lo[0], lo[1], lo[2], lo[3]);
    transpose4(hi[0], hi[1], hi[2], hi[3]);
    const R d[kAlpha] = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]};
    input_line<V>(d, t[r]);
  }
#pragma GCC unroll 6
  for (int j = 0; j < kAlpha; ++j) {
    const R col[kAlpha] = {t[0][j], t[1][j], t[2][j], t[3][j], t[4][j], t[5][j]};
    R o[kAlpha];
    input_line<V>(col, o);
#pragma GCC unroll 6
    for (int i = 0; i < kAlpha; ++i) V::storeu(v + (i * kAlpha + j) * xi_stride, o[i]);
  }
}

// V[xi][ic][NR] of the block's vectors; patch holds kUnits zero-padded windows.
template <class V, int MR, int NV>
void transform_input(const ConvGeometry& g, const Plan<V, MR, NV>&, const UnitSrc* units, int nvec,
                     const float* in, size_t in_cstep, float* v, float* patch) {
  using P = Plan<V, MR, NV>;
  constexpr int W = V::kWidth;
  const size_t nr = static_cast<size_t>(nvec) * W, xi_stride = static_cast<size_t>(g.in_c) * nr;
  for (int q = 0; q < nvec; ++q) {
    const UnitSrc* u = units + q * kUnits;
    const float* src[kUnits];
    size_t stride[kUnits];
    float* pat[kUnits];
    for (int k = 0; k < kUnits; ++k) {
      pat[k] = patch + k * kAlpha * P::kPatchW;
      if (!u[k].inside) std::fill(pat[k], pat[k] + kAlpha * P::kPatchW, 0.f);
    }
    for (int ic = 0; ic < g.in_c; ++ic) {
      const float* chan = in + ic * in_cstep;
      for (int k = 0; k < kUnits; ++k) {
        if (u[k].inside) {
          src[k] = chan + u[k].offset;
          stride[k] = static_cast<size_t>(g.in_w);
          continue;
        }
        // The zeros outside [r0, r1) x [c0, c1) were written above, once per vector.
        for (int r = u[k].r0; r < u[k].r1; ++r) {
          std::memcpy(pat[k] + r * P::kPatchW + u[k].c0, chan + u[k].offset + static_cast<long>(r) * g.in_w + u[k].c0,
                      sizeof(float) * (u[k].c1 - u[k].c0));
        }
        src[k] = pat[k];
        stride[k] = P::kPatchW;
      }
      input_tiles<V>(src, stride, v + static_cast<size_t>(ic) * nr + q * W, xi_stride);
    }
  }
}

// Output transform of one channel's W tiles (products at m, xi stride xi_stride),
// bias + activation, and the store of the units' real pixels.
template <class V, class Epi>
KESTREL_X86_INLINE void output_tiles(const ConvGeometry& g, const UnitSrc* u, const float* m, size_t xi_stride,
                                     float bias, const Epi& epi, float* out) {
  using R = typename V::reg;
  constexpr int W = V::kWidth;
  R s[kAlpha][kOut];
#pragma GCC unroll 6
  for (int i = 0; i < kAlpha; ++i) {
    R line[kAlpha];
#pragma GCC unroll 6
    for (int j = 0; j < kAlpha; ++j) line[j] = V::loadu(m + (i * kAlpha + j) * xi_stride);
    output_line<V>(line, s[i]);
  }
  R y[kOut][kOut];
#pragma GCC unroll 4
  for (int b = 0; b < kOut; ++b) {
    const R col[kAlpha] = {s[0][b], s[1][b], s[2][b], s[3][b], s[4][b], s[5][b]};
    R o[kOut];
    output_line<V>(col, o);
#pragma GCC unroll 4
    for (int a = 0; a < kOut; ++a) y[a][b] = o[a];
  }
  const R vb = V::set1(bias);
#pragma GCC unroll 4
  for (int a = 0; a < kOut; ++a) {
    transpose4(y[a][0], y[a][1], y[a][2], y[a][3]);  // y[a][k]: row a of unit k, W pixels
    for (int k = 0; k < kUnits; ++k) {
      const int oy = u[k].ty * kOut + a, ox = u[k].tx0 * kOut;
      if (!u[k].real || oy >= g.out_h) continue;
      const int n = std::min(W, g.out_w - ox);
      float* dst = out + static_cast<size_t>(oy) * g.out_w + ox;
      const R val = epi(y[a][k] + vb);
      if (n == W) {
        V::storeu(dst, val);
      } else {
        V::store_partial(dst, val, n);
      }
      epi.finish(dst, static_cast<size_t>(n));
    }
  }
}

template <class V, int MR, int NV>
size_t packed_floats(const ConvGeometry& g) {
  const Plan<V, MR, NV> p(g);
  return p.weight_floats(g.in_c) + static_cast<size_t>(p.panels) * MR;
}

template <class V, int MR, int NV>
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const Plan<V, MR, NV> p(g);
  std::fill(packed, packed + packed_floats<V, MR, NV>(g), 0.f);
  float u[kXi];
  for (int oc = 0; oc < g.out_c; ++oc) {
    for (int ic = 0; ic < g.in_c; ++ic) {
      winograd43_weight_transform(weight + (static_cast<size_t>(oc) * g.in_c + ic) * 9, u);
      for (size_t xi = 0; xi < size_t(kXi); ++xi) {
        packed[((static_cast<size_t>(oc / MR) * kXi + xi) * g.in_c + ic) * MR + oc % MR] = u[xi];
      }
    }
  }
  if (bias) std::copy(bias, bias + g.out_c, packed + p.weight_floats(g.in_c));
}

inline size_t no_workspace(const ConvGeometry&) { return 0; }

template <class V, int MR, int NV>
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  using P = Plan<V, MR, NV>;
  const P p(g);
  const size_t nr = p.block_vectors * V::kWidth;
  return (size_t(kXi) * g.in_c * nr + size_t(kXi) * MR * nr + size_t(kUnits) * kAlpha * P::kPatchW) * sizeof(float);
}

template <class V, int MR, int NV, class Epi>
void run_impl(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out,
              size_t out_cstep, const KernelContext& ctx, const Epi& epi) {
  constexpr int W = V::kWidth;
  const Plan<V, MR, NV> pl(g);
  const int threads = std::max(1, ctx.num_threads);
  // With several threads, blocks of at most vectors / threads, so that the split
  // comes out even: 14 vectors in 5 blocks of 3 left one of 2 threads 40% idle.
  // Smaller blocks than that cost more than they balance (4 per thread: one-vector
  // tiles, ResNet-18 at 2 threads 11.2 -> 16.8 ms). Never larger than the plan's
  // block, which sized the scratch; the result does not depend on the split
  // (gemm::tile's fma order is per element).
  const size_t block_vectors =
      threads == 1 ? pl.block_vectors
                   : std::clamp<size_t>(pl.vectors / static_cast<size_t>(threads), 1, pl.block_vectors);
  const size_t blocks = (pl.vectors + block_vectors - 1) / block_vectors;
  // Few blocks (small maps): split the panels so that every thread gets work; each
  // chunk then transforms its block's input again.
  size_t chunks = std::min<size_t>(pl.panels, (threads + blocks - 1) / blocks);
  const size_t chunk_panels = (pl.panels + chunks - 1) / chunks;
  chunks = (pl.panels + chunk_panels - 1) / chunk_panels;
  const long items = static_cast<long>(blocks * chunks);
  const float* bias_all = packed + pl.weight_floats(g.in_c);
  const size_t k = g.in_c;
  alignas(64) static const float kZeros[MR] = {};
  const gemm::Epilogue<V, gemm::Act::kNone> raw{ActivationSpec{}};

#pragma omp parallel for num_threads(threads) schedule(static)
  for (long item = 0; item < items; ++item) {
    const size_t chunk = item % chunks, blk = item / chunks;
    const size_t vec0 = blk * block_vectors;
    const int nvec = static_cast<int>(std::min(block_vectors, pl.vectors - vec0));
    const size_t nr = static_cast<size_t>(nvec) * W;
    float* v = static_cast<float*>(ctx.scratch_of(omp_get_thread_num()));
    float* m = v + kXi * k * nr;
    float* patch = m + kXi * MR * nr;
    UnitSrc units[NV * kUnits];
    for (int i = 0; i < nvec * kUnits; ++i) units[i] = unit_src(g, pl, vec0 * kUnits + i);
    transform_input(g, pl, units, nvec, in, in_cstep, v, patch);
    const int panel_end = static_cast<int>(std::min<size_t>(pl.panels, (chunk + 1) * chunk_panels));
    for (int panel = static_cast<int>(chunk * chunk_panels); panel < panel_end; ++panel) {
      for (int xi = 0; xi < kXi; ++xi) {
        const float* a = packed + (static_cast<size_t>(panel) * kXi + xi) * k * MR;
        // The next product's weights, to L2: one tile call is too short for the hardware
        // prefetcher to ramp up on a new stream, and the weights (36 * in_c * out_c
        // floats) rarely stay cached between inferences. (The last one reaches past the
        // weights; prefetches do not fault.)
        for (size_t o = 0; o < k * MR; o += 16) {
          _mm_prefetch(reinterpret_cast<const char*>(a + k * MR + o), _MM_HINT_T1);
        }
        gemm::any_tile<V, MR, NV>(k, a, kZeros, gemm::StridedRows{v + xi * k * nr, nr}, m + xi * MR * nr, nr, MR,
                                  static_cast<int>(nr), raw);
      }
      const int mr = std::min(MR, g.out_c - panel * MR);
      for (int r = 0; r < mr; ++r) {
        const int oc = panel * MR + r;
        for (int q = 0; q < nvec; ++q) {
          output_tiles<V>(g, units + q * kUnits, m + r * nr + q * W, MR * nr, bias_all[oc], epi, out + oc * out_cstep);
        }
      }
    }
  }
}

template <class V, int MR, int NV>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  gemm::with_epilogue<V>(g.act, [&](const auto& epi) {
    run_impl<V, MR, NV>(g, packed, in, in_cstep, out, out_cstep, ctx, epi);
  });
}

// The geometries Winograd computes (3x3, stride 1, dilation 1, one group), before
// asking whether it pays. Any padding: the patches clamp every window to the map.
inline bool computes(const ConvGeometry& g) {
  if (g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1 || g.group != 1) return false;
  if (g.in_c <= 0 || g.out_c <= 0 || g.in_c > kMaxInChannels || g.out_c > (1 << 16)) return false;
  if (g.in_h <= 0 || g.in_w <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  return g.pad_top >= 0 && g.pad_left >= 0 && g.pad_top <= (1 << 16) && g.pad_left <= (1 << 16) &&
         g.out_h <= (1 << 16) && g.out_w <= (1 << 16);
}

// Claimed where the products cost at most half the SGEMM's multiplies, counting the
// lanes a vector leaves empty (vectors * W tiles of 36 against out_h * out_w * 9). On
// an AVX-512 Zen core (1 thread, weights flushed from cache between runs) this held
// for every ResNet-like size measured: 56x56x64 0.60 ms against 1.36 (8x48 SGEMM),
// 28x28x128 0.56 / 1.29, 14x14x256 0.85 / 1.56, 14x14x512 3.9 / 5.7, 12x12x256
// (ratio 0.44) 0.99 / 1.53, 12x12x64 (0.44) 0.107 / 0.103, AVX2 8x8x64 (0.5) 0.103 /
// 0.123; above it 7x7x512 (AVX-512 ratio 1.3: 4 tiles in 16 lanes) 3.8 / 1.8 and
// 8x8x256 (1.0) 1.0 / 0.85. Down to 8 input channels it still wins (56x56, 8 -> 8:
// 0.060 / 0.074); at 4 the input transform is not amortized (4 -> 16: 0.055 / 0.045).
template <class V, int MR, int NV>
bool supports(const ConvGeometry& g) {
  if (!computes(g) || g.in_c < 8 || g.out_c < 4) return false;
  const Plan<V, MR, NV> p(g);
  const double products = static_cast<double>(p.vectors) * V::kWidth * kXi;
  return products <= 0.5 * (static_cast<double>(g.out_h) * g.out_w * 9);
}

// The kernel entry of one tile shape (an ISA's translation unit names only its tile).
template <class V, int MR, int NV>
constexpr ConvKernel kernel(const char* name, Isa isa) {
  return {name,         isa, supports<V, MR, NV>, packed_floats<V, MR, NV>, pack<V, MR, NV>, no_workspace,
          workspace_per_thread_bytes<V, MR, NV>, 1e-3, run<V, MR, NV>};
}

}  // namespace wino43
KESTREL_X86_NS_END
