// 1x1 convolution, no padding, one group, on 4-channel blocked (pack4) maps: the
// input's pixel vectors are read in place (stride 1, blocked input) and the 8 x 8
// tile's accumulators are stored as they are (src/arm/f32_conv1x1_pack4_8x8_neon.h,
// driven by src/arm/f32_conv_pack4_8x8_tiles_neon.h: X is the input, K its channels).
// A stride-2 or planar input is first copied into the same pack4 layout in the
// shared workspace, a planar input's missing channels (past in_c, up to a whole
// block) as -0.f: times their zero weights that adds -0, which leaves every sum as it
// is (+0 would turn a -0 sum into +0), so the extra FMAs keep the planar kernel's
// bits. A planar output (the last layer before a planar reader) is transposed 4 x 4
// on the way out. Its half-weight twin (A = uint16_t) keeps the weights as halves
// (f32_half_blocks_neon.h).
#include <cstdint>
#include <type_traits>

#include "arm/arm_kernels.h"
#include "core/parallel.h"
#include "arm/f32_conv_pack4_8x8_tiles_neon.h"
#include "arm/f32_gemm_epilogue_neon.h"

namespace kestrel::kernels::arm {
namespace {

using namespace conv_pack4;

size_t in_blocks(const ConvGeometry& g) { return (static_cast<size_t>(g.in_c) + kLanes - 1) / kLanes; }

bool copies_input(const ConvGeometry& g) { return g.in_pack == 1 || g.sh != 1 || g.sw != 1; }

template <class A>
bool supports(const ConvGeometry& g) {
  if (std::is_same_v<A, uint16_t> && !g.half_weights) return false;
  const bool one_by_one = g.kh == 1 && g.kw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
  const bool strides = (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2);
  if (!one_by_one || !strides || g.in_c < 1 || g.out_c < 1 || g.in_h < 1 || g.in_w < 1) return false;
  const bool unpadded = g.pad_top == 0 && g.pad_left == 0 && g.out_h == (g.in_h - 1) / g.sh + 1 &&
                        g.out_w == (g.in_w - 1) / g.sw + 1;
  // Blocked operands only (whole blocks): a blocked input with either output, or a
  // planar input (copied into blocks) writing a blocked output.
  const bool in_ok = (g.in_pack == kLanes && g.in_c % kLanes == 0) || (g.in_pack == 1 && g.out_pack == kLanes);
  const bool out_ok = (g.out_pack == kLanes && g.out_c % kLanes == 0) || g.out_pack == 1;
  // Blocked in and out with a block of 12 output channels: the 12 x 7 tiles' (fewer
  // loads). Declined here, not only listed after them in the registry: a layer keeps
  // the kernel it has where that takes a new layout (Convolution::set_packs), and the
  // layout pass blocks a layer's output before its input.
  if (g.in_pack == kLanes && g.out_pack == kLanes && kF32Conv1x1Pack4_12x7_Neon.supports(g)) return false;
  return unpadded && in_ok && out_ok;
}

template <class A>
size_t packed_floats(const ConvGeometry& g) {
  if constexpr (std::is_same_v<A, uint16_t>) return half_packed_floats(in_blocks(g), g.out_c);
  return conv_pack4::packed_floats(in_blocks(g), g.out_c);
}

// Row c of block b: input channel c (zero past in_c, up to a whole block).
template <class A>
void pack(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const size_t k = static_cast<size_t>(g.in_c);
  auto weight_at = [&](size_t oc, size_t c) { return c < k ? weight[oc * k + c] : 0.f; };
  if constexpr (std::is_same_v<A, uint16_t>) {
    pack_half_blocks(g.out_c, in_blocks(g), weight_at, bias, packed);
  } else {
    pack_blocks(g.out_c, in_blocks(g), weight_at, bias, packed);
  }
}

size_t workspace_bytes(const ConvGeometry& g) {
  if (!copies_input(g)) return 0;
  return in_blocks(g) * kLanes * static_cast<size_t>(g.out_h) * g.out_w * sizeof(float);
}
size_t no_workspace(const ConvGeometry&) { return 0; }
size_t half_room(const ConvGeometry& g) { return half_room_bytes(in_blocks(g), g.out_c); }

// Row oy of channel block j of a stride-2 or planar input into dst, pixel-major.
void copy_row(const ConvGeometry& g, const float* in, size_t in_cstep, size_t j, int oy, float* dst) {
  gather_block_row(in, in_cstep, g.in_pack, g.in_c, j, static_cast<size_t>(oy) * g.sh * g.in_w, g.sw, g.out_w, dst);
}

template <int kOutPack, class A, class Epi>
void run_all(const ConvGeometry& g, const Args& a, const Plan& pl, int num_threads, const Epi& epi, float* copy) {
  const int64_t copy_rows = copy ? static_cast<int64_t>(pl.kb) * g.out_h : 0;
parallel_region(num_threads, [&] {
    // The copy's rows (channel block, output row), then the items.
#pragma omp for schedule(static)
    for (int64_t i = 0; i < copy_rows; ++i) {
      const size_t j = static_cast<size_t>(i) / g.out_h;
      const int oy = static_cast<int>(i % g.out_h);
      copy_row(g, a.x, a.xstep, j, oy, copy + j * pl.pixels * kLanes + static_cast<size_t>(oy) * g.out_w * kLanes);
    }
    Args c = a;
    if (copy) {
      c.x = copy;
      c.xstep = pl.pixels * kLanes;
    }
    run_items<kOutPack, A>(c, pl, epi);
  });
}

template <class A>
void run(const ConvGeometry& g, const float* packed, const float* in, size_t in_cstep, float* out, size_t out_cstep,
         const KernelContext& ctx) {
  const Plan pl(in_blocks(g), static_cast<size_t>(g.out_h) * g.out_w, g.out_c);
  const Args a{g.out_c, packed, in, in_cstep, out, out_cstep, &ctx};
  float* copy = copies_input(g) ? static_cast<float*>(ctx.workspace) : nullptr;
  gemm::with_epilogue(g.act, [&](const auto& epi) {
    if (g.out_pack == kLanes) {
      run_all<kLanes, A>(g, a, pl, ctx.num_threads, epi, copy);
    } else {
      run_all<1, A>(g, a, pl, ctx.num_threads, epi, copy);
    }
  });
}

}  // namespace

const ConvKernel kF32Conv1x1Pack4_Neon = {
    "f32_conv1x1_pack4_8x8_neon", Isa::kNeon, supports<float>, packed_floats<float>, pack<float>, workspace_bytes,
    no_workspace, 1e-4, run<float>, kLanes,
};
const ConvKernel kF32Conv1x1Pack4_F16w_Neon = {
    "f32_conv1x1_pack4_8x8_f16w_neon", Isa::kNeon, supports<uint16_t>, packed_floats<uint16_t>, pack<uint16_t>,
    workspace_bytes, half_room, 1e-4, run<uint16_t>, kLanes, false, true,
};

}  // namespace kestrel::kernels::arm
