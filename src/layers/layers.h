// The built-in layer types (one creator per file in src/layers/) and the small helpers
// their implementations share: parameter checking and strided access to Mats.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/layer.h"
#include "core/parallel.h"

namespace kestrel {

std::unique_ptr<Layer> create_convolution_layer();
std::unique_ptr<Layer> create_pooling_layer();
std::unique_ptr<Layer> create_innerproduct_layer();
std::unique_ptr<Layer> create_softmax_layer();
std::unique_ptr<Layer> create_concat_layer();
std::unique_ptr<Layer> create_flatten_layer();
std::unique_ptr<Layer> create_reshape_layer();
std::unique_ptr<Layer> create_permute_layer();
std::unique_ptr<Layer> create_priorbox_layer();
std::unique_ptr<Layer> create_detectionoutput_layer();
std::unique_ptr<Layer> create_activation_layer();
std::unique_ptr<Layer> create_dropout_layer();
std::unique_ptr<Layer> create_deconvolution_layer();
std::unique_ptr<Layer> create_batchnorm_layer();
std::unique_ptr<Layer> create_scale_layer();
std::unique_ptr<Layer> create_prelu_layer();
std::unique_ptr<Layer> create_eltwise_layer();
std::unique_ptr<Layer> create_binaryop_layer();
std::unique_ptr<Layer> create_lrn_layer();
std::unique_ptr<Layer> create_normalize_layer();
std::unique_ptr<Layer> create_slice_layer();
std::unique_ptr<Layer> create_split_layer();
std::unique_ptr<Layer> create_crop_layer();
std::unique_ptr<Layer> create_padding_layer();
std::unique_ptr<Layer> create_squeeze_layer();
std::unique_ptr<Layer> create_unsqueeze_layer();
std::unique_ptr<Layer> create_interp_layer();
std::unique_ptr<Layer> create_shufflechannel_layer();
std::unique_ptr<Layer> create_reduce_layer();
std::unique_ptr<Layer> create_gemm_layer();
// Not a model layer type: the conversion the Net inserts between fp32 and fp16 maps
// (core/net_half.cpp). to_half: fp32 maps in, halves out; else halves in, fp32 out.
// The output's layout is out_pack (1, 4 or 8; channels a multiple of it).
std::unique_ptr<Layer> create_half_convert_layer(bool to_half, int out_pack);

namespace layer_util {

inline Status corrupt(const std::string& msg) { return Status(ErrorCode::kCorruptModel, msg); }

// Collects the first failed parameter check, so that load() can list its checks
// one per line and return once.
class ParamCheck {
 public:
  ParamCheck& positive(const char* name, long long v) {
    return require(v > 0, [&] { return std::string(name) + " must be > 0, got " + std::to_string(v); });
  }
  ParamCheck& non_negative(const char* name, long long v) {
    return require(v >= 0, [&] { return std::string(name) + " must be >= 0, got " + std::to_string(v); });
  }
  ParamCheck& require(bool cond, const std::string& msg) {
    return require(cond, [&] { return msg; });
  }
  ParamCheck& require(bool cond, const char* msg) {
    return require(cond, [&] { return std::string(msg); });
  }
  template <class MakeMessage>
  ParamCheck& require(bool cond, MakeMessage make) {
    if (ok_ && !cond) {
      ok_ = false;
      message_ = make();
    }
    return *this;
  }
  bool ok() const { return ok_; }
  Status status() const { return ok_ ? Status::Ok() : corrupt(message_); }

