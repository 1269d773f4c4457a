// 1x1 convolution, stride 1 or 2, no padding, one group (Bi et al., Alg. 1 and 2):
// weights packed once into blocks of 8 output channels, the input packed per call
// into pixel tiles (4 channels x 8 pixels per unit, stride 2 subsampled while
// packing), then 8 x 8 register blocks (src/arm/f32_conv1x1_8x8_neon.h).
//
// Pixels are the out_h * out_w output positions in row-major order, cut into tiles:
// 8-pixel tiles, then one 4-pixel tile if 4..7 remain, then one tile of the last
// 1..3 pixels. A tile's packed input starts at in_c * (its first pixel) floats.
//
// Threads: one parallel region packs the tiles (split over tiles), then computes the
// (output-channel block, tile) pairs (split over pairs). Every output value comes
// from one tile computed by one thread in a fixed order, so the result does not
// depend on the thread count.
#include "arm/f32_conv1x1_8x8_neon.h"  // first: its GCC option covers this file

#include <algorithm>
#include <cstdint>

#include "arm/arm_kernels.h"

namespace kestrel::kernels::arm {
namespace {

using fb::ActivationType;
using namespace conv1x1;

size_t out_blocks(const ConvGeometry& g) { return (static_cast<size_t>(g.out_c) + kBlockOut - 1) / kBlockOut; }
size_t pixels(const ConvGeometry& g) { return static_cast<size_t>(g.out_h) * g.out_w; }

bool supports(const ConvGeometry& g) {
  const bool one_by_one = g.kh == 1 && g.kw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
  const bool strides = (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2);
  if (!one_by_one || !strides || g.in_c < 1 || g.out_c < 1 || g.in_h < 1 || g.in_w < 1) return false;
  // No padding on any side: the output covers exactly the sampled input positions.
  return g.pad_top == 0 && g.pad_left == 0 && g.out_h == (g.in_h - 1) / g.sh + 1 &&
         g.out_w == (g.in_w - 1) / g.sw + 1;
}

size_t packed_floats(const ConvGeometry& g) { return out_blocks(g) * kBlockOut * (static_cast<size_t>(g.in_c) + 1); }

// Block b holds w[c * 8 + o] for output channel 8b + o (zero past out_c, so the last
// block runs the same microkernel), then its 8 biases.
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const size_t k = static_cast<size_t>(g.in_c);
  for (size_t b = 0; b < out_blocks(g); ++b) {
    float* dst = packed + b * kBlockOut * (k + 1);
    for (int o = 0; o < kBlockOut; ++o) {
      const size_t oc = b * kBlockOut + o;
      const bool real = oc < static_cast<size_t>(g.out_c);
      for (size_t c = 0; c < k; ++c) dst[c * kBlockOut + o] = real ? weight[oc * k + c] : 0.f;
      dst[k * kBlockOut + o] = real && bias ? bias[oc] : 0.f;
    }
  }
}

size_t workspace_bytes(const ConvGeometry& g) { return static_cast<size_t>(g.in_c) * pixels(g) * sizeof(float); }
size_t no_workspace(const ConvGeometry&) { return 0; }

// --- tiles -------------------------------------------------------------------------

struct Tiling {
  size_t npix = 0, full = 0;  // pixels, 8-pixel tiles
  int four = 0, tail = 0;     // a 4-pixel tile (0/1), pixels in the last tile (0..3)

