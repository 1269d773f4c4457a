// Permute: output axis i is input axis order[i].
#include <cstring>

#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::AxisView;
using layer_util::corrupt;

// dst[a * da + b] = src[a + b * sb] for a < na, b < nb: the 2-D transpose that a
// Permute moving a map's channels innermost makes of each plane (SSD's heads), in
// 4 x 4 tiles so that both sides are read and written four contiguous values at a
// time, transposed in registers by 8 shuffles (GCC's portable vectors: NEON zip/trn,
// SSE shufps): copied value by value, a tile took ~40 aarch64 instructions, 147 K of
// MobileNet-SSD's inference.
using Vec4 = float __attribute__((vector_size(16)));

Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store4(float* p, Vec4 v) { std::memcpy(p, &v, sizeof v); }

void transpose_plane(const float* src, size_t sb, float* dst, size_t da, int na, int nb) {
  int a = 0;
  for (; a + 4 <= na; a += 4) {
    int b = 0;
    for (; b + 4 <= nb; b += 4) {
      const float* s = src + a + b * sb;
      float* d = dst + a * da + b;
      // Rows r_i = s[i * sb + 0..3] (b + i); output row j = lane j of r_0..r_3.
      const Vec4 r0 = load4(s), r1 = load4(s + sb), r2 = load4(s + 2 * sb), r3 = load4(s + 3 * sb);
      const Vec4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5), t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7);
      const Vec4 t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5), t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
      store4(d, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
      store4(d + da, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
      store4(d + 2 * da, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
      store4(d + 3 * da, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
    }
    for (; b < nb; ++b) {
      for (int j = 0; j < 4; ++j) dst[(a + j) * da + b] = src[a + j + b * sb];
    }
  }
  for (; a < na; ++a) {
    for (int b = 0; b < nb; ++b) dst[a * da + b] = src[a + b * sb];
  }
}

class Permute final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::PermuteParam* p = ctx.layer->params_as_PermuteParam();
    if (!p || !p->order()) return corrupt("missing PermuteParam.order");
    order_.assign(p->order()->begin(), p->order()->end());
    const int n = static_cast<int>(order_.size());
    if (n < 1 || n > 4) return corrupt("order must have 1 to 4 entries, got " + std::to_string(n));
    bool seen[4] = {false, false, false, false};
    for (int v : order_) {
      if (v < 0 || v >= n || seen[v]) {
        return corrupt("order " + layer_util::join_dims(order_) + " is not a permutation of 0.." +
                       std::to_string(n - 1));
      }
      seen[v] = true;
    }
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext& ctx) override {
    fast_ = ctx.kernels == KernelSet::kFast;
    Status s = layer_util::check_io("Permute", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    if (inputs[0].dims != static_cast<int>(order_.size())) {
      return corrupt("order has " + std::to_string(order_.size()) + " entries but the input has " +
                     std::to_string(inputs[0].dims) + " dims");
    }
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    int ext[4];
    for (size_t i = 0; i < order_.size(); ++i) ext[i] = in[order_[i]];
    outputs[0] = layer_util::shape_from_extents(ext, inputs[0].dims);
    return Status::Ok();
  }

  // A channel-blocked input (Layer::set_packs) where the order moves the channels of a
  // 3-D map innermost, (1, 2, 0): SSD's heads, whose 1x1 convolutions then write their
  // blocks as the tiles hold them, and each pixel's channels here are the blocks'
  // vectors side by side, copied whole.
  bool set_packs(int in_pack, int out_pack, bool /*rechoose*/, bool dry_run) override {
    if (!fast_ || out_pack != 1) return false;
    if (in_pack == in_pack_) return true;
    const bool channels_last = order_ == std::vector<int>{1, 2, 0};
    if (!channels_last || (in_pack != 1 && in_pack != 4 && in_pack != 8 && in_pack != 16)) return false;
    if (!dry_run) in_pack_ = in_pack;
    return true;
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    switch (inputs[0].elempack) {
      case 4: return copy_blocks<4>(inputs[0], outputs[0], ctx.num_threads);
      case 8: return copy_blocks<8>(inputs[0], outputs[0], ctx.num_threads);
      case 16: return copy_blocks<16>(inputs[0], outputs[0], ctx.num_threads);
      default: break;
    }
    const AxisView iv = layer_util::axis_view(inputs[0]);
    // The input seen through the permutation: reading it in output order is the copy.
    AxisView pv = iv;
    for (int i = 0; i < iv.ndim; ++i) {
      pv.extent[i] = iv.extent[order_[i]];
      pv.stride[i] = iv.stride[order_[i]];
    }
    const AxisView ov = layer_util::axis_view(outputs[0]);
    const int last = iv.ndim - 1;
    // The output axis whose input values are contiguous, if not the innermost.
    int k = -1;
    for (int i = 0; i < last; ++i) {
      if (pv.stride[i] == 1 && pv.stride[last] != 1) k = i;
    }
    if (k < 0) {
      layer_util::copy_strided(inputs[0].data, pv, outputs[0].data, ov, ctx.num_threads);
      return Status::Ok();
    }
    // One plane transpose (axes k and last) per index of the other (at most two) axes.
    int outer[2] = {-1, -1}, nouter = 0;
    for (int i = 0; i < last; ++i) {
      if (i != k) outer[nouter++] = i;
    }
    const int e0 = nouter > 0 ? pv.extent[outer[0]] : 1, e1 = nouter > 1 ? pv.extent[outer[1]] : 1;
    const long long planes = static_cast<long long>(e0) * e1;
    const float* src = inputs[0].data;
    float* dst = outputs[0].data;
    parallel_for(ctx.num_threads, planes, [&](long long p) {
      const size_t i0 = static_cast<size_t>(p / e1), i1 = static_cast<size_t>(p % e1);
      size_t so = 0, d = 0;
      if (nouter > 0) so += i0 * pv.stride[outer[0]], d += i0 * ov.stride[outer[0]];
      if (nouter > 1) so += i1 * pv.stride[outer[1]], d += i1 * ov.stride[outer[1]];
      transpose_plane(src + so, pv.stride[last], dst + d, ov.stride[k], pv.extent[k], pv.extent[last]);
    });
    return Status::Ok();
  }

 private:
  // [H][W][C] from C / P blocks of H x W pixel vectors (order (1, 2, 0), set_packs).
  template <int P>
  static Status copy_blocks(const Mat& in, Mat& out, int num_threads) {
    // By value: through references GCC reloaded the Mats' fields after every store.
    const int blocks = in.c, w = in.w;
    const size_t channels = static_cast<size_t>(blocks) * P, in_cstep = in.cstep, out_cstep = out.cstep;
    const float* const in_data = in.data;
    float* const out_data = out.data;
    parallel_for(num_threads, in.h, [=](long long y) {
      const float* src = in_data + static_cast<size_t>(y) * w * P;
      float* dst = out_data + static_cast<size_t>(y) * out_cstep;
      for (int x = 0; x < w; ++x, src += P, dst += channels) {
        for (int b = 0; b < blocks; ++b) std::memcpy(dst + b * P, src + b * in_cstep, P * sizeof(float));
      }
    });
    return Status::Ok();
  }

  std::vector<int> order_;
  bool fast_ = false;  // fast kernels (prepare): only then re-targeted
  int in_pack_ = 1;
};

}  // namespace

std::unique_ptr<Layer> create_permute_layer() { return std::make_unique<Permute>(); }

}  // namespace kestrel
