// The graph optimizer shared by the Caffe and ONNX converters. Every pass finds its
// pattern by graph structure (producers, consumers, types), never by layer names,
// leaves graph outputs readable under their names, and returns how often it applied.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kestrel::convert {

struct OptimizeReport {
  // Pass name -> number of rewrites, in the order the passes ran.
  std::vector<std::pair<std::string, int>> applied;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
};

// BatchNorm and Scale directly after a Convolution, Deconvolution or InnerProduct
// whose output nothing else reads, folded into its weights and bias.
int fold_batchnorm_scale(Graph& g);
// A standalone Activation folded into the store of its producer (Convolution,
// Deconvolution, InnerProduct, Eltwise, BinaryOp) when that has none yet.
int fuse_activation(Graph& g);
// Hard-swish written out, as TensorFlow graphs (MobileNetV3) have it:
// (x * k) * Clip(x + 3, 0, 6) from three BinaryOps -> one HardSwish Activation.
int fuse_hard_swish(Graph& g);
// Dropout (identity at inference) and Split (every reader can read the input itself).
int remove_identity(Graph& g);
// A 1x1 Convolution (no padding) on a [C,1,1] input, as after global pooling, becomes
// an InnerProduct (a GEMV) when every reader accepts the 1-D result.
int conv_after_global_pool_to_innerproduct(Graph& g);
// Flatten or Reshape that leave the shape unchanged.
int remove_noop_reshape(Graph& g);

// All passes to a fixed point. Fails only if shape inference fails (a graph Kestrel
// cannot load), naming the problem.
Status optimize(Graph& g, OptimizeReport* report);

}  // namespace kestrel::convert
