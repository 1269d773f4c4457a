// int8 depthwise 3x3 (stride 1 and 2) on NEON without dotprod (A53, A72; an A76 with
// dot8 disabled), through the fp32 pack4 walk (f32_dwconv3x3_pack4_neon.h).
//
// Why not planar (i8_dwconv_8x2_neon, which this replaces for 3x3): planar, every tap
// of 8 pixels is two shifted loads and every row is widened into a float plane per
// channel, ~11 instructions an output on MobileNet v1 (22.9 M) against the pack4
// kernel's ~2.8. With 4 channels along a vector, a pixel is one vector and its 9 taps
// 9 fmla on registers already loaded; the asm walk loads each input row once. So per
// block of 4 channels:
// 1. the 4 planar channels go into a pack4 float plane (int8 widened, fp32 quantized)
//    by ST4, 16 pixels a step over the whole map (rows are contiguous: no row loop);
// 2. kF32DwConv3x3Pack4_Neon's run() sums the taps: weights the int8 values as floats,
//    bias 0, no activation. An int8 product is exact in fp32 and so is any sum of up
//    to kExactFloatTaps of them in any order (i8_conv_kernels.h), so the sums are
//    conv_reference_i8's exactly;
// 3. LD4 takes each channel's 16 sums back out: requantized into the int8 map
//    (i8::requantize, the bounds), or float(sum) * dequant + bias and the activation.
// Each pass runs over all the blocks (threads split them; the fp32 kernel splits its
// own work), so one call of the fp32 kernel serves a whole layer: a 7x7 block is only
// 49 outputs. Channels past the last whole block repeat the last channel in the plane
// (their sums are dropped).
//
// Packed: the fp32 kernel's packed blocks (weights as floats, bias 0), then dequant and
// bias per channel (blocks * 4 each).
#include <arm_neon.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "arm/arm_kernels.h"
#include "arm/f32_gemm_epilogue_neon.h"
#include "arm/i8_epilogue_neon.h"
#include "arm/i8_neon.h"
#include "core/parallel.h"
#include "kernels/i8_conv_kernels.h"
#include "kernels/i8_reference.h"

