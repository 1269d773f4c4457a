// The fused pointwise -> depthwise layer (see conv_fusion.h). Bands of depthwise
// output rows, top to bottom; for each, the pointwise kernel computes the rows of its
// output the band reads and has not computed yet into `mid` (the shared workspace,
// channel stride mid_cstep_), and the depthwise kernel reads them there. The rows two
// bands share (the 3x3 halo) are moved to the top of `mid` instead of computed again.
// Both kernels keep their own threading, so a thread works on the same channels in
// both (each splits by channels), and nothing depends on the thread count.
#include <algorithm>
#include <cstring>

#include <omp.h>
#include <string>

#include "layers/conv_fusion.h"
#include "layers/kernel_bridge.h"

namespace kestrel {
namespace {

using kernels::ConvGeometry;
using kernels::ConvKernel;

// Bytes of pointwise output a band aims to keep: a share of a 1-2 MiB L2 that leaves
// room for the pointwise input rows and the weights.
constexpr size_t kBandBytes = 512 * 1024;
// Depthwise output rows a band has at least: fewer, and the kept halo rows dominate.
constexpr int kMinBandRows = 4;
// Intermediate maps larger than the band budget are fused only from this size on:
// below it the unfused map stays in cache between the two layers and the bands' halo
// copies and partial tiles cost more than they save (MobileNet v1 56x56x128 and
// 28x28x256, 1.6 MB: 0.01-0.02 ms slower fused; 112x112x64, 3.2 MB: 0.12 ms faster at
// 1 thread; AMD EPYC, 2026-11-25).
constexpr size_t kLargeMapBytes = 2 * 1024 * 1024;
constexpr size_t kLineFloats = kAlignment / sizeof(float);

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

bool fusable_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.group == 1 &&
         g.in_h == g.out_h && g.in_w == g.out_w;
}

bool fusable_depthwise(const ConvGeometry& g, const ConvGeometry& pw) {
  return g.is_depthwise() && g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && g.sh == g.sw && g.pad_top >= 0 &&
         g.in_c == pw.out_c && g.in_h == pw.out_h && g.in_w == pw.out_w;
}

bool x86_kernel(const ConvKernel* k) {
  // The pair was measured on x86 only (ARM speed cannot be timed here).
  return k->isa == kernels::Isa::kAvx2 || k->isa == kernels::Isa::kAvx512;
}

class PointwiseDepthwise final : public Layer {
 public:
  struct Band {
    int oy0, oy1;  // depthwise output rows
    int r0, r1;    // pointwise rows they read
  };

  PointwiseDepthwise(std::unique_ptr<Layer> pw, std::unique_ptr<Layer> dw, const ConvParts& p, const ConvParts& d,
                     int band_rows, int mid_rows)
      : pw_(std::move(pw)), dw_(std::move(dw)), p_(p), d_(d), band_rows_(band_rows) {
    const ConvGeometry& gd = *d_.g;
    bands_ = (gd.out_h + band_rows_ - 1) / band_rows_;
    mid_cstep_ = round_up(static_cast<size_t>(mid_rows) * gd.in_w, kLineFloats);
    mid_bytes_ = round_up(static_cast<size_t>(gd.in_c) * mid_cstep_ * sizeof(float) + kernels_overread(), kAlignment);
    size_t shared = 0, per_thread = 0;
    int m1 = 0;
    for (int i = 0; i < bands_; ++i) {
      const Band b = band(i);
      if (b.r1 > std::max(m1, b.r0)) {
        const ConvGeometry gp = pointwise_rows(b.r1 - std::max(m1, b.r0));
        shared = std::max(shared, p_.kernel->workspace_bytes(gp));
        per_thread = std::max(per_thread, p_.kernel->workspace_per_thread_bytes(gp));
      }
      const ConvGeometry gb = depthwise_band(b);
      shared = std::max(shared, d_.kernel->workspace_bytes(gb));
      per_thread = std::max(per_thread, d_.kernel->workspace_per_thread_bytes(gb));
      m1 = std::max(m1, b.r1);
    }
    workspace_bytes = shared;
    workspace_per_thread_bytes = mid_bytes_ + per_thread;
    shared_ = shared;
    multiply_adds = (pw_ ? pw_->multiply_adds : 0) + (dw_ ? dw_->multiply_adds : 0);
    name_ = std::string(p_.kernel->name) + "+" + d_.kernel->name;
    kernel_name = name_.c_str();
  }

  Band band(int i) const {
    const ConvGeometry& g = *d_.g;
    Band b;
    b.oy0 = i * band_rows_;
    b.oy1 = std::min(g.out_h, b.oy0 + band_rows_);
    b.r0 = std::clamp(b.oy0 * g.sh - g.pad_top, 0, g.in_h);
    b.r1 = std::clamp((b.oy1 - 1) * g.sh - g.pad_top + 3, 0, g.in_h);
    return b;
  }

  // The depthwise convolution of band b, read from rows [r0, r1) of its input.
  ConvGeometry depthwise_band(const Band& b) const {
    ConvGeometry g = *d_.g;
    g.in_h = b.r1 - b.r0;
    g.out_h = b.oy1 - b.oy0;
    g.pad_top = b.r0 - (b.oy0 * g.sh - d_.g->pad_top);
    return g;
  }

  ConvGeometry pointwise_rows(int rows) const {
    ConvGeometry g = *p_.g;
    g.in_h = g.out_h = rows;
    return g;
  }

  int bands() const { return bands_; }

