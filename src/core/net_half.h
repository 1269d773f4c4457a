// fp16 maps at Net load (Option::precision kFp16 where the CPU has fp16 arithmetic).
#pragma once

#include "core/net_impl.h"

namespace kestrel {

// Re-targets every fp16 layer that has fp16 kernels for its operands (Layer::set_half)
// to read and write halves, blocked by 8 channels where the channels allow, and adds a
// HalfConvert layer wherever such a map meets a layer that reads or writes fp32. A no-op
// where the CPU has no fp16 arithmetic or no layer computes in fp16. May throw
// std::bad_alloc.
Status choose_half_maps(NetImpl& net);

}  // namespace kestrel
