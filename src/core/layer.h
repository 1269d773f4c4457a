// The seam every layer implementation plugs into: load / prepare / forward.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/mat.h"
#include "kestrel/option.h"
#include "kestrel/status.h"
#include "kestrel_generated.h"

namespace kestrel {

// A weight tensor as stored in the model: a view, never a copy.
struct WeightView {
  const float* data = nullptr;
  std::vector<int> shape;  // outermost first, as written by the converter
  size_t count = 0;        // number of floats
  // Every value is an IEEE half exactly (an F16 weight of the model, or one rounded for
  // an fp16 layer): a kernel may keep them as halves (ConvGeometry::half_weights).
  bool halves = false;
  // An F16 weight of the model handed to a layer that widens it itself
  // (Layer::widens_weight): data is nullptr and these are its `count` halves, in the
  // model's buffer for the Net's lifetime.
  const uint16_t* half_data = nullptr;
  // An I8 weight of the model (kestrel-quantize): data is nullptr and these are its
  // `count` int8 values, rows = shape[0] of count / rows with one scale each, in the
  // model's buffer for the Net's lifetime. A layer that widens it itself takes them as
  // they are where it computes in int8; every other reader gets q / scale as floats.
  const int8_t* i8_data = nullptr;
  const float* i8_scales = nullptr;
  size_t rows() const { return shape.empty() ? 1 : static_cast<size_t>(shape[0]); }
};

// A view's `count` values as floats into out: its F16 halves widened, or its I8 values
// dequantized (q / scale), or its floats copied.
void widen_weight(const WeightView& v, float* out);

struct LoadContext {
  const fb::Layer* layer = nullptr;  // typed parameters: layer->params_as_XxxParam()
  std::vector<WeightView> weights;   // in the order the layer type documents
  KernelSet kernels = KernelSet::kFast;
};

struct PrepareContext {
  KernelSet kernels = KernelSet::kFast;
  // kFp16: the Net rounds this layer's weights (before load) and outputs (after each
  // forward) to halves; a layer with fp16 arithmetic kernels computes with them.
  // kBf16: a Convolution computes its bf16_pointwise geometries in bf16.
  // kInt8: a Convolution computes in int8 where its input has a scale (int8_in_scale); a
  // BinaryOp Add reads and writes int8 maps where the Net chooses them (set_int8_maps).
  Precision precision = Precision::kFp32;
  float int8_in_scale = 0.f;  // kestrel-quantize's scale of inputs[0] (0: none)
};

struct ForwardContext {
  int num_threads = 1;
  // Scratch of at least Layer::workspace_bytes, kAlignment-aligned; shared by all
  // layers of an Extractor, so contents do not survive between layers.
  void* workspace = nullptr;
  // Per-thread scratch: num_threads regions of at least Layer::workspace_per_thread_bytes,
  // thread t's at thread_scratch + t * thread_scratch_stride, kAlignment-aligned.
  char* thread_scratch = nullptr;
  size_t thread_scratch_stride = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;

  // Reads typed parameters and weight views; checks parameter values (positive
  // divisors, weight counts against parameters, overflow). Errors say what is wrong;
  // the caller adds the layer's name.
  virtual Status load(const LoadContext& ctx) = 0;

  // Given the input shapes, sets the output shapes (outputs has one entry per top),
  // chooses the algorithm, packs weights and sets workspace_bytes. Called once at Net
  // load; the layer is read-only afterwards.
  virtual Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs,
                         const PrepareContext& ctx) = 0;

