// The half-weight twins of the NEON block GEMMs (the pack4 8 x 8 driver's 1x1 and
// im2col kernels, the 12 x 7 1x1 kernel; ConvKernel::half_weights): their packed
// weight blocks keep the weights as IEEE halves, half the memory of an F16 model's
// (or any model's at fp16) weights, and a thread widens a run of blocks (FCVTL, exact)
// into its own scratch before the fp32 tiles read them there, so the results equal the
// fp32 twin's bit for bit.
//
// Why widen whole blocks ahead rather than in the tiles: the tiles are assembly that
// reads each weight vector once per pixel tile, and a widening there would cost a
// FCVTL per weight vector per tile. Widened once into scratch, a weight costs ~0.5
// instructions per thread and chunk (15 per 32: a 4-register load, 8 FCVTL/FCVTL2, two
// 4-register stores).
//
// Why runs of blocks (kRoomBytes) and not one block at a time: where the input
// outweighs the weights, the drivers' work items are (run of pixel tiles, block) with
// blocks inner, every block passing over an input run held in L1. Widening a block per
// item would cost as much as a few tiles (28x28x256, by count: 2 K halves, ~1 K
// instructions, widened per 16-pixel run of 2 K FMLAs); here a thread widens up to
// kRoomBytes of blocks once, then runs all its pixel runs over them, the input re-read
// from L2 once per room rather than once.
#pragma once
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/half.h"

namespace kestrel::kernels::arm::half_blocks {

// Per-thread scratch for widened blocks: at least one block.
constexpr size_t kRoomBytes = size_t(128) << 10;

// A packed fp32 block: its weights (a multiple of 8 floats) and its bias, before or
// after them, as `groups` vectors of 4 floats each repeated `reps` times (the tiles add
// a pixel's bias from its own copy). Stored for a half-weight twin as one copy of each
// bias vector, then the weights as halves: stored_floats() 4-byte units.
struct Layout {
  bool bias_first = false;
  size_t weights = 0, groups = 0, reps = 1;

  size_t bias_floats() const { return groups * reps * 4; }
  size_t floats() const { return weights + bias_floats(); }
  size_t stored_floats() const { return groups * 4 + weights / 2; }

  // The fp32 block into its stored form: exact, the weights being halves already.
  void narrow(const float* block, float* stored) const {
    const float* bias = bias_first ? block : block + weights;
    const float* w = bias_first ? block + bias_floats() : block;
    for (size_t g = 0; g < groups; ++g) std::copy(bias + g * reps * 4, bias + g * reps * 4 + 4, stored + g * 4);
    uint16_t* h = reinterpret_cast<uint16_t*>(stored + groups * 4);
    for (size_t i = 0; i < weights; ++i) h[i] = float_to_half(w[i]);
  }

  // The stored block back into its fp32 form at `block`.
  void widen(const float* stored, float* block) const {
    float* bias = bias_first ? block : block + weights;
    float* w = bias_first ? block + bias_floats() : block;
    for (size_t g = 0; g < groups; ++g) {
      const float32x4_t v = vld1q_f32(stored + g * 4);
      for (size_t r = 0; r < reps; ++r) vst1q_f32(bias + (g * reps + r) * 4, v);
    }
    const uint16_t* h = reinterpret_cast<const uint16_t*>(stored + groups * 4);
    size_t i = 0;
    // 32 a turn, 4-register loads and stores: 15 instructions where 8 at a time took 28.
    for (; i + 32 <= weights; i += 32) {
      const uint16x8x4_t v = vld1q_u16_x4(h + i);
      vst1q_f32_x4(w + i, float32x4x4_t{{lo(v.val[0]), hi(v.val[0]), lo(v.val[1]), hi(v.val[1])}});
      vst1q_f32_x4(w + i + 16, float32x4x4_t{{lo(v.val[2]), hi(v.val[2]), lo(v.val[3]), hi(v.val[3])}});
    }
    for (; i < weights; i += 8) {
      const uint16x8_t v = vld1q_u16(h + i);
      vst1q_f32(w + i, lo(v));
      vst1q_f32(w + i + 4, hi(v));
    }
  }

 private:
  static float32x4_t lo(uint16x8_t v) { return vcvt_f32_f16(vget_low_f16(vreinterpretq_f16_u16(v))); }
  static float32x4_t hi(uint16x8_t v) { return vcvt_high_f32_f16(vreinterpretq_f16_u16(v)); }
};

// Blocks that fit one thread's room (at least one), `stride` the fp32 blocks' floats.
inline size_t room_blocks(size_t stride) { return std::max<size_t>(1, kRoomBytes / (stride * sizeof(float))); }

// Per-thread scratch bytes of a twin with `nblocks` blocks of `stride` fp32 floats.
inline size_t room_bytes(size_t nblocks, size_t stride) {
  return std::min(nblocks, room_blocks(stride)) * stride * sizeof(float);
}

// A thread's work items [i0, i1) of a driver's plan (item i: block i % nblocks over
// the tiles of run i / nblocks) in rooms: for each run of up to room_blocks(stride)
// blocks that the items touch, widen(b, dst) for its blocks, dst being room + (b - B0)
// * stride, then span(B0, lo, hi, run) for each pixel run, lo..hi its blocks among
// the items, relative to B0. Every output is still one tile's, so the bits do not
// depend on this order.
template <class Widen, class Span>
void for_items(size_t nblocks, size_t i0, size_t i1, size_t stride, float* room, Widen&& widen, Span&& span) {
  if (i0 >= i1) return;
  const size_t r0 = i0 / nblocks, r1 = (i1 - 1) / nblocks;
  const size_t first = i0 % nblocks, last = (i1 - 1) % nblocks + 1;
  const size_t bmin = r0 == r1 ? first : 0, bmax = r0 == r1 ? last : nblocks;
  const size_t per_room = room_blocks(stride);
  for (size_t b0 = bmin; b0 < bmax; b0 += per_room) {
    const size_t b1 = std::min(bmax, b0 + per_room);
    for (size_t b = b0; b < b1; ++b) widen(b, room + (b - b0) * stride);
    for (size_t r = r0; r <= r1; ++r) {
      const size_t lo = std::max(b0, r == r0 ? first : 0), hi = std::min(b1, r == r1 ? last : nblocks);
      if (lo < hi) span(b0, lo - b0, hi - b0, r);
    }
  }
}

}  // namespace kestrel::kernels::arm::half_blocks