 private:
  bool ok_ = true;
  std::string message_;
};

// "[a,b,c]", for messages about shapes and axis lists.
inline std::string join_dims(const std::vector<int>& v) {
  std::string t;
  for (int d : v) t += (t.empty() ? "" : ",") + std::to_string(d);
  return "[" + t + "]";
}

// The optional bias of Convolution and InnerProduct: `count` values or absent.
inline Status load_bias(const std::vector<WeightView>& weights, bool bias_term, int count, const float** bias) {
  *bias = nullptr;
  if (!bias_term) return Status::Ok();
  const WeightView& b = weights[1];
  if (b.count != size_t(count) || !b.data) {
    return corrupt("bias has " + std::to_string(b.count) + " values, expected num_output = " + std::to_string(count));
  }
  *bias = b.data;
  return Status::Ok();
}

// Checks the counts of a layer's inputs and outputs and that every input is a plain
// (elempack 1) blob.
inline Status check_io(const char* type, const std::vector<Shape>& inputs, size_t min_in, size_t max_in,
                       const std::vector<Shape>& outputs) {
  if (inputs.size() < min_in || inputs.size() > max_in) {
    const std::string want = min_in == max_in ? std::to_string(min_in)
                                              : std::to_string(min_in) + " to " + std::to_string(max_in);
    return corrupt(std::string(type) + " takes " + want + " input(s), got " + std::to_string(inputs.size()));
  }
  if (outputs.size() != 1) {
    return corrupt(std::string(type) + " has exactly 1 output, got " + std::to_string(outputs.size()));
  }
  for (const Shape& s : inputs) {
    if (s.elempack != 1) {
      return Status(ErrorCode::kUnsupported, std::string(type) + " needs unpacked inputs (elempack 1)");
    }
    if (s.dims < 1 || s.dims > 4) return corrupt("input has " + std::to_string(s.dims) + " dims");
  }
  return Status::Ok();
}

// For layers whose output has the input's shape.
inline Status prepare_same_shape(const char* type, const std::vector<Shape>& inputs, std::vector<Shape>& outputs) {
  Status s = check_io(type, inputs, 1, 1, outputs);
  if (!s.ok()) return s;
  outputs[0] = inputs[0];
  return Status::Ok();
}

// Maps an axis in the model convention (outermost first, negative from the innermost)
// to 0..ndim-1; false when out of range.
inline bool normalize_axis(int axis, int ndim, int* out) {
  const int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) return false;
  *out = a;
  return true;
}

// A blob's logical axes, outermost first, with their strides in floats. Channel
// padding makes cstep differ from the product of the inner extents, so every
// layer that walks more than one plane goes through this.
struct AxisView {
  int ndim = 0;
  int extent[4] = {1, 1, 1, 1};
  size_t stride[4] = {0, 0, 0, 0};
};

inline AxisView axis_view(const Shape& s, size_t cstep) {
  AxisView v;
  v.ndim = s.dims;
  const size_t w = static_cast<size_t>(s.w), hw = w * static_cast<size_t>(s.h);
  switch (s.dims) {
    case 1: v.extent[0] = s.w; v.stride[0] = 1; break;
    case 2:
      v.extent[0] = s.h; v.extent[1] = s.w;
      v.stride[0] = w; v.stride[1] = 1;
      break;
    case 3: {
      // A channel-blocked map (elempack p): rows of w pixel vectors of p values.
      const size_t row = w * static_cast<size_t>(s.elempack);
      v.extent[0] = s.c; v.extent[1] = s.h; v.extent[2] = static_cast<int>(row);
      v.stride[0] = cstep; v.stride[1] = row; v.stride[2] = 1;
      break;
    }
    default:
      v.extent[0] = s.c; v.extent[1] = s.d; v.extent[2] = s.h; v.extent[3] = s.w;
      v.stride[0] = cstep; v.stride[1] = hw; v.stride[2] = w; v.stride[3] = 1;
      break;
  }
  return v;
}
inline AxisView axis_view(const Mat& m) { return axis_view(m.shape(), m.cstep); }

// Extents of a shape, outermost first.
inline std::vector<int> extents_of(const Shape& s) {
  const AxisView v = axis_view(s, 0);
  return std::vector<int>(v.extent, v.extent + v.ndim);
}

// The shape with the given extents (outermost first, 1 to 4 of them).
inline Shape shape_from_extents(const int* e, int ndim) {
  switch (ndim) {
    case 1: return Shape::make1(e[0]);
    case 2: return Shape::make2(e[1], e[0]);
    case 3: return Shape::make3(e[2], e[1], e[0]);
    default: return Shape::make4(e[3], e[2], e[1], e[0]);
  }
}

// A Mat is a sequence of planes of contiguous floats: c planes cstep apart for 3-D and
// 4-D blobs, a single one otherwise.
inline int plane_count(const Mat& m) { return m.dims >= 3 ? m.c : 1; }
inline size_t plane_size(const Mat& m) {
  size_t n = static_cast<size_t>(m.w) * static_cast<size_t>(m.h);
  return m.dims == 4 ? n * static_cast<size_t>(m.d) : n;
}
inline size_t plane_size(const Shape& s) {
  size_t n = static_cast<size_t>(s.w) * static_cast<size_t>(s.h);
  return s.dims == 4 ? n * static_cast<size_t>(s.d) : n;
}

// Copies the values of `src` into `dst` in logical (row-major, outermost first)
// order; both hold the same number of values but may differ in shape and padding.
inline void copy_logical(const Mat& src, Mat& dst, int num_threads) {
  const size_t sp = plane_size(src), dp = plane_size(dst);
  const int dplanes = plane_count(dst);
  parallel_for(num_threads, dplanes, [&](int p) {
    float* out = dst.channel(p);
    size_t pos = static_cast<size_t>(p) * dp;  // logical index of out[0]
    size_t left = dp;
    while (left > 0) {
      const size_t q = pos / sp, off = pos % sp;
      const size_t n = sp - off < left ? sp - off : left;
      std::memcpy(out, src.data + q * src.cstep + off, n * sizeof(float));
      out += n;
      pos += n;
      left -= n;
    }
  });
}

// dst[i0..i3] = src[i0..i3] for two views with equal ndim and extents but any strides
// (a permuted view of src makes this a transpose).
inline void copy_strided(const float* src, const AxisView& sv, float* dst, const AxisView& dv,
                         int num_threads) {
  int e[4];
  size_t ss[4], ds[4];
  const int lead = 4 - sv.ndim;
  for (int i = 0; i < 4; ++i) {
    const int k = i - lead;
    e[i] = k < 0 ? 1 : sv.extent[k];
    ss[i] = k < 0 ? 0 : sv.stride[k];
    ds[i] = k < 0 ? 0 : dv.stride[k];
  }
  const bool contiguous = ss[3] == 1 && ds[3] == 1;
  const long long outer = static_cast<long long>(e[0]) * e[1];
  parallel_for(num_threads, outer, [&](long long o) {
    const size_t i0 = static_cast<size_t>(o / e[1]), i1 = static_cast<size_t>(o % e[1]);
    const float* s = src + i0 * ss[0] + i1 * ss[1];
    float* d = dst + i0 * ds[0] + i1 * ds[1];
    for (int i2 = 0; i2 < e[2]; ++i2) {
      const float* sr = s + static_cast<size_t>(i2) * ss[2];
      float* dr = d + static_cast<size_t>(i2) * ds[2];
      if (contiguous) {
        std::memcpy(dr, sr, static_cast<size_t>(e[3]) * sizeof(float));
      } else {
        for (int i3 = 0; i3 < e[3]; ++i3) dr[static_cast<size_t>(i3) * ds[3]] = sr[static_cast<size_t>(i3) * ss[3]];
      }
    }
  });
}

// The padding before and after one spatial axis of a sliding window and the
// resulting output size.
struct AxisGeometry {
  int pad_begin = 0;
  int pad_end = 0;
  int out = 0;
};

// ONNX auto_pad: SAME_* keeps out = ceil(in / stride) whatever the round mode; the odd
// unit of padding goes at the end (SameUpper) or the beginning (SameLower).
// Ceil rounding follows Caffe: a last window that would start in the end padding
// (at or past in + pad_begin) is dropped, so every window covers some input.
inline Status axis_geometry(const char* axis, int in, int kernel, int stride, int dilation, int pad_begin,
                            int pad_end, fb::PadMode mode, bool ceil_mode, AxisGeometry* g) {
  const long long extent = static_cast<long long>(dilation) * (kernel - 1) + 1;
  long long pb = pad_begin, pe = pad_end;
  if (mode != fb::PadMode::Explicit) {
    const long long out = (static_cast<long long>(in) + stride - 1) / stride;
    const long long total = std::max(0LL, (out - 1) * stride + extent - in);
    pb = mode == fb::PadMode::SameUpper ? total / 2 : total - total / 2;
    pe = total - pb;
    ceil_mode = false;
  }
  // Keeps every window position (out * stride) representable as an int.
  if (in + pb + pe > 0x7fffffffLL) return corrupt(std::string("padded input ") + axis + " is too large");
  const long long span = in + pb + pe - extent;
  if (span < 0) {
    return corrupt(std::string("window ") + axis + " (" + std::to_string(extent) + ") exceeds the padded input (" +
                   std::to_string(in + pb + pe) + ")");
  }
  long long out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pb) --out;
  g->pad_begin = static_cast<int>(pb);
  g->pad_end = static_cast<int>(pe);
  g->out = static_cast<int>(out);
  return Status::Ok();
}

