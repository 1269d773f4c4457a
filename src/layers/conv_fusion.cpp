// The fused pointwise -> depthwise layer (see conv_fusion.h). Bands of depthwise
// output rows, top to bottom; for each, the pointwise kernel computes the rows of its
// output the band reads and has not computed yet into `mid` (channel stride
// mid_cstep), and the depthwise kernel reads them there. The rows two bands share (the
// 3x3 halo) are moved to the top of `mid` instead of computed again. A map of one band
// keeps `mid` in the shared workspace and lets both kernels split it among the threads
// as they do unfused; a map of several bands gives each thread a run of whole bands
// and its own `mid`. Results never depend on the thread count.
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
  return g.is_pointwise() && g.group == 1;
}

bool fusable_depthwise(const ConvGeometry& g, const ConvGeometry& pw) {
  return g.is_depthwise() && g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && g.sh == g.sw && g.pad_top >= 0 &&
         g.in_c == pw.out_c && g.in_h == pw.out_h && g.in_w == pw.out_w;
}

bool x86_kernel(const ConvKernel* k) {
  // The pair was measured on x86 only (ARM speed cannot be timed here).
  return k->isa == kernels::Isa::kAvx2 || k->isa == kernels::Isa::kAvx512;
}

// The bands of a pair: which rows each computes and the kernels' geometries for them.
struct BandPlan {
  struct Band {
    int oy0, oy1;  // depthwise output rows
    int r0, r1;    // pointwise rows they read
  };
  const ConvGeometry* pw;
  const ConvGeometry* dw;
  int band_rows, bands;

  BandPlan(const ConvGeometry& p, const ConvGeometry& d, int rows)
      : pw(&p), dw(&d), band_rows(rows), bands((d.out_h + rows - 1) / rows) {}

  Band band(int i) const {
    Band b;
    b.oy0 = i * band_rows;
    b.oy1 = std::min(dw->out_h, b.oy0 + band_rows);
    b.r0 = std::clamp(b.oy0 * dw->sh - dw->pad_top, 0, dw->in_h);
    b.r1 = std::clamp((b.oy1 - 1) * dw->sh - dw->pad_top + 3, 0, dw->in_h);
    return b;
  }
  // The depthwise convolution of band b, read from rows [r0, r1) of its input.
  ConvGeometry depthwise(const Band& b) const {
    ConvGeometry g = *dw;
    g.in_h = b.r1 - b.r0;
    g.out_h = b.oy1 - b.oy0;
    g.pad_top = b.r0 - (b.oy0 * g.sh - dw->pad_top);
    return g;
  }
  ConvGeometry pointwise(int rows) const {
    ConvGeometry g = *pw;
    g.in_h = g.out_h = rows;
    return g;
  }
  // The largest shared and per-thread scratch the kernels ask for over the bands: a
  // band computes its new pointwise rows, or all of them when a thread starts on it.
  void scratch(const ConvKernel* pk, const ConvKernel* dk, size_t* shared, size_t* per_thread) const {
    *shared = *per_thread = 0;
    auto need = [&](const ConvKernel* k, const ConvGeometry& g) {
      *shared = std::max(*shared, k->workspace_bytes(g));
      *per_thread = std::max(*per_thread, k->workspace_per_thread_bytes(g));
    };
    int m1 = 0;
    for (int i = 0; i < bands; ++i) {
      const Band b = band(i);
      need(pk, pointwise(b.r1 - b.r0));
      if (b.r1 > std::max(m1, b.r0)) need(pk, pointwise(b.r1 - std::max(m1, b.r0)));
      need(dk, depthwise(b));
      m1 = std::max(m1, b.r1);
    }
  }
};

class PointwiseDepthwise final : public Layer {
 public:
  PointwiseDepthwise(std::unique_ptr<Layer> pw, std::unique_ptr<Layer> dw, const ConvParts& p, const ConvParts& d,
                     const BandPlan& plan, int mid_rows, size_t shared, size_t per_thread)
      : pw_(std::move(pw)), dw_(std::move(dw)), p_(p), d_(d), plan_(plan) {
    mid_cstep_ = round_up(static_cast<size_t>(mid_rows) * d_.g->in_w, kLineFloats);
    mid_bytes_ = round_up(static_cast<size_t>(d_.g->in_c) * mid_cstep_ * sizeof(float) + kOverreadBytes, kAlignment);
    const bool one_band = plan_.bands == 1;
    workspace_bytes = (one_band ? mid_bytes_ : 0) + shared;
    workspace_per_thread_bytes = (one_band ? 0 : mid_bytes_) + per_thread;
    multiply_adds = pw_->multiply_adds + dw_->multiply_adds;
    name_ = std::string(p_.kernel->name) + "+" + d_.kernel->name;
    kernel_name = name_.c_str();
  }

