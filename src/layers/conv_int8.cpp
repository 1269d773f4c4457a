#include "layers/conv_int8.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>

#include "kernels/i8_reference.h"
#include "layers/kernel_bridge.h"

namespace kestrel {
namespace {

// A depthwise chunk's quantized input is at most this many bytes (it stays in L2 until
// the kernel reads it), and a layer has at least kMinChunks chunks where it has the
// channels, so that 16 threads find work.
constexpr size_t kChunkBytes = size_t(128) << 10;
constexpr int kMinChunks = 16;

size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// The fp32 kernel for the sums of `g`: no bias, no activation, fp32 weights, and direct
// summation (ConvKernel::tolerance 1e-4; Winograd's transforms round), or nullptr.
const kernels::ConvKernel* exact_float_kernel(kernels::ConvGeometry* g) {
  g->bias = false;
  g->act = ActivationSpec();
  g->half_weights = false;
  const kernels::ConvKernel* k = kernels::select_conv_kernel(*g, kernels::active_isa());
  if (!k || k->tolerance > 1e-4 || k->f16 || k->bf16 || k->half_weights) return nullptr;
  return k;
}

}  // namespace

Status Int8Conv::prepare(const kernels::ConvGeometry& g, const float* weight, const float* bias, float in_scale,
                         KernelSet set, const int8_t* q, const float* q_scales) {
  g_ = g;
  bias_ = bias;
  in_scale_ = in_scale;
  in_i8_ = false;
  out_scale_ = 0.f;
  i8_kernel_ = nullptr;
  float_kernel_ = nullptr;
  maps_ = false;
  chunks_.clear();
  packed_.release();
  workspace_bytes_ = per_thread_bytes_ = 0;
  const size_t taps = static_cast<size_t>(g.in_c / g.group) * g.kh * g.kw;
  w8_.assign(static_cast<size_t>(g.out_c) * taps, 0);
  std::vector<float> w_scale(static_cast<size_t>(g.out_c));
  if (q) {
    std::copy(q, q + w8_.size(), w8_.begin());
    std::copy(q_scales, q_scales + w_scale.size(), w_scale.begin());
  } else {
    kernels::quantize_rows_i8(weight, static_cast<size_t>(g.out_c), taps, w8_.data(), w_scale.data());
  }
  dequant_.resize(w_scale.size());
  for (size_t o = 0; o < w_scale.size(); ++o) dequant_[o] = 1.f / (in_scale * w_scale[o]);
  if (set == KernelSet::kFast) {
    const kernels::I8ConvKernel* k = kernels::select_i8_conv_kernel(g, kernels::active_isa());
    if (k) {
      Status s = allocate_packed((k->packed_bytes(g) + sizeof(float) - 1) / sizeof(float), "int8 convolution weights",
                                 &packed_);
      if (!s.ok()) return s;
      k->pack(g, w8_.data(), dequant_.data(), bias, packed_.data);
      i8_kernel_ = k;
      maps_ = k->run_maps != nullptr;
      workspace_bytes_ = k->workspace_bytes(g);
      per_thread_bytes_ = k->workspace_per_thread_bytes(g);
      std::snprintf(name_, sizeof name_, "%s", k->name);
      std::vector<int8_t>().swap(w8_);
      std::vector<float>().swap(dequant_);
      return Status::Ok();
    }
    if (taps <= kernels::kExactFloatTaps) {
      Status s = g.is_depthwise() ? prepare_chunks(g) : prepare_floats(g);
      if (!s.ok() || float_kernel_ || !chunks_.empty()) return s;
    }
  }
  // The oracle takes int8 maps where the fast set's route for g does (a fast Int8Conv
  // prepared to ask), so that both sets keep the same maps and compute the same numbers.
  maps_ = true;
  if (set != KernelSet::kFast) {
    Int8Conv fast;
    Status s = fast.prepare(g, weight, bias, in_scale, KernelSet::kFast, q, q_scales);
    if (!s.ok()) return s;
    maps_ = fast.maps_;
  }
  workspace_bytes_ = static_cast<size_t>(g.in_c) * g.in_h * g.in_w;
  std::snprintf(name_, sizeof name_, "i8_conv_reference");
  return Status::Ok();
}

Status Int8Conv::prepare_floats(const kernels::ConvGeometry& g) {
  kernels::ConvGeometry gs = g;
  const kernels::ConvKernel* k = exact_float_kernel(&gs);
  if (!k) return Status::Ok();
  float_g_ = gs;
  const std::vector<float> wf(w8_.begin(), w8_.end());
  Status s = allocate_packed(k->packed_floats(gs), "int8 convolution weights", &packed_);
  if (!s.ok()) return s;
  k->pack(gs, wf.data(), nullptr, packed_.data);
  float_kernel_ = k;
  in_cstep_ = Shape::make3(g.in_w, g.in_h, g.in_c).cstep();
  map_bytes_ = round_up(in_cstep_ * g.in_c * sizeof(float) + kOverreadBytes);
  workspace_bytes_ = map_bytes_ + k->workspace_bytes(gs);
  per_thread_bytes_ = k->workspace_per_thread_bytes(gs);
  std::snprintf(name_, sizeof name_, "i8_%s", k->name);
  std::vector<int8_t>().swap(w8_);
  return Status::Ok();
}

Status Int8Conv::prepare_chunks(const kernels::ConvGeometry& g) {
  in_cstep_ = Shape::make3(g.in_w, g.in_h, 1).cstep();
  const int by_bytes = static_cast<int>(std::max<size_t>(1, kChunkBytes / (in_cstep_ * sizeof(float))));
  const int per = std::max(1, std::min(by_bytes, (g.in_c + kMinChunks - 1) / kMinChunks));
  const size_t taps = static_cast<size_t>(g.kh) * g.kw;
  std::vector<Chunk> chunks;
  size_t floats = 0, ws = 0, per_thread = 0;
  for (int first = 0; first < g.in_c; first += per) {
    Chunk c;
    c.first = first;
    c.g = g;
    c.g.in_c = c.g.out_c = c.g.group = std::min(per, g.in_c - first);
    c.kernel = exact_float_kernel(&c.g);
    if (!c.kernel) return Status::Ok();
    c.packed_offset = floats;
    floats += round_up(c.kernel->packed_floats(c.g) * sizeof(float)) / sizeof(float);
    ws = std::max(ws, c.kernel->workspace_bytes(c.g));
    per_thread = std::max(per_thread, c.kernel->workspace_per_thread_bytes(c.g));
    chunks.push_back(c);
  }
  Status s = allocate_packed(floats, "int8 convolution weights", &packed_);
  if (!s.ok()) return s;
  for (const Chunk& c : chunks) {
    const std::vector<float> wf(w8_.begin() + c.first * taps, w8_.begin() + (c.first + c.g.in_c) * taps);
    c.kernel->pack(c.g, wf.data(), nullptr, packed_.data + c.packed_offset);
  }
  chunks_ = std::move(chunks);
  // Each thread's scratch: a chunk's quantized input, then the kernel's shared and
  // per-thread workspaces (the kernel runs on one thread).
  map_bytes_ = round_up(in_cstep_ * per * sizeof(float) + kOverreadBytes);
  kernel_ws_bytes_ = round_up(ws);
  per_thread_bytes_ = map_bytes_ + kernel_ws_bytes_ + per_thread;
  std::snprintf(name_, sizeof name_, "i8_%s", chunks_[0].kernel->name);
  std::vector<int8_t>().swap(w8_);
  return Status::Ok();
}

Status prepare_int8_layer(const kernels::ConvGeometry& g, WidenedWeight* widened, const float* bias,
                          const PrepareContext& ctx, Int8Conv* int8, Layer* layer) {
  // An I8 weight of the model goes in as it is: the same values quantize_rows_i8 gives
  // its fp32 original, which kestrel-quantize quantized with it.
  const int8_t* q = widened->int8();
  Status s = int8->prepare(g, q ? nullptr : widened->floats(), bias, ctx.int8_in_scale, ctx.kernels, q,
                           widened->int8_scales());
  layer->workspace_bytes = int8->workspace_bytes();
  layer->workspace_per_thread_bytes = int8->workspace_per_thread_bytes();
  layer->kernel_name = int8->kernel_name();
  if (widened->compact()) widened->drop();
  return s;
}

size_t Int8Conv::held_bytes() const { return packed_.total() * sizeof(float) + w8_.size() + dequant_.size() * sizeof(float); }

void Int8Conv::dequantize(float* out, size_t out_cstep, int first, int count) const {
  const kernels::I8MapKernel& mk = kernels::i8_map_kernel();
  const size_t plane = static_cast<size_t>(g_.out_h) * g_.out_w;
  for (int o = first; o < first + count; ++o) {
    float* y = out + o * out_cstep;
    mk.dequantize(y, y, plane, dequant_[o], bias_ ? bias_[o] : 0.f, g_.act);
  }
}

bool Int8Conv::set_maps(bool in_i8, float out_scale, bool dry_run) {
  const bool oracle = !i8_kernel_ && !float_kernel_ && chunks_.empty();
  if (!maps_ || (out_scale > 0.f && !kernels::i8_output_activation(g_.act))) return false;
  if (dry_run) return true;
  in_i8_ = in_i8;
  out_scale_ = out_scale;
  // The oracle reads an int8 input where it is, and needs no scratch for it.
  if (oracle && in_i8) workspace_bytes_ = 0;
  return true;
}

void Int8Conv::forward(const Mat& in, Mat& out, const ForwardContext& ctx) const {
  if (!in_i8_ && out_scale_ <= 0.f) {
    forward(in.data, in.cstep, out.data, out.cstep, ctx);
    return;
  }
  // Mat::cstep counts 4-byte units; an int8 map's operands count bytes.
  const size_t in_cstep = in.cstep * (in_i8_ ? sizeof(float) : 1);
  const size_t out_cstep = out.cstep * (out_scale_ > 0.f ? sizeof(float) : 1);
  if (i8_kernel_) {
    kernels::I8Operands io;
    io.in = in.data;
    io.in_cstep = in_cstep;
    io.in_i8 = in_i8_;
    io.in_scale = in_scale_;
    io.out = out.data;
    io.out_cstep = out_cstep;
    io.out_scale = out_scale_;
    i8_kernel_->run_maps(g_, packed_.data, io, kernel_context(ctx));
    return;
  }
  const int8_t* q = reinterpret_cast<const int8_t*>(in.data);
  size_t q_cstep = in_cstep;
  if (!in_i8_) {
    int8_t* w = static_cast<int8_t*>(ctx.workspace);
    q_cstep = static_cast<size_t>(g_.in_h) * g_.in_w;
    for (int c = 0; c < g_.in_c; ++c) kernels::quantize_i8(in.data + c * in.cstep, w + c * q_cstep, q_cstep, in_scale_);
    q = w;
  }
  kernels::conv_reference_i8(g_, w8_.data(), dequant_.data(), bias_, q, q_cstep, out_scale_,
                             reinterpret_cast<int8_t*>(out.data), out.data, out_cstep, ctx.num_threads);
}

void Int8Conv::forward(const float* in, size_t in_cstep, float* out, size_t out_cstep,
                       const ForwardContext& ctx) const {
  if (i8_kernel_) {
    i8_kernel_->run(g_, packed_.data, in, in_cstep, in_scale_, out, out_cstep, kernel_context(ctx));
  } else if (float_kernel_) {
    forward_floats(in, in_cstep, out, out_cstep, ctx);
  } else if (!chunks_.empty()) {
    forward_chunks(in, in_cstep, out, out_cstep, ctx);
  } else {
    // The input quantized with its scale into the workspace, channels unpadded.
    int8_t* q = static_cast<int8_t*>(ctx.workspace);
    const size_t plane = static_cast<size_t>(g_.in_h) * g_.in_w;
    for (int c = 0; c < g_.in_c; ++c) kernels::quantize_i8(in + c * in_cstep, q + c * plane, plane, in_scale_);
    kernels::conv_reference_i8(g_, w8_.data(), dequant_.data(), bias_, q, plane, 0.f, nullptr, out, out_cstep,
                               ctx.num_threads);
  }
}

// The whole map: quantized into the workspace, the sums by the kernel on all threads,
// then each output channel dequantized.
void Int8Conv::forward_floats(const float* in, size_t in_cstep, float* out, size_t out_cstep,
                              const ForwardContext& ctx) const {
  const kernels::I8MapKernel& mk = kernels::i8_map_kernel();
  float* q = static_cast<float*>(ctx.workspace);
  const size_t in_plane = static_cast<size_t>(g_.in_h) * g_.in_w;
  const int threads = std::max(1, ctx.num_threads);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int c = 0; c < g_.in_c; ++c) mk.quantize(in + c * in_cstep, q + c * in_cstep_, in_plane, in_scale_);
  kernels::KernelContext kc = kernel_context(ctx);
  kc.workspace = static_cast<char*>(ctx.workspace) + map_bytes_;
  float_kernel_->run(float_g_, packed_.data, q, in_cstep_, out, out_cstep, kc);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int o = 0; o < g_.out_c; ++o) dequantize(out, out_cstep, o, 1);
}

