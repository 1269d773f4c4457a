// Option::precision at Net load: which layers run at fp16, and their weights rounded to
// halves before they load.
#pragma once
#include <vector>

#include "core/net_impl.h"

namespace kestrel {

// InvalidArgument naming the first override of Option::layer_precision whose layer the
// model does not have.
Status check_precision_overrides(const NetImpl& net, const Option& opt);

// The precision layer `li` runs at: its override, else Option::precision; kFp32 for a
// layer type without an fp16 path, and by default for a layer that weighs a network
// input's values (the stem: see net_precision.cpp).
Precision resolve_precision(const NetImpl& net, int li, const Option& opt);

// True for the stem of a network run at Option::precision fp16 (a layer that weighs a
// network input's values, not named in Option::layer_precision): it accumulates in fp32
// but reads its input and its weights as halves, like every other layer (fp16
// storage). Why: a product of two halves (11 significant bits each) is exact in fp32's
// 24, so an fma and a multiply-then-add give the same bits, and the stem's sums are one
// function on every CPU and compiler (NEON's fma chains, the reference's separate
// multiplies and adds, GCC's contraction of either). Its output, rounded to halves for
// the fp16 layers, is then the oracle's bit for bit.
bool fp32_stem(const NetImpl& net, int li, const Option& opt);

// Replaces the fp32 weights in `weights` (layer li's, in its order) by copies rounded
// to halves (F16 weights of the model already are). InvalidArgument naming the weight
// where a value is NaN, infinite or beyond +-65504.
Status round_weights_to_half(NetImpl& net, int li, std::vector<WeightView>* weights);

// Sets NetImpl::input_as_half: the inputs an fp16 layer reads, and NetLayer::round_outputs
// (after fusion and the layout passes).
void mark_half_inputs(NetImpl& net);

// Rounds every value of `m` to a half, in place (src == dst) or into dst (same shape), on
// up to num_threads threads.
void round_to_half(const Mat& src, Mat& dst, int num_threads);

}  // namespace kestrel
