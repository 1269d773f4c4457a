// Fusing a 1x1 convolution into the 3x3 depthwise convolution that alone reads its
// output (MobileNet's pointwise -> depthwise pairs), decided at Net load after every
// layer is prepared. The fused layer computes the pointwise output a band of rows at a
// time into the shared workspace and runs the depthwise kernel on the band while it is
// in cache: the intermediate map never reaches memory (MobileNet v1's largest, 112 x
// 112 x 64, ran its 1x1 at 73% of the FMA peak in the network against 93% in the
// microbenchmark, writing 3.2 MB that the next layer read back).
#pragma once
#include <memory>

#include "core/layer.h"
#include "kernels/conv_kernels.h"

namespace kestrel {

// A prepared Convolution's fast path: its resolved geometry, the kernel it chose and
// the weights packed for it. Pointers into the layer, valid while it lives.
struct ConvParts {
  const kernels::ConvGeometry* g = nullptr;
  const kernels::ConvKernel* kernel = nullptr;
  const float* packed = nullptr;
};

// True and `parts` set if `layer` is a Convolution prepared with a convolution kernel
// (not the reference loop, not the GEMV path).
bool convolution_parts(const Layer& layer, ConvParts* parts);

// The fused layer for `pw` (a 1x1, stride-1, unpadded, ungrouped Convolution) followed
// by `dw` (a 3x3 depthwise Convolution reading pw's output), taking ownership of both;
// nullptr, both left untouched, where the pair does not qualify (reference kernels,
// other shapes, a depthwise kernel that cannot run on row bands of a map too large
// for one band). The fused layer reads pw's input and writes dw's output, with results
// bit-identical to running the two layers (same kernels, same summation order).
std::unique_ptr<Layer> fuse_pointwise_depthwise(std::unique_ptr<Layer>& pw, std::unique_ptr<Layer>& dw);

}  // namespace kestrel
