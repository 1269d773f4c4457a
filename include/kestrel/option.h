// Kestrel: run-time choices for a Net and its Extractors.
#pragma once
#include <map>
#include <string>

#include "kestrel/mat.h"

namespace kestrel {

// How an Extractor obtains memory for feature maps.
enum class MemoryStrategy {
  kNone,  // each feature map from the system allocator, returned when freed
  kPool,  // freed maps go to the Extractor's pool; a request takes the smallest free
          // block that fits, else allocates (Bi et al. 2019)
  kPlan,  // one arena laid out at Net load from blob lifetimes (greedy by size)
};

// Which kernels a Net prepares at load: the fastest for this CPU, or the portable
// reference code (the oracle, always built).
enum class KernelSet { kFast, kReference };

// The arithmetic precision of the layers (Option::precision).
enum class Precision {
  kFp32,  // the default and the oracle
  // Weights and feature maps as IEEE halves. Each such layer's weights are rounded to
  // halves at load (a weight that is NaN, infinite or beyond +-65504 fails the load,
  // naming the layer) and its outputs to halves. On the reference kernel set,
  // Convolution and InnerProduct compute in fp16 arithmetic (the fp16 oracle,
  // kernels/f16_reference.h); elsewhere layers compute in fp32 on halves (fp16
  // storage). Layers without an fp16 path (Softmax, DetectionOutput, PriorBox,
  // Normalize, ...) run in fp32 on the halves they read and write fp32.
  kFp16,
  // bf16 arithmetic where the CPU has it (x86 AVX512-BF16), on the 1x1 convolutions of
  // at least 128 input channels (the bulk of MobileNets' work): inputs and weights are
  // rounded to bfloat16 (8 significant bits) and their products summed in fp32; maps
  // and every other layer stay fp32. On the reference kernel set those layers compute
  // the same way (the bf16 oracle, kernels::conv_reference_bf16) on any CPU; on a CPU
  // without bf16 the fast kernels compute them in fp32. Like OpenVINO's bf16 inference
  // precision; accuracy cost in bench/precision/RESULTS.md.
  kBf16,
  // int8 on a model calibrated by kestrel-quantize (its blobs carry activation scales):
  // a Convolution whose input has a scale computes with int8 inputs (that scale) and
  // int8 weights (one scale per output channel, quantized at load), sums in int32, and
  // writes fp32 (kernels/i8_reference.h). A consumer that is int8 quantizes it again
  // with its own input's scale, which is what an int8 map between them would hold.
  // Layers without a scale, those the model's calibration kept in fp32, and every
  // other layer type run in fp32. Today this is the exact integer oracle on every
  // kernel set (issue 27 adds the SDOT/VNNI kernels); a model without calibration
  // runs all fp32.
  kInt8,
};

// "fp32", "fp16", "bf16", "int8".
const char* precision_name(Precision p);

struct Option {
  // Worker threads per Extractor; 0 means all CPUs OpenMP sees.
  int num_threads = 0;
  // Free a feature map as soon as its last consumer has run (kNone and kPool; kPlan
  // always reuses by lifetime). The layers on the way to declared outputs not yet
  // extracted count as consumers: extracting a multi-output net's outputs one after
  // the other computes its trunk once.
  bool light_mode = true;
  MemoryStrategy memory = MemoryStrategy::kPool;
  KernelSet kernels = KernelSet::kFast;
  // Fuse layer pairs at load where a fast kernel pair computes them together: a 1x1
  // convolution into the 3x3 depthwise convolution that alone reads its output
  // (MobileNet's pointwise -> depthwise), the map between them kept a band of rows at a
  // time in cache. Results are bit-identical; the intermediate blob is then never
  // stored, and extract() of it fails with kInvalidArgument naming this option. Set to
  // false before load() to keep every blob extractable.
  bool fuse_layers = true;
  // Keep feature maps between fast convolution kernels that take them in a channel-
  // blocked layout (ONNX Runtime's NCHWc, ncnn's packing layout; x86 AVX-512 and AVX2:
  // MobileNet v1 from the stem's output on, v2's residual blocks from 28x28; aarch64 NEON
  // in blocks of 4 channels, ncnn's pack4), so that depthwise and 1x1 kernels skip their
  // transposes and copies. Results are bit-identical;
  // extract() of such a blob returns a planar copy (an allocation). Read at load().
  bool blocked_layout = true;
  // At Precision::kInt8, keep the feature maps between int8 layers as int8 maps (a byte a
  // value) where both have kernels for them, as ncnn does: the writer requantizes its
  // sums for the reader's input scale in one step (an fma), where with fp32 maps it
  // dequantizes them and the reader quantizes them again. The two roundings differ, so
  // results differ by rounding (within a quantization step per map). extract() of such a
  // blob returns its dequantized values (q / scale) in a planar fp32 copy (an
  // allocation). Read at load().
  bool int8_maps = true;
  // Read at load(): the precision of every layer, and overrides by layer name (the
  // model's names, as kestrel-bench --profile prints them; a fused pair is named by its
  // first layer). load() fails with InvalidArgument naming an override's layer if the
  // model has none of that name.
  Precision precision = Precision::kFp32;
  std::map<std::string, Precision> layer_precision;
  // Where feature-map memory comes from (the "system" allocator under the strategy).
  // Not owned; must outlive every Extractor using it; nullptr: default_allocator().
  Allocator* allocator = nullptr;
};

}  // namespace kestrel
