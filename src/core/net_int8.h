// int8 maps between int8 layers (Option::int8_maps): see net_int8.cpp.
#pragma once
#include "core/net_impl.h"
#include "kestrel/status.h"

namespace kestrel {

// Stores as int8 maps (Shape::i8) the blobs an int8 layer writes and only int8 layers
// read, where all of them take such maps (Layer::set_int8_maps), and re-targets those
// layers (maps: Option::int8_maps; without, no blob is). Then a layer that computes in
// int8 only on maps (Layer::int8_needs_maps) and has none gets Precision::kFp32. Call
// after prepare, before the layout passes.
Status choose_int8_maps(NetImpl& net, bool maps);

}  // namespace kestrel
