// The conversion between fp32 maps and maps of halves that the Net inserts where a layer
// computing in fp16 (Layer::set_half) meets one that does not (core/net_half.cpp), in
// either direction and between layouts: planar, or blocked by 4 or 8 channels. Values
// round to the nearest half (ties to even) and widen exactly, with the half kernels.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include <omp.h>

#include "kernels/half_kernels.h"
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

constexpr int kHalfBlock = 8;   // the widest layout of halves (core/net_half.cpp)
constexpr int kFloatBlock = 4;  // NEON's blocked fp32 layout (core/net_layout.cpp)

class HalfConvert final : public Layer {
 public:
  HalfConvert(bool to_half, int out_pack) : to_half_(to_half), out_pack_(out_pack) {}

  Status load(const LoadContext&) override { return Status::Ok(); }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    if (inputs.size() != 1 || outputs.size() != 1) return corrupt("HalfConvert takes 1 input and 1 output");
    const Shape& in = inputs[0];
    if (in.f16 == to_half_) return corrupt(std::string("input is already ") + (to_half_ ? "fp16" : "fp32"));
    const int channels = in.c * in.elempack;
    if (in.dims != 3 && out_pack_ != 1) return corrupt("only 3-D maps take a blocked layout");
    if (channels % out_pack_ != 0) {
      return corrupt(std::to_string(channels) + " channels do not fill blocks of " + std::to_string(out_pack_));
    }
    in_ = in;
    Shape out = in;
    out.c = in.dims >= 3 ? channels / out_pack_ : in.c;
    out.elempack = out_pack_;
    out.f16 = to_half_;
    outputs[0] = out;
    plane_ = static_cast<size_t>(in.w) * in.h * in.d;
    // Per thread: a block of up to 8 channels as fp32 (the blocked path), or one
    // channel's values gathered (fp32) and converted (halves).
    workspace_per_thread_bytes = plane_ * kHalfBlock * sizeof(float) + 2 * kAlignment;
    kernel_name = kernels::active_half_kernel().name;
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    const Mat& in = inputs[0];
    Mat& out = outputs[0];
    const kernels::HalfKernel& k = kernels::active_half_kernel();
    const int in_pack = in.elempack, out_pack = out.elempack;
    if (in_pack == out_pack) {
      // Same layout: each block's values are one contiguous run.
      const size_t n = plane_ * in_pack;
      parallel_for(ctx.num_threads, in.dims >= 3 ? in.c : 1, [&](int q) {
        if (to_half_) {
          k.to_half(in.channel(q), reinterpret_cast<uint16_t*>(out.channel(q)), n);
        } else {
          k.to_float(reinterpret_cast<const uint16_t*>(in.channel(q)), out.channel(q), n);
        }
      });
      return Status::Ok();
    }
    const int half_pack = to_half_ ? out_pack : in_pack, float_pack = to_half_ ? in_pack : out_pack;
    constexpr int kGroups = kHalfBlock / kFloatBlock;
    if (half_pack == kHalfBlock && float_pack == kFloatBlock && k.to_half_pack8) {
      // Blocks of 8 halves and of 4 floats (NEON's fp32 layout), pixel by pixel.
      static_assert(kGroups == 2, "a block of halves is two blocks of floats");
      parallel_for(ctx.num_threads, to_half_ ? out.c : in.c, [&](int b) {
        if (to_half_) {
          k.to_half_pack8(in.channel(2 * b), in.channel(2 * b + 1), reinterpret_cast<uint16_t*>(out.channel(b)), plane_);
        } else {
          k.to_float_pack4(reinterpret_cast<const uint16_t*>(in.channel(b)), out.channel(2 * b), out.channel(2 * b + 1),
                           plane_);
        }
      });
      return Status::Ok();
    }
    if (half_pack == kHalfBlock && float_pack == kFloatBlock) {
      // The same through scratch: each block of halves is one contiguous run to convert,
      // its pixels' lane groups moved there.
      constexpr size_t kGroupBytes = sizeof(float) * kFloatBlock;
      parallel_for(ctx.num_threads, to_half_ ? out.c : in.c, [&](int b) {
        float* f = reinterpret_cast<float*>(ctx.thread_scratch +
                                            static_cast<size_t>(omp_get_thread_num()) * ctx.thread_scratch_stride);
        if (to_half_) {
          for (int g = 0; g < kGroups; ++g) {
            const float* src = in.channel(b * kGroups + g);
            for (size_t i = 0; i < plane_; ++i) {
              std::memcpy(f + i * kHalfBlock + g * kFloatBlock, src + i * kFloatBlock, kGroupBytes);
            }
          }
          k.to_half(f, reinterpret_cast<uint16_t*>(out.channel(b)), plane_ * kHalfBlock);
        } else {
          k.to_float(reinterpret_cast<const uint16_t*>(in.channel(b)), f, plane_ * kHalfBlock);
          for (int g = 0; g < kGroups; ++g) {
            float* dst = out.channel(b * kGroups + g);
            for (size_t i = 0; i < plane_; ++i) {
              std::memcpy(dst + i * kFloatBlock, f + i * kHalfBlock + g * kFloatBlock, kGroupBytes);
            }
          }
        }
      });
      return Status::Ok();
    }
    // Another layout: channel by channel, its values gathered into a run, converted, and
    // spread into the output's lanes.
    parallel_for(ctx.num_threads, in.c * in_pack, [&](int ch) {
      char* scratch = ctx.thread_scratch + static_cast<size_t>(omp_get_thread_num()) * ctx.thread_scratch_stride;
      float* f = reinterpret_cast<float*>(scratch);
      uint16_t* h = reinterpret_cast<uint16_t*>(scratch + (plane_ * sizeof(float) + kAlignment) / kAlignment * kAlignment);
      const int sb = ch / in_pack, sl = ch % in_pack, db = ch / out_pack, dl = ch % out_pack;
      if (to_half_) {
        const float* src = in.channel(sb) + sl;
        for (size_t i = 0; i < plane_; ++i) f[i] = src[i * in_pack];
        k.to_half(f, h, plane_);
        uint16_t* dst = reinterpret_cast<uint16_t*>(out.channel(db)) + dl;
        for (size_t i = 0; i < plane_; ++i) dst[i * out_pack] = h[i];
      } else {
        const uint16_t* src = reinterpret_cast<const uint16_t*>(in.channel(sb)) + sl;
        for (size_t i = 0; i < plane_; ++i) h[i] = src[i * in_pack];
        k.to_float(h, f, plane_);
        float* dst = out.channel(db) + dl;
        for (size_t i = 0; i < plane_; ++i) dst[i * out_pack] = f[i];
      }
    });
    return Status::Ok();
  }

  // The fp32 side may be re-targeted to a blocked layout (Layer::set_packs) where the
  // channels fill its blocks: the fp32 layout pass then keeps the maps it reads or writes
  // blocked.
  bool set_packs(int in_pack, int out_pack, bool /*rechoose*/, bool dry_run) override {
    const int fp32_pack = to_half_ ? in_pack : out_pack;
    const int half_pack = to_half_ ? out_pack : in_pack;
    const int channels = in_.c * in_.elempack;
    if (half_pack != (to_half_ ? out_pack_ : in_.elempack) || in_.dims != 3) return false;
    if (fp32_pack != 1 && fp32_pack != 4 && fp32_pack != 8 && fp32_pack != 16) return false;
    if (channels % fp32_pack != 0) return false;
    if (dry_run) return true;
    if (!to_half_) out_pack_ = out_pack;
    return true;
  }

 private:
  bool to_half_;
  int out_pack_;
  Shape in_;
  size_t plane_ = 0;
};

}  // namespace

std::unique_ptr<Layer> create_half_convert_layer(bool to_half, int out_pack) {
  return std::make_unique<HalfConvert>(to_half, out_pack);
}

}  // namespace kestrel