// Product of extents as a checked int (blob dimensions are ints).
inline bool product_fits_int(const int* e, int n, long long* out) {
  long long p = 1;
  for (int i = 0; i < n; ++i) {
    if (e[i] < 0) return false;
    p *= e[i];
    if (p > 0x7fffffffLL) return false;
  }
  *out = p;
  return true;
}

// A blob as `channels` runs of `size` contiguous floats, `stride` apart. The channel
// is the outermost axis: C of [C,H,W] and [C,D,H,W], H of [H,W] (ONNX's [N,C,L]),
// W of [W] (ONNX's [N,C]); per-channel layers (BatchNorm, Scale, PReLU, ...) use this.
struct ChannelView {
  int channels = 0;
  size_t size = 0;
  size_t stride = 0;
};

inline ChannelView channel_view(const Shape& s, size_t cstep) {
  ChannelView v;
  switch (s.dims) {
    case 1: v.channels = s.w, v.size = 1, v.stride = 1; break;
    case 2: v.channels = s.h, v.size = static_cast<size_t>(s.w), v.stride = static_cast<size_t>(s.w); break;
    default: v.channels = s.c, v.size = plane_size(s), v.stride = cstep; break;
  }
  return v;
}
inline ChannelView channel_view(const Mat& m) { return channel_view(m.shape(), m.cstep); }