  Status load(const LoadContext&) override {
    return Status(ErrorCode::kInternal, "a fused layer is made from prepared layers, not loaded");
  }
  Status prepare(const std::vector<Shape>&, std::vector<Shape>&, const PrepareContext&) override {
    return Status(ErrorCode::kInternal, "a fused layer is made from prepared layers");
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs, const ForwardContext& ctx) const override {
    const kernels::KernelContext k = kernel_context(ctx);
    const int threads = std::max(1, ctx.num_threads);
    if (plan_.bands == 1) {
      // mid first in the shared workspace, the kernels' shared scratch after it.
      kernels::KernelContext kk = k;
      kk.workspace = static_cast<char*>(ctx.workspace) + mid_bytes_;
      run_bands(inputs[0], outputs[0], 0, 1, static_cast<float*>(ctx.workspace), kk);
      return Status::Ok();
    }
    // Each thread takes a run of whole bands with its own mid (the head of its scratch),
    // the kernels on one thread: no fork and join per band, and a thread's rows stay in
    // its cache.
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      char* mine = static_cast<char*>(k.scratch_of(t));
      kernels::KernelContext kt;
      kt.num_threads = 1;
      kt.thread_scratch = mine + mid_bytes_;
      kt.thread_scratch_stride = 0;
      run_bands(inputs[0], outputs[0], plan_.bands * t / n, plan_.bands * (t + 1) / n, reinterpret_cast<float*>(mine),
                kt);
    }
    return Status::Ok();
  }

  size_t packed_weight_bytes() const override { return pw_->packed_weight_bytes() + dw_->packed_weight_bytes(); }

 private:
  // Bands [first, last) with `mid` as the pointwise rows' buffer.
  void run_bands(const Mat& in, Mat& out, int first, int last, float* mid, const kernels::KernelContext& k) const {
    const ConvGeometry& gd = *d_.g;
    const size_t w = static_cast<size_t>(gd.in_w);
    int m0 = 0, m1 = 0;  // pointwise rows [m0, m1) are in mid, row m0 at its top
    for (int i = first; i < last; ++i) {
      const BandPlan::Band b = plan_.band(i);
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
        p_.kernel->run(plan_.pointwise(b.r1 - m1), p_.packed, in.data + static_cast<size_t>(m1) * w, in.cstep,
                       mid + static_cast<size_t>(m1 - m0) * w, mid_cstep_, k);
        m1 = b.r1;
      }
      d_.kernel->run(plan_.depthwise(b), d_.packed, mid, mid_cstep_, out.data + static_cast<size_t>(b.oy0) * gd.out_w,
                     out.cstep, k);
    }
  }

  std::unique_ptr<Layer> pw_, dw_;  // own the geometries and packed weights p_, d_ and plan_ point into
  ConvParts p_, d_;
  BandPlan plan_;
  size_t mid_cstep_ = 0, mid_bytes_ = 0;
  std::string name_;
};

}  // namespace

std::unique_ptr<Layer> fuse_pointwise_depthwise(std::unique_ptr<Layer>& pw, std::unique_ptr<Layer>& dw) {
  ConvParts p, d;
  if (!pw || !dw || !convolution_parts(*pw, &p) || !convolution_parts(*dw, &d)) return nullptr;
  const ConvGeometry& gp = *p.g;
  const ConvGeometry& gd = *d.g;
  // The band buffer between the two is planar: blocked pairs stay unfused.
  if (!gp.planar() || !gd.planar()) return nullptr;
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
  const BandPlan plan(gp, gd, band_rows);
  for (int i = 0; i < plan.bands; ++i) {
    const BandPlan::Band b = plan.band(i);
    if (b.r1 <= b.r0 || !d.kernel->supports(plan.depthwise(b))) return nullptr;
  }
  size_t shared = 0, per_thread = 0;
  plan.scratch(p.kernel, d.kernel, &shared, &per_thread);
  // Threads run bands on their own only where the kernels need no shared scratch.
  if (plan.bands > 1 && shared > 0) return nullptr;
  return std::make_unique<PointwiseDepthwise>(std::move(pw), std::move(dw), p, d, plan, mid_rows, shared, per_thread);
}

}  // namespace kestrel
