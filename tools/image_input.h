// The image pre-processing of a model without task metadata, as its metadata says:
// stretched (bilinear) to the input size, in its channel order, then (x - mean) * norm.
// kestrel-run's default and kestrel-quantize's calibration read it the same way.
#pragma once
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "kestrel/image.h"
#include "kestrel/net.h"

namespace kestrel_tools {

// A finite float, the whole of `v`.
inline bool parse_float(const std::string& v, float* out) {
  char* end = nullptr;
  const float f = std::strtof(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(f)) return false;
  *out = f;
  return true;
}

// "a,b,c" (one value or more) into *out; false, *out untouched, for anything else.
inline bool parse_floats(const std::string& v, std::vector<float>* out) {
  std::vector<float> r;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    float f;
    if (!parse_float(item, &f)) return false;
    r.push_back(f);
  }
  if (r.empty() || (!v.empty() && v.back() == ',')) return false;
  *out = r;
  return true;
}

struct ImageInput {
  int width = 0, height = 0, channels = 0;
  std::string order;  // rgb, bgr or gray
  std::vector<float> mean, norm;  // one value per channel
};

// What the command line gives over the metadata: an empty order or a has_* false takes
// the metadata's (channel_order, mean, norm), else gray for 1 channel and bgr (Caffe's)
// for 3, mean 0, norm 1.
struct ImageInputFlags {
  std::string order;
  bool has_mean = false, has_norm = false;
  std::vector<float> mean, norm;
};

// The pre-processing of `net` for an input of width x height x channels (1 or 3), or an
// error text naming the metadata key or flag that is wrong ("" when it went well).
inline std::string image_input(const kestrel::Net& net, int width, int height, int channels,
                               const ImageInputFlags& flags, ImageInput* out) {
  ImageInput r;
  r.width = width;
  r.height = height;
  r.channels = channels;
  r.order = !flags.order.empty() ? flags.order : net.metadata("channel_order");
  if (r.order.empty()) r.order = channels == 1 ? "gray" : "bgr";
  if (r.order != "rgb" && r.order != "bgr" && r.order != "gray") {
    return "model metadata channel_order='" + r.order + "' is not rgb, bgr or gray";
  }
  if ((r.order == "gray") != (channels == 1)) {
    return "the input has " + std::to_string(channels) + " channels; order " + r.order + " gives " +
           (r.order == "gray" ? "1" : "3");
  }
  const auto values = [&](const char* key, bool given, const std::vector<float>& flag, float none,
                          std::vector<float>* v) -> std::string {
    *v = flag;
    const std::string meta = net.metadata(key);
    if (!given && !meta.empty() && !parse_floats(meta, v)) {
      return std::string("model metadata ") + key + "='" + meta + "' is not a list of numbers";
    }
    if (v->empty()) v->assign(1, none);
    if (v->size() == 1) v->assign(channels, (*v)[0]);
    if (v->size() != static_cast<size_t>(channels)) {
      return std::string(key) + " has " + std::to_string(v->size()) + " values; the input has " +
             std::to_string(channels) + " channels";
    }
    return "";
  };
  std::string why = values("mean", flags.has_mean, flags.mean, 0.f, &r.mean);
  if (why.empty()) why = values("norm", flags.has_norm, flags.norm, 1.f, &r.norm);
  if (why.empty()) *out = r;
  return why;
}

// `img` through `p` into *in. A grayscale image for a colour input is an error (the
// caller names the file).
inline kestrel::Status make_image_input(const ImageInput& p, const kestrel::Image& img, kestrel::Mat* in) {
  if (img.channels == 1 && p.order != "gray") {
    return kestrel::Status(kestrel::ErrorCode::kInvalidArgument,
                           "a grayscale image, but the model takes " + p.order +
                               " colour input; convert the image to colour, or pass --order gray to a 1-channel model");
  }
  const kestrel::PixelType dst = p.order == "rgb"   ? kestrel::PixelType::kRGB
                                 : p.order == "bgr" ? kestrel::PixelType::kBGR
                                                    : kestrel::PixelType::kGray;
  kestrel::Status s = kestrel::from_image_resize(img, dst, p.width, p.height, in);
  if (!s.ok()) return s;
  kestrel::substract_mean_normalize(*in, p.mean.data(), p.norm.data());
  return kestrel::Status::Ok();
}

}  // namespace kestrel_tools