// fn(src, dst, n, channel) for every channel of `in` and the same channel of `out`
// (same shape, any channel strides; src may equal dst), one channel per iteration.
template <class Fn>
inline void for_each_channel(const Mat& in, Mat& out, int num_threads, Fn fn) {
  const ChannelView iv = channel_view(in), ov = channel_view(out);
  parallel_for(num_threads, iv.channels,
               [&](int q) { fn(in.data + iv.stride * q, out.data + ov.stride * q, iv.size, q); });
}

// Taps k in [begin, end) of a kernel of `k` taps placed at position `start` with
// dilation `dil` whose positions start + k * dil fall inside [0, n).
inline void valid_taps(int start, int n, int k, int dil, int* begin, int* end) {
  const long long s = start, d = dil;
  const long long b = s < 0 ? (-s + d - 1) / d : 0;
  const long long room = n - s;
  const long long e = room <= 0 ? 0 : std::min<long long>(k, (room + d - 1) / d);
  *end = static_cast<int>(e);
  *begin = static_cast<int>(std::min(b, e));
}

// A per-channel parameter tensor of `count` values must match the input's channel
// count, or be one shared value.
inline Status check_channel_count(const Shape& input, int count, const char* what) {
  const int channels = channel_view(input, 0).channels;
  if (count == 1 || channels == count) return Status::Ok();
  return corrupt("input has " + std::to_string(channels) + " channels, " + what + " has " + std::to_string(count) +
                 " values (expected the channel count or 1)");
}

}  // namespace layer_util

// Flatten, Reshape, Squeeze, Unsqueeze: only the shape changes; values keep their
// logical (outermost-first) order, so forward is one strided copy, or none where the
// output is the input's memory (Layer::reshapes_only).
class LayoutOnlyLayer : public Layer {
 public:
  bool reshapes_only() const final { return true; }
  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const final {
    if (outputs[0].data != inputs[0].data) layer_util::copy_logical(inputs[0], outputs[0], ctx.num_threads);
    return Status::Ok();
  }
};

}  // namespace kestrel
