// How layers hand their ForwardContext and packed weights to the fast kernels.
#pragma once
#include "core/layer.h"
#include "kernels/kernel_context.h"

namespace kestrel {

inline kernels::KernelContext kernel_context(const ForwardContext& ctx) {
  kernels::KernelContext k;
  k.num_threads = ctx.num_threads;
  k.workspace = ctx.workspace;
  k.thread_scratch = ctx.thread_scratch;
  k.thread_scratch_stride = ctx.thread_scratch_stride;
  return k;
}

// A 64-byte-aligned float buffer for packed weights, or an out-of-memory Status naming
// `what`. Packed weights are made once at Net load and then only read.
inline Status allocate_packed(size_t floats, const char* what, Mat* m) {
  if (floats + 1 > static_cast<size_t>(INT32_MAX) || !m->create(Shape::make1(static_cast<int>(floats)))) {
    return Status(ErrorCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(floats * sizeof(float)) + " bytes of packed " + what);
  }
  return Status::Ok();
}

// Binds a layer to `k` (nullptr: reference code) at Net load: packs the weights into
// `packed` and sets the layer's scratch sizes. The one place packing happens, for every
// kernel family with packed weights.
template <class Kernel, class Geometry>
Status bind_packed_kernel(const Kernel* k, const Geometry& g, const float* weight, const float* bias,
                          const char* what, Layer* layer, Mat* packed, const Kernel** chosen) {
  *chosen = nullptr;
  packed->release();
  layer->workspace_bytes = 0;
  layer->workspace_per_thread_bytes = 0;
  layer->kernel_name = nullptr;
  if (!k) return Status::Ok();
  Status s = allocate_packed(k->packed_floats(g), what, packed);
  if (!s.ok()) return s;
  k->pack(g, weight, bias, packed->data);
  layer->workspace_bytes = k->workspace_bytes(g);
  layer->workspace_per_thread_bytes = k->workspace_per_thread_bytes(g);
  layer->kernel_name = k->name;
  *chosen = k;
  return Status::Ok();
}

}  // namespace kestrel