  explicit Tiling(size_t n) : npix(n), full(n / 8), four(n % 8 >= 4), tail(static_cast<int>(n % 4)) {}
  size_t count() const { return full + four + (tail > 0); }
  size_t first(size_t t) const { return t <= full ? 8 * t : 8 * full + 4 * four; }
  int width(size_t t) const { return t < full ? 8 : (t == full && four ? 4 : tail); }
};

struct Args {
  const ConvGeometry* g;
  const float* in;
  size_t in_cstep;
  float* out;
  size_t out_cstep;
  float* packed_in;  // the shared workspace
  const float* weights;
};

// Input offset of output pixel p.
size_t source_of(const ConvGeometry& g, size_t p) {
  const size_t oy = p / g.out_w, ox = p % g.out_w;
  return oy * g.sh * g.in_w + ox * g.sw;
}

// A kW-pixel tile whose pixels are src, src + step, ... in every channel.
template <int kW>
void pack_run(const float* src, size_t cstep, int sw, int k, float* dst) {
  for (int c = 0; c < k; ++c, src += cstep, dst += kW) {
    if (sw == 1) {
      vst1q_f32(dst, vld1q_f32(src));
      if constexpr (kW == 8) vst1q_f32(dst + 4, vld1q_f32(src + 4));
    } else {
      // Reads src[0 .. 2 * kW - 1]: pack_wide checks that the row holds them all.
      vst1q_f32(dst, vld2q_f32(src).val[0]);
      if constexpr (kW == 8) vst1q_f32(dst + 4, vld2q_f32(src + 8).val[0]);
    }
  }
}

// Any tile, through per-pixel offsets (tiles that wrap a row, the 1..3-pixel tail):
// layout [c][kW] for kW-pixel tiles, [r][c] for the tail (kW == 0, `n` pixels).
template <int kW>
void pack_gather(const Args& a, size_t p0, int n, float* dst) {
  const int k = a.g->in_c;
  size_t off[8];
  for (int r = 0; r < n; ++r) off[r] = source_of(*a.g, p0 + r);
  for (int c = 0; c < k; ++c) {
    const float* chan = a.in + c * a.in_cstep;
    for (int r = 0; r < n; ++r) {
      const float v = chan[off[r]];
      if constexpr (kW == 0) {
        dst[static_cast<size_t>(r) * k + c] = v;
      } else {
        dst[static_cast<size_t>(c) * kW + r] = v;
      }
    }
  }
}

template <int kW>
void pack_wide(const Args& a, size_t p0, float* dst) {
  const ConvGeometry& g = *a.g;
  // Stride 1 keeps the input's pixel order; otherwise a tile inside one output row
  // reads one input row at stride sw, with vld2q (2 * kW floats) when stride 2. The
  // last sampled column can be the row's last float, and then vld2q would read past
  // it: past the caller's buffer for an unpadded external input. Gather instead.
  const bool contiguous = g.sh == 1 && g.sw == 1;
  const size_t x0 = p0 % g.out_w * g.sw, run = g.sw == 1 ? kW : 2 * kW;
  if (contiguous || (p0 % g.out_w + kW <= static_cast<size_t>(g.out_w) && x0 + run <= static_cast<size_t>(g.in_w))) {
    pack_run<kW>(a.in + source_of(g, p0), a.in_cstep, g.sw, g.in_c, dst);
  } else {
    pack_gather<kW>(a, p0, kW, dst);
  }
}

void pack_tile(const Args& a, const Tiling& tiles, size_t t) {
  const size_t p0 = tiles.first(t);
  float* dst = a.packed_in + static_cast<size_t>(a.g->in_c) * p0;
  switch (tiles.width(t)) {
    case 8: pack_wide<8>(a, p0, dst); break;
    case 4: pack_wide<4>(a, p0, dst); break;
    default: pack_gather<0>(a, p0, tiles.width(t), dst); break;
  }
}

// --- epilogue ----------------------------------------------------------------------

// Bias is in the accumulators already; an epilogue applies the activation on the way
// out. kAfter: the activation has no vector form here and runs on the stored values.
template <ActivationType T>
struct Epilogue {
  static_assert(T == ActivationType::None || T == ActivationType::ReLU || T == ActivationType::Clip ||
                T == ActivationType::LeakyReLU);
  static constexpr bool kAfter = false;
  float32x4_t alpha, beta;
  explicit Epilogue(const ActivationSpec& s) : alpha(vdupq_n_f32(s.alpha)), beta(vdupq_n_f32(s.beta)) {}
  float32x4_t operator()(float32x4_t x) const {
    if constexpr (T == ActivationType::ReLU) {
      return vmaxq_f32(x, vdupq_n_f32(0.f));
    } else if constexpr (T == ActivationType::Clip) {
      return vminq_f32(vmaxq_f32(x, alpha), beta);
    } else if constexpr (T == ActivationType::LeakyReLU) {
      return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(0.f)), x, vmulq_f32(x, alpha));
    } else {
      return x;
    }
  }
};