namespace kestrel::kernels::arm {
namespace {

using i8::unroll;

constexpr int kLanes = 4;
constexpr int kStep = 16;  // pixels of a conversion step
constexpr size_t kAlign = 64;
// Past the planes: what the fp32 kernel may read past its last channel (a map's
// kOverreadBytes).
constexpr size_t kPlaneSlack = 64;

const ConvKernel& walk() { return kF32DwConv3x3Pack4_Neon; }

int blocks_of(const ConvGeometry& g) { return (g.out_c + kLanes - 1) / kLanes; }
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The fp32 kernel's geometry for `blocks` channel blocks: pack4 maps, sums only.
ConvGeometry walk_geometry(const ConvGeometry& g, int blocks) {
  ConvGeometry w = g;
  w.in_c = w.out_c = w.group = blocks * kLanes;
  w.in_pack = w.out_pack = kLanes;
  w.act = ActivationSpec();
  w.bias = false;
  return w;
}

bool supports(const ConvGeometry& g) {
  return i8_dwconv_window(g, 3) && walk().supports(walk_geometry(g, blocks_of(g)));
}

size_t walk_floats(const ConvGeometry& g) { return round_up(walk().packed_floats(walk_geometry(g, blocks_of(g))) * 4) / 4; }

size_t packed_bytes(const ConvGeometry& g) {
  return (walk_floats(g) + 2 * static_cast<size_t>(blocks_of(g)) * kLanes) * sizeof(float);
}

void pack(const ConvGeometry& g, const int8_t* weight, const float* dequant, const float* bias, void* packed) {
  const int blocks = blocks_of(g);
  std::vector<float> w(static_cast<size_t>(blocks) * kLanes * 9, 0.f);
  for (size_t i = 0; i < static_cast<size_t>(g.out_c) * 9; ++i) w[i] = weight[i];
  float* p = static_cast<float*>(packed);
  walk().pack(walk_geometry(g, blocks), w.data(), nullptr, p);
  float* dq = p + walk_floats(g);
  float* b = dq + static_cast<size_t>(blocks) * kLanes;
  for (int c = 0; c < blocks * kLanes; ++c) {
    dq[c] = c < g.out_c ? dequant[c] : 0.f;
    b[c] = c < g.out_c && bias ? bias[c] : 0.f;
  }
}

size_t whole_steps(size_t px) { return (px + kStep - 1) / kStep * kStep; }

// The shared workspace: every block's input and output planes, then the fp32 kernel's
// own workspace (its zero row); the per-thread scratch is the fp32 kernel's.
struct Layout {
  // A block's planes (its cstep), whole steps of pixels: a step's writes past a plane's
  // pixels stay in it, whichever thread writes the next.
  size_t in_floats, out_floats;
  size_t out_at, walk_at, total;
};
Layout layout_of(const ConvGeometry& g) {
  Layout s{};
  const size_t blocks = static_cast<size_t>(blocks_of(g));
  s.in_floats = whole_steps(static_cast<size_t>(g.in_h) * g.in_w) * kLanes;
  s.out_floats = whole_steps(static_cast<size_t>(g.out_h) * g.out_w) * kLanes;
  s.out_at = round_up(blocks * s.in_floats * sizeof(float) + kPlaneSlack);
  s.walk_at = round_up(s.out_at + blocks * s.out_floats * sizeof(float) + kPlaneSlack);
  s.total = round_up(s.walk_at + walk().workspace_bytes(walk_geometry(g, blocks_of(g))));
  return s;
}

size_t workspace_bytes(const ConvGeometry& g) { return layout_of(g).total; }
size_t workspace_per_thread_bytes(const ConvGeometry& g) {
  return walk().workspace_per_thread_bytes(walk_geometry(g, blocks_of(g)));
}

// Sixteen values of a channel as integer-valued floats: an int8 map's widened, an fp32
// map's quantized (reading up to 15 past the channel: within kOverreadBytes).
KESTREL_I8_NEON_INLINE void load16(const int8_t* p, float32x4_t, float32x4_t (&v)[4]) {
  const int8x16_t b = vld1q_s8(p);
  const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_high_s8(b);
  v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  v[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
  v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  v[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}
KESTREL_I8_NEON_INLINE void load16(const float* p, float32x4_t s, float32x4_t (&v)[4]) {
  unroll<4>([&](auto i) KESTREL_I8_LAMBDA { v[i] = i8::quantize4(vld1q_f32(p + i * kLanes), s); });
}

// Block channels c[0..3] (n pixels each) into the pack4 plane dst, in steps of 16
// pixels (the last one's extra pixels within the plane's whole steps).
template <class In>
void fill(const In* const (&c)[kLanes], size_t n, float scale, float* dst) {
  const float32x4_t s = vdupq_n_f32(scale);
  for (size_t x = 0; x < n; x += kStep, dst += kStep * kLanes) {
    float32x4_t v[kLanes][4];
    unroll<kLanes>([&](auto l) KESTREL_I8_LAMBDA { load16(c[l] + x, s, v[l]); });
    unroll<4>([&](auto q) KESTREL_I8_LAMBDA {
      vst4q_f32(dst + q * kLanes * kLanes, (float32x4x4_t{{v[0][q], v[1][q], v[2][q], v[3][q]}}));
    });
  }
}

// The first n (< 16) floats of y at d.
inline __attribute__((noinline)) void store_short(float* d, const float32x4_t (&y)[4], int n) {
  float f[kStep];
  unroll<4>([&](auto q) KESTREL_I8_LAMBDA { vst1q_f32(f + q * kLanes, y[q]); });
  std::copy(f, f + n, d);
}

// A block's sums (pack4 plane src, n pixels) out into its nl (<= 4) channels d[l]:
// requantized bytes, or floats with the activation.
template <class Out, class Epi>
void drain(const float* src, size_t n, Out* const (&d)[kLanes], int nl, const float* dq, const float* bias,
           float out_scale, const i8::Requant& rq, const Epi& epi) {
  float32x4_t f0[kLanes], f1[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    f0[l] = vdupq_n_f32(std::is_same_v<Out, int8_t> ? dq[l] * out_scale : dq[l]);
    f1[l] = vdupq_n_f32(std::is_same_v<Out, int8_t> ? bias[l] * out_scale : bias[l]);
  }
  for (size_t x = 0; x < n; x += kStep, src += kStep * kLanes) {
    float32x4x4_t v[4];
    unroll<4>([&](auto q) KESTREL_I8_LAMBDA { v[q] = vld4q_f32(src + q * kLanes * kLanes); });
    const int m = static_cast<int>(std::min<size_t>(kStep, n - x));
    unroll<kLanes>([&](auto l) KESTREL_I8_LAMBDA {
      if (l >= nl) return;
      if constexpr (std::is_same_v<Out, int8_t>) {
        int32x4_t q[4];
        unroll<4>([&](auto i) KESTREL_I8_LAMBDA {
          q[i] = i8::requantize<i8::kScaledAct<Epi>>(v[i].val[l], f0[l], f1[l], epi);
        });
        i8::store_bytes(d[l] + x, i8::clamp(i8::narrow<4>(q), rq), m);
      } else {
        float32x4_t y[4];
        unroll<4>([&](auto i) KESTREL_I8_LAMBDA { y[i] = epi(vaddq_f32(vmulq_f32(v[i].val[l], f0[l]), f1[l])); });
        if (m == kStep) {
          unroll<4>([&](auto i) KESTREL_I8_LAMBDA { vst1q_f32(d[l] + x + i * kLanes, y[i]); });
        } else {
          store_short(d[l] + x, y, m);
        }
      }
    });
  }
}

template <class In, class Out>
void run_typed(const ConvGeometry& g, const void* packed, const In* in, size_t in_cstep, float in_scale, Out* out,
               size_t out_cstep, float out_scale, const KernelContext& ctx) {
  const Layout lay = layout_of(g);
  const int blocks = blocks_of(g), threads = std::max(1, ctx.num_threads);
  const float* wp = static_cast<const float*>(packed);
  const float* dq = wp + walk_floats(g);
  const float* bias = dq + static_cast<size_t>(blocks) * kLanes;
  const size_t in_px = static_cast<size_t>(g.in_h) * g.in_w, out_px = static_cast<size_t>(g.out_h) * g.out_w;
  char* base = static_cast<char*>(ctx.workspace);
  float* pin = reinterpret_cast<float*>(base);
  float* pout = reinterpret_cast<float*>(base + lay.out_at);
  parallel_region(threads, [&] {
#pragma omp for schedule(static)
    for (int j = 0; j < blocks; ++j) {
      const In* c[kLanes];
      for (int l = 0; l < kLanes; ++l) c[l] = in + std::min(j * kLanes + l, g.out_c - 1) * in_cstep;
      fill(c, in_px, in_scale, pin + j * lay.in_floats);
    }
  });
  KernelContext inner = ctx;
  inner.workspace = base + lay.walk_at;
  walk().run(walk_geometry(g, blocks), wp, pin, lay.in_floats, pout, lay.out_floats, inner);
  const i8::Requant rq = i8::requant_of(g.act, out_scale);
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    parallel_for(threads, blocks, [&](int j) {
      const int c0 = j * kLanes, nl = std::min(kLanes, g.out_c - c0);
      Out* d[kLanes];
      for (int l = 0; l < kLanes; ++l) d[l] = out + std::min(c0 + l, g.out_c - 1) * out_cstep;
      drain(pout + j * lay.out_floats, out_px, d, nl, dq + c0, bias + c0, out_scale, rq, epi);
      if constexpr (std::is_same_v<Out, float>) {
        for (int l = 0; l < nl; ++l) i8::finish(epi, d[l], out_px);
      }
    });
  });
}

void run_maps(const ConvGeometry& g, const void* packed, const I8Operands& io, const KernelContext& ctx) {
  with_i8_operands(io, [&](const auto* in, auto* out) {
    run_typed(g, packed, in, io.in_cstep, io.in_scale, out, io.out_cstep, io.out_scale, ctx);
  });
}

}  // namespace

const I8ConvKernel kI8DwConv3x3_Pack4_Neon = {
    "i8_dwconv3x3_pack4_neon", Isa::kNeon, kI8NeedsNothing, supports, packed_bytes, pack, workspace_bytes,
    workspace_per_thread_bytes, run_on_floats<run_maps>, run_maps,
};

}  // namespace kestrel::kernels::arm