// Depthwise chunks, one thread each: quantize, sum, dequantize while the chunk is in L2.
void Int8Conv::forward_chunks(const float* in, size_t in_cstep, float* out, size_t out_cstep,
                              const ForwardContext& ctx) const {
  const kernels::I8MapKernel& mk = kernels::i8_map_kernel();
  const size_t in_plane = static_cast<size_t>(g_.in_h) * g_.in_w;
  const int n = static_cast<int>(chunks_.size());
#pragma omp parallel for num_threads(std::max(1, ctx.num_threads)) schedule(static)
  for (int i = 0; i < n; ++i) {
    const Chunk& c = chunks_[i];
    char* base = ctx.thread_scratch + static_cast<size_t>(omp_get_thread_num()) * ctx.thread_scratch_stride;
    float* q = reinterpret_cast<float*>(base);
    for (int j = 0; j < c.g.in_c; ++j) {
      mk.quantize(in + (c.first + j) * in_cstep, q + j * in_cstep_, in_plane, in_scale_);
    }
    kernels::KernelContext kc;
    kc.num_threads = 1;
    kc.workspace = base + map_bytes_;
    kc.thread_scratch = base + map_bytes_ + kernel_ws_bytes_;
    c.kernel->run(c.g, packed_.data + c.packed_offset, q, in_cstep_, out + c.first * out_cstep, out_cstep, kc);
    dequantize(out, out_cstep, c.first, c.g.in_c);
  }
}

}  // namespace kestrel
