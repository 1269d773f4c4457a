// A Convolution or InnerProduct (as a convolution, layers/innerproduct.cpp) at
// Precision::kInt8 (its input blob has a kestrel-quantize scale): the
// weights quantized per output channel at load, and one of three routes, all giving
// conv_reference_i8's results bit for bit (kernels/i8_reference.h):
// - an int8 kernel (kernels/i8_conv_kernels.h: VNNI 1x1), which quantizes the input as
//   it packs it;
// - an exact fp32 kernel (kernels::kExactFloatTaps: depthwise layers, stems): the input
//   quantized into scratch as integer-valued floats, the int32 sums by a direct fp32
//   kernel, then dequantization, bias and activation. A depthwise layer goes through
//   that a chunk of channels at a time per thread, so each chunk's quantized input and
//   output stay in L2 between the passes;
// - the oracle itself (the reference kernel set, and whatever no kernel takes).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "kernels/conv_kernels.h"
#include "kernels/i8_conv_kernels.h"
#include "kestrel/mat.h"
#include "kestrel/status.h"
#include "layers/widened_weight.h"

namespace kestrel {

class Int8Conv {
 public:
  // Quantizes `weight` ([out_c][in_c / group][kh][kw] floats) per output channel, or
  // takes them quantized (q, with q_scales: an I8 weight of the model, quantize_rows_i8's
  // values; weight may then be nullptr), and picks the route for `g` (planar operands) on
  // `set`. `bias` (out_c floats or nullptr) must outlive this object; q is copied.
  // Errors: out of memory for the packed weights.
  Status prepare(const kernels::ConvGeometry& g, const float* weight, const float* bias, float in_scale,
                 KernelSet set, const int8_t* q = nullptr, const float* q_scales = nullptr);

  // Int8 maps (Shape::i8, core/net_int8.cpp): re-targets the route to read an int8
  // input (in_i8) and to write an int8 output requantized for out_scale (> 0; 0: fp32;
  // kernels/i8_reference.h). False, nothing changed, where the route has no such path
  // (the exact fp32 routes, int8 kernels without run_maps, and an int8 output after an
  // activation not i8_output_activation's). dry_run: only asks.
  bool set_maps(bool in_i8, float out_scale, bool dry_run);

  // The fp32 input (g's shape, planar, channel c at in + c * in_cstep) to the fp32
  // output (channel o at out + o * out_cstep); no allocation. Not after set_maps.
  void forward(const float* in, size_t in_cstep, float* out, size_t out_cstep, const ForwardContext& ctx) const;
  // The maps as set_maps set them (fp32 where it was not called); no allocation.
  void forward(const Mat& in, Mat& out, const ForwardContext& ctx) const;

  const char* kernel_name() const { return name_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  size_t workspace_per_thread_bytes() const { return per_thread_bytes_; }
  size_t held_bytes() const;

 private:
  // A run of depthwise channels [first, first + g.in_c) with its kernel and packing.
  struct Chunk {
    int first = 0;
    kernels::ConvGeometry g;
    const kernels::ConvKernel* kernel = nullptr;
    size_t packed_offset = 0;  // floats into packed_
  };

  Status prepare_floats(const kernels::ConvGeometry& g);
  Status prepare_chunks(const kernels::ConvGeometry& g);
  void forward_floats(const float* in, size_t in_cstep, float* out, size_t out_cstep,
                      const ForwardContext& ctx) const;
  void forward_chunks(const float* in, size_t in_cstep, float* out, size_t out_cstep,
                      const ForwardContext& ctx) const;
  void dequantize(float* out, size_t out_cstep, int first, int count) const;

  kernels::ConvGeometry g_;
  const float* bias_ = nullptr;
  float in_scale_ = 0.f;
  bool maps_ = false;      // the route takes int8 maps (set_maps)
  bool in_i8_ = false;     // set_maps: the input is an int8 map
  float out_scale_ = 0.f;  // and the output one, at this scale
  std::vector<int8_t> w8_;      // the oracle's weights, [out][taps]
  std::vector<float> dequant_;  // 1 / (input scale * weight scale), per output channel
  const kernels::I8ConvKernel* i8_kernel_ = nullptr;
  const kernels::ConvKernel* float_kernel_ = nullptr;  // the whole map at once,
  kernels::ConvGeometry float_g_;                      // on g_ without bias and activation
  std::vector<Chunk> chunks_;                          // or depthwise chunks
  Mat packed_;
  size_t in_cstep_ = 0;         // the quantized input's channel stride, in floats
  size_t map_bytes_ = 0;        // its share of the (per-thread, for chunks) scratch
  size_t kernel_ws_bytes_ = 0;  // a chunk kernel's shared workspace, after the map
  size_t workspace_bytes_ = 0, per_thread_bytes_ = 0;
  char name_[64] = {};
};

// Prepares `int8` for `layer` (a Convolution or an InnerProduct) from its widened weights:
// the layer's workspace sizes and kernel name follow the route, and widened F16 weights
// are let go (the route holds its own).
Status prepare_int8_layer(const kernels::ConvGeometry& g, WidenedWeight* widened, const float* bias,
                          const PrepareContext& ctx, Int8Conv* int8, Layer* layer);

}  // namespace kestrel
