// Gives back the memory of model weights that no layer reads in place once their
// layers hold packed copies, so that a loaded Net holds its weights about once
// (issue 26: MobileNet v1 held the mapped file's 16 MiB beside 16 MiB of packed copies).
#pragma once
#include <cstddef>

namespace kestrel {

struct NetImpl;

// After layer `li` was prepared or re-targeted (Layer::set_packs): a mapped model's
// pages that hold only weights which every layer using them has packed away are given
// back to the kernel (MADV_DONTNEED). They are the file's pages: a later read (a layout
// pass packing a layer again) faults them back in from the page cache, so this is
// safe at any point of the load.
void release_packed_weights(NetImpl& net, int li);

// At the end of the load, with every layer final: gives back every page of a mapped
// model that holds no weight a layer reads in place, the pages of a private copy that
// lie wholly inside such weights, and the fp32 copies of F16 weights no layer reads;
// sets NetImpl::resident_weight_bytes.
void finish_weight_release(NetImpl& net);

}  // namespace kestrel