struct ScalarEpilogue {
  static constexpr bool kAfter = true;
  explicit ScalarEpilogue(const ActivationSpec&) {}
  float32x4_t operator()(float32x4_t x) const { return x; }
};

// Calls st(o, accumulator of output channel o) for the block's real channels. The
// full block is its own branch-free case (GCC also allocates the 8 x 8 loop's
// registers better with it).
template <class Fn>
inline void for_rows(const Col& c, int rows, Fn&& st) {
  if (rows == kBlockOut) {
    st(0, c.o0);
    st(1, c.o1);
    st(2, c.o2);
    st(3, c.o3);
    st(4, c.o4);
    st(5, c.o5);
    st(6, c.o6);
    st(7, c.o7);
    return;
  }
  st(0, c.o0);
  if (rows > 1) st(1, c.o1);
  if (rows > 2) st(2, c.o2);
  if (rows > 3) st(3, c.o3);
  if (rows > 4) st(4, c.o4);
  if (rows > 5) st(5, c.o5);
  if (rows > 6) st(6, c.o6);
}

template <class Epi>
void finish_rows(float* out, size_t cstep, int rows, int n, const ActivationSpec& act) {
  if constexpr (Epi::kAfter) {
    for (int o = 0; o < rows; ++o) activate_inplace(out + o * cstep, n, act);
  }
}

template <int kVecs, class Epi>
void store_tile(const Acc<kVecs>& acc, float* out, size_t cstep, int rows, const Epi& epi) {
  for_rows(acc.c0, rows, [&](int o, float32x4_t v) { vst1q_f32(out + o * cstep, epi(v)); });
  if constexpr (kVecs == 2) {
    for_rows(acc.c1, rows, [&](int o, float32x4_t v) { vst1q_f32(out + o * cstep + 4, epi(v)); });
  }
}

template <class Epi>
void store_pixel(const Pix& p, float* out, size_t cstep, int rows, const Epi& epi) {
  // Lane stores, not a float[8] bounce buffer: GCC would keep that buffer in sync
  // with the accumulators on every iteration of the channel loop.
  const float32x4_t lo = epi(p.lo), hi = epi(p.hi);
  vst1q_lane_f32(out, lo, 0);
  if (rows > 1) vst1q_lane_f32(out + cstep, lo, 1);
  if (rows > 2) vst1q_lane_f32(out + 2 * cstep, lo, 2);
  if (rows > 3) vst1q_lane_f32(out + 3 * cstep, lo, 3);
  if (rows > 4) vst1q_lane_f32(out + 4 * cstep, hi, 0);
  if (rows > 5) vst1q_lane_f32(out + 5 * cstep, hi, 1);
  if (rows > 6) vst1q_lane_f32(out + 6 * cstep, hi, 2);
  if (rows > 7) vst1q_lane_f32(out + 7 * cstep, hi, 3);
}

// One tile, from accumulation to store. Not inlined into compute_tile, so that GCC
// allocates each tile shape's registers on its own (the 8 x 8 loop then has no
// register moves; the 8 x 4 one, used once per map and block at most, keeps 3 to 5).
template <int kVecs, class Epi>
__attribute__((noinline)) void wide_tile(const float* w, const float* x, int k, float* out, size_t cstep, int rows,
                                         const Epi& epi) {
  store_tile(conv1x1_tile<kVecs>(k, w, x), out, cstep, rows, epi);
}