  Status load(const LoadContext&) override {
    return Status(ErrorCode::kInternal, "a fused layer is made from prepared layers, not loaded");
  }
  Status prepare(const std::vector<Shape>&, std::vector<Shape>&, const PrepareContext&) override {
    return Status(ErrorCode::kInternal, "a fused layer is made from prepared layers");
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs, const ForwardContext& ctx) const override {
    const kernels::KernelContext k = kernel_context(ctx);
    const int threads = std::max(1, ctx.num_threads);
    if (bands_ == 1 || threads == 1) {
      // The kernels split each step among the threads; mid is thread 0's, each
      // kernel thread's own scratch follows its mid-sized head.
      kernels::KernelContext kk = k;
      kk.thread_scratch = k.thread_scratch + mid_bytes_;
      run_bands(inputs[0], outputs[0], 0, bands_, reinterpret_cast<float*>(k.thread_scratch), kk);
      return Status::Ok();
    }
    // Each thread takes a run of whole bands with its own mid, the kernels on one
    // thread: no fork and join per band, and a thread's rows stay in its cache.
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      char* mine = static_cast<char*>(k.scratch_of(t));
      kernels::KernelContext kt;
      kt.num_threads = 1;
      kt.thread_scratch = mine + mid_bytes_;
      kt.thread_scratch_stride = 0;
      run_bands(inputs[0], outputs[0], bands_ * t / n, bands_ * (t + 1) / n, reinterpret_cast<float*>(mine), kt);
    }
    return Status::Ok();
  }

  // Bands [first, last) with `mid` as the pointwise rows' buffer.
  void run_bands(const Mat& in, Mat& out, int first, int last, float* mid, const kernels::KernelContext& k) const {
    const ConvGeometry& gd = *d_.g;
    const size_t w = static_cast<size_t>(gd.in_w);
    int m0 = 0, m1 = 0;  // pointwise rows [m0, m1) are in mid, row m0 at its top
    for (int i = first; i < last; ++i) {
      const Band b = band(i);
      if (m1 <= b.r0 || i == first) {
        m0 = m1 = b.r0;
      } else if (b.r0 > m0) {
        const size_t from = static_cast<size_t>(b.r0 - m0) * w, keep = static_cast<size_t>(m1 - b.r0) * w;
        for (int c = 0; c < gd.in_c; ++c) {
          float* ch = mid + static_cast<size_t>(c) * mid_cstep_;
          std::memmove(ch, ch + from, keep * sizeof(float));
        }
        m0 = b.r0;
      }
      if (b.r1 > m1) {
        p_.kernel->run(pointwise_rows(b.r1 - m1), p_.packed, in.data + static_cast<size_t>(m1) * w, in.cstep,
                       mid + static_cast<size_t>(m1 - m0) * w, mid_cstep_, k);
        m1 = b.r1;
      }
      d_.kernel->run(depthwise_band(b), d_.packed, mid, mid_cstep_,
                     out.data + static_cast<size_t>(b.oy0) * gd.out_w, out.cstep, k);
    }
  }

  // Threads may run bands on their own only if the kernels need no shared scratch.
  bool bands_on_threads() const { return shared_ == 0; }

  size_t packed_weight_bytes() const override { return pw_->packed_weight_bytes() + dw_->packed_weight_bytes(); }

 private:
  static size_t kernels_overread() { return kOverreadBytes; }

  std::unique_ptr<Layer> pw_, dw_;  // own the geometries and packed weights p_ and d_ point into
  ConvParts p_, d_;
  int band_rows_ = 0, bands_ = 0;
  size_t mid_cstep_ = 0, mid_bytes_ = 0, shared_ = 0;
  std::string name_;
};

}  // namespace

std::unique_ptr<Layer> fuse_pointwise_depthwise(std::unique_ptr<Layer>& pw, std::unique_ptr<Layer>& dw) {
  ConvParts p, d;
  if (!pw || !dw || !convolution_parts(*pw, &p) || !convolution_parts(*dw, &d)) return nullptr;
  const ConvGeometry& gp = *p.g;
  const ConvGeometry& gd = *d.g;
  if (!x86_kernel(p.kernel) || !x86_kernel(d.kernel) || !fusable_pointwise(gp) || !fusable_depthwise(gd, gp)) {
    return nullptr;
  }
  // One band of the whole map where it fits; else bands of as many output rows as
  // kBandBytes of pointwise rows allow.
  const size_t row_bytes = static_cast<size_t>(gd.in_c) * gd.in_w * sizeof(float);
  int band_rows = gd.out_h, mid_rows = gd.in_h;
  if (static_cast<size_t>(gd.in_h) * row_bytes > kBandBytes) {
    if (static_cast<size_t>(gd.in_h) * row_bytes < kLargeMapBytes) return nullptr;
    const long fit = static_cast<long>(kBandBytes / row_bytes);
    band_rows = static_cast<int>(std::clamp<long>((fit - 3) / gd.sh + 1, kMinBandRows, gd.out_h));
    mid_rows = std::min(gd.in_h, (band_rows - 1) * gd.sh + 3);
  }
  // The bands' geometries, checked on a layer that does not own the pair yet.
  auto fused = std::make_unique<PointwiseDepthwise>(nullptr, nullptr, p, d, band_rows, mid_rows);
  for (int i = 0; i < fused->bands(); ++i) {
    const auto b = fused->band(i);
    if (b.r1 <= b.r0 || !d.kernel->supports(fused->depthwise_band(b))) return nullptr;
  }
  if (fused->bands() > 1 && !fused->bands_on_threads()) return nullptr;
  return std::make_unique<PointwiseDepthwise>(std::move(pw), std::move(dw), p, d, band_rows, mid_rows);
}

}  // namespace kestrel
