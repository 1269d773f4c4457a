// Layer fusion at Net load: see net_fuse.cpp and Option::fuse_layers.
#pragma once
#include "core/net_impl.h"

namespace kestrel {

// Replaces every qualifying pair of prepared layers by one fused layer and rebuilds
// the graph facts (indices, producers, consumers, order); records absorbed blobs in
// net.fused_by (sized, all -1, by the caller). May throw
// std::bad_alloc (the caller names the step).
void fuse_layers(NetImpl& net);

}  // namespace kestrel