  // Computes outputs from inputs. Outputs arrive allocated with the prepared shapes
  // (a layer with a data-dependent size, like DetectionOutput, may lower h/w to what it
  // produced). Must not allocate, must not depend on the thread count for its result,
  // and must work when outputs[0] shares memory with inputs[0] if supports_inplace().
  virtual Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                         const ForwardContext& ctx) const = 0;

  // True if forward() may write outputs[0] over inputs[0] (same shape, elementwise).
  virtual bool supports_inplace() const { return false; }

  // True if outputs[0] holds inputs[0]'s values in the same order under another shape
  // (Flatten, Reshape): where both are dense (no channel padding) the Net gives the
  // output the input's memory and forward() finds nothing to move.
  virtual bool reshapes_only() const { return false; }

  // True if forward() concatenates 3-D inputs along channels and leaves alone an input
  // already in its place in the output: then the Net lets producers write straight
  // into the output's channel ranges (zero-copy concat).
  virtual bool concatenates_channels() const { return false; }

  // True if forward() computes each output value from the values at the same position
  // of inputs of one shape, the output's, whatever the layout of the three (a residual
  // Add of two maps): then the Net may give them channel-blocked layouts together.
  virtual bool elementwise_any_layout() const { return false; }

  // Blocked layouts (Option::blocked_layout), chosen at Net load after prepare() by
  // core/net_layout.cpp: re-targets a layer of one input and one output to read inputs[0]
  // and write outputs[0] in these layouts (1 = planar; W = blocked by W channels, a Mat
  // of elempack W whose c counts blocks) with the planar results bit for bit: its kernel
  // where that takes them, else the kernel its registry picks for them (a Convolution
  // only with rechoose, as its planar kernels may take blocks too). False, nothing
  // changed, where no fast kernel takes them, and always for a layer on its reference
  // code (so that asking for the layouts it has tells whether it can be re-targeted at
  // all). dry_run: only asks. May throw std::bad_alloc (weights packed again). The
  // default: planar only, never re-targeted.
  virtual bool set_packs(int /*in_pack*/, int /*out_pack*/, bool /*rechoose*/, bool /*dry_run*/) { return false; }

  // fp16 maps (core/net_half.cpp, where the CPU has fp16 arithmetic): re-targets a layer
  // prepared at Precision::kFp16 to compute in fp16 on IEEE-half operands, every input
  // in layout in_pack and outputs[0] in out_pack (1 = planar halves; 8 = blocks of 8
  // channels, each pixel's 8 halves together), through a kernel whose results equal the
  // fp16 reference's bit for bit. False, nothing changed, where it has no such kernel.
  // dry_run: only asks. May throw std::bad_alloc (weights packed again).
  virtual bool set_half(int /*in_pack*/, int /*out_pack*/, bool /*dry_run*/) { return false; }

  // int8 maps (core/net_int8.cpp): re-targets a layer that computes in int8
  // (computes_int8) to read input i as an int8 map where in_scales[i] > 0 (its values
  // quantize_i8's at that scale, the blob's; 0: fp32; one entry per input) and to write
  // outputs[0] as one requantized for out_scale (> 0; 0: fp32; kernels/i8_reference.h).
  // False, nothing changed, where it has no such path. dry_run: only asks.
  virtual bool set_int8_maps(const std::vector<float>& /*in_scales*/, float /*out_scale*/, bool /*dry_run*/) {
    return false;
  }

  // True if forward() never reads inputs[i]'s values and prepare() took only its height
  // and width from it, which a blocked layout leaves as they are (PriorBox and its
  // feature map): such a reader lets the Net block that input.
  virtual bool reads_shape_only(size_t /*i*/) const { return false; }

  // True if forward() may lower its 2-D output's row count (h) below the prepared one,
  // as DetectionOutput does with the detections it found.
  virtual bool data_dependent_rows() const { return false; }

  // Bytes of weights this layer keeps beyond the model's own (packed copies).
  virtual size_t packed_weight_bytes() const { return 0; }

  // False if forward() never reads weight i of LoadContext::weights, having copied what
  // it needs into packed weights: the Net then gives back that weight's memory (a
  // mapped model's pages; core/weight_release.h). A layer may still read it again in
  // set_packs() (it faults back in). The default: read in place.
  virtual bool reads_weight_in_place(size_t /*i*/) const { return true; }

  // True if the layer takes weight i, where the model stores it as F16, as halves
  // (WeightView::half_data) and widens it only while it needs the floats (to pack them,
  // or for good where it runs the reference loop): the Net then makes no fp32 copy of
  // it, which for an F16 model would have doubled the memory during the load.
  virtual bool widens_weight(size_t /*i*/) const { return false; }

  // After prepare() at Precision::kBf16: true if the layer computes in bf16 (a
  // Convolution of a kernels::bf16_pointwise geometry). The others are fp32 layers.
  virtual bool computes_bf16() const { return false; }
  // After prepare() at Precision::kInt8: true if the layer computes in int8.
  virtual bool computes_int8() const { return false; }
  // True if it computes in int8 only on int8 maps (set_int8_maps), and otherwise the
  // fp32 layer's values: the Net then labels it fp32 where it chose no maps for it.
  virtual bool int8_needs_maps() const { return false; }

  size_t workspace_bytes = 0;
  size_t workspace_per_thread_bytes = 0;
  // Multiply-adds of one forward() at the prepared shapes, set by prepare() of the
  // layers whose cost is dominated by them (convolutions, InnerProduct, Gemm); profilers
  // turn it into GFLOP/s. 0 for the others.
  double multiply_adds = 0;
  // The fast kernel prepare() chose (its registry name), or nullptr for the layer's
  // own code; profilers print it.
  const char* kernel_name = nullptr;
};

using LayerCreator = std::unique_ptr<Layer> (*)();

// Looks up a layer type by its registry name; nullptr if unknown.
LayerCreator find_layer_creator(const std::string& type);
// All registered type names (for error messages and tests).
std::vector<std::string> registered_layer_types();

}  // namespace kestrel