template <int kPix, class Epi>
__attribute__((noinline)) void tail_tile(const float* w, const float* x, int k, float* out, size_t cstep, int rows,
                                         const Epi& epi) {
  const AccPix<kPix> acc = conv1x1_pixels<kPix>(k, w, x);
  store_pixel(acc.p0, out, cstep, rows, epi);
  if constexpr (kPix > 1) store_pixel(acc.p1, out + 1, cstep, rows, epi);
  if constexpr (kPix > 2) store_pixel(acc.p2, out + 2, cstep, rows, epi);
}

// --- compute -----------------------------------------------------------------------

template <class Epi>
void compute_tile(const Args& a, const Tiling& tiles, size_t block, size_t t, const Epi& epi) {
  const ConvGeometry& g = *a.g;
  const int k = g.in_c;
  const int rows = static_cast<int>(std::min<size_t>(kBlockOut, g.out_c - block * kBlockOut));
  const size_t p0 = tiles.first(t);
  const int n = tiles.width(t);
  const float* w = a.weights + block * kBlockOut * (static_cast<size_t>(k) + 1);
  const float* x = a.packed_in + static_cast<size_t>(k) * p0;
  float* out = a.out + block * kBlockOut * a.out_cstep + p0;
  switch (n) {
    case 8: wide_tile<2>(w, x, k, out, a.out_cstep, rows, epi); break;
    case 4: wide_tile<1>(w, x, k, out, a.out_cstep, rows, epi); break;
    case 3: tail_tile<3>(w, x, k, out, a.out_cstep, rows, epi); break;
    case 2: tail_tile<2>(w, x, k, out, a.out_cstep, rows, epi); break;
    default: tail_tile<1>(w, x, k, out, a.out_cstep, rows, epi); break;
  }
  finish_rows<Epi>(out, a.out_cstep, rows, n, g.act);
}

template <class Epi>
void run_with(const Args& a, int num_threads) {
  const ConvGeometry& g = *a.g;
  const Epi epi(g.act);
  const Tiling tiles(pixels(g));
  const size_t ntiles = tiles.count(), nblocks = out_blocks(g);
  const int64_t pairs = static_cast<int64_t>(ntiles * nblocks);
  // Order the pairs so that the larger operand is streamed once and the smaller one
  // is re-read from cache: weight-major when the weights outweigh the packed input
  // (deep layers with small maps), tile-major otherwise (large maps).
  const bool weight_major = nblocks * kBlockOut > tiles.npix;
#pragma omp parallel num_threads(num_threads)
  {
#pragma omp for schedule(static)
    for (int64_t t = 0; t < static_cast<int64_t>(ntiles); ++t) pack_tile(a, tiles, static_cast<size_t>(t));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < pairs; ++i) {
      const size_t u = static_cast<size_t>(i);
      const size_t block = weight_major ? u / ntiles : u % nblocks;
      const size_t t = weight_major ? u % ntiles : u / nblocks;
      compute_tile(a, tiles, block, t, epi);
    }
  }
}

void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const Args a{&g, in, in_cstep, out, out_cstep, static_cast<float*>(ctx.workspace), packed};
  switch (g.act.type) {
    case ActivationType::None: run_with<Epilogue<ActivationType::None>>(a, ctx.num_threads); break;
    case ActivationType::ReLU: run_with<Epilogue<ActivationType::ReLU>>(a, ctx.num_threads); break;
    case ActivationType::Clip: run_with<Epilogue<ActivationType::Clip>>(a, ctx.num_threads); break;
    case ActivationType::LeakyReLU: run_with<Epilogue<ActivationType::LeakyReLU>>(a, ctx.num_threads); break;
    default: run_with<ScalarEpilogue>(a, ctx.num_threads); break;
  }
}

}  // namespace

const ConvKernel kF32Conv1x1_8x8_Neon = {
    "f32_conv1x1_8x8_neon", Isa::kNeon, supports, packed_floats, pack, workspace_bytes, no_workspace, 1e-4, run,
};

}  // namespace kestrel::kernels::arm
