// Blocked feature-map layouts at Net load: see net_layout.cpp and Option::blocked_layout.
#pragma once
#include "core/net_impl.h"

namespace kestrel {

// Gives every blob that a convolution can write blocked and only convolutions read, all
// taking blocked operands of the same lanes W, the shape of elempack W (net.blob_shapes),
// and re-targets those layers' kernels. After prepare, before fusion (a blocked pair is
// not fused) and the memory plan. May throw std::bad_alloc.
void choose_blocked_layouts(NetImpl& net);

}  // namespace kestrel
