#include "kestrel/model_zoo.h"

#include <cmath>
#include <random>
#include <string>

namespace kestrel {

namespace {

struct Conv {
  std::string name;
  std::string bottom;
  int in_channels;
  int out_channels;
  int kernel;
  int stride;
  int pad;
  int group;
  bool relu;
};

class ZooWriter {
 public:
  ZooWriter(ModelBuilder& b, uint32_t seed) : b_(b), rng_(seed) {}

  // A convolution with bias (the folded BatchNorm/Scale) and He-initialized weights so
  // that activations keep their scale through deep stacks.
  void conv(const Conv& c) {
    const int fan_in = c.in_channels / c.group * c.kernel * c.kernel;
    std::normal_distribution<float> weight(0.f, std::sqrt(2.f / static_cast<float>(fan_in)));
    std::uniform_real_distribution<float> bias(-0.1f, 0.1f);
    std::vector<float> w(static_cast<size_t>(c.out_channels) * fan_in), bv(c.out_channels);
    for (float& v : w) v = weight(rng_);
    for (float& v : bv) v = bias(rng_);
    const uint32_t wi = b_.add_weight(c.name + "/weight", {c.out_channels, c.in_channels / c.group, c.kernel, c.kernel}, w);
    const uint32_t bi = b_.add_weight(c.name + "/bias", {c.out_channels}, bv);
    fb::ConvolutionParamT p;
    p.num_output = c.out_channels;
    p.kernel_h = p.kernel_w = c.kernel;
    p.stride_h = p.stride_w = c.stride;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = c.pad;
    p.group = c.group;
    p.bias_term = true;
    p.activation = std::make_unique<fb::ActivationT>();
    p.activation->type = c.relu ? fb::ActivationType::ReLU : fb::ActivationType::None;
    fb::LayerParamsUnion u;
    u.Set(std::move(p));
    b_.add_layer("Convolution", c.name, {c.bottom}, {c.name}, std::move(u), {wi, bi});
  }

  // Depthwise 3x3 + pointwise 1x1, the MobileNet block.
  void separable(const std::string& dw, const std::string& pw, const std::string& bottom, int in, int out,
                 int stride) {
    conv({dw, bottom, in, in, 3, stride, 1, in, true});
    conv({pw, dw, in, out, 1, 1, 0, 1, true});
  }

  template <typename T>
  void layer(const std::string& type, const std::string& name, const std::vector<std::string>& bottoms, T param) {
    fb::LayerParamsUnion u;
    u.Set(std::move(param));
    b_.add_layer(type, name, bottoms, {name}, std::move(u));
  }

 private:
  ModelBuilder& b_;
  std::mt19937 rng_;
};

struct MobilenetBlock {
  const char* dw;
  const char* pw;
  int out;
  int stride;
};

// Chains separable blocks after `*prev` (with `*channels` channels), updating both.
template <size_t N>
void add_blocks(ZooWriter& z, const MobilenetBlock (&blocks)[N], std::string* prev, int* channels) {
  for (const MobilenetBlock& blk : blocks) {
    z.separable(blk.dw, blk.pw, *prev, *channels, blk.out, blk.stride);
    *prev = blk.pw;
    *channels = blk.out;
  }
}

}  // namespace

ModelBuilder mobilenet_v1(const ZooOptions& o) {
  ModelBuilder b;
  ZooWriter z(b, o.seed);
  const int size = o.input_size > 0 ? o.input_size : 224;
  b.add_input("data", {3, size, size});
  z.conv({"conv1", "data", 3, 32, 3, 2, 1, 1, true});
  static const MobilenetBlock blocks[] = {
      {"conv2_1/dw", "conv2_1/sep", 64, 1},  {"conv2_2/dw", "conv2_2/sep", 128, 2},
      {"conv3_1/dw", "conv3_1/sep", 128, 1}, {"conv3_2/dw", "conv3_2/sep", 256, 2},
      {"conv4_1/dw", "conv4_1/sep", 256, 1}, {"conv4_2/dw", "conv4_2/sep", 512, 2},
      {"conv5_1/dw", "conv5_1/sep", 512, 1}, {"conv5_2/dw", "conv5_2/sep", 512, 1},
      {"conv5_3/dw", "conv5_3/sep", 512, 1}, {"conv5_4/dw", "conv5_4/sep", 512, 1},
      {"conv5_5/dw", "conv5_5/sep", 512, 1}, {"conv5_6/dw", "conv5_6/sep", 1024, 2},
      {"conv6/dw", "conv6/sep", 1024, 1},
  };
  std::string prev = "conv1";
  int channels = 32;
  add_blocks(z, blocks, &prev, &channels);
  fb::PoolingParamT pool;
  pool.pool = fb::PoolType::Average;
  pool.global = true;
  z.layer("Pooling", "pool6", {prev}, std::move(pool));
  z.conv({"fc7", "pool6", 1024, 1000, 1, 1, 0, 1, false});
  fb::SoftmaxParamT sm;
  sm.axis = 0;
  z.layer("Softmax", "prob", {"fc7"}, std::move(sm));
  b.add_output("prob");
  b.set_metadata("task", "classification");
  b.set_metadata("mean", "103.94,116.78,123.68");
  b.set_metadata("norm", "0.017,0.017,0.017");
  b.set_metadata("source", "kestrel model zoo: MobileNet v1, seeded random weights");
  return b;
}

namespace {

struct SsdHead {
  const char* source;
  float min_size;
  float max_size;  // 0: none
  bool two_ratios;  // aspect ratios {2, 3} instead of {2}
};

void ssd_head(ZooWriter& z, const SsdHead& h, int in_channels, int num_classes) {
  const int priors = h.two_ratios ? 6 : 3;
  const std::string src = h.source;
  for (const char* kind : {"loc", "conf"}) {
    const std::string base = src + "_mbox_" + kind;
    const int out = std::string(kind) == "loc" ? priors * 4 : priors * num_classes;
    z.conv({base, src, in_channels, out, 1, 1, 0, 1, false});
    fb::PermuteParamT perm;
    perm.order = {1, 2, 0};  // Caffe's (0,2,3,1) without the batch: CHW -> HWC
    z.layer("Permute", base + "_perm", {base}, std::move(perm));
    z.layer("Flatten", base + "_flat", {base + "_perm"}, fb::FlattenParamT{});
  }
  fb::PriorBoxParamT pb;
  pb.min_sizes = {h.min_size};
  if (h.max_size > 0) pb.max_sizes = {h.max_size};
  pb.aspect_ratios = h.two_ratios ? std::vector<float>{2.f, 3.f} : std::vector<float>{2.f};
  pb.flip = true;
  pb.clip = false;
  pb.variances = {0.1f, 0.1f, 0.2f, 0.2f};
  pb.offset = 0.5f;
  z.layer("PriorBox", src + "_mbox_priorbox", {src, "data"}, std::move(pb));
}

}  // namespace

ModelBuilder mobilenet_ssd(const ZooOptions& o) {
  ModelBuilder b;
  ZooWriter z(b, o.seed);
  const int size = o.input_size > 0 ? o.input_size : 300;
  const int num_classes = 21;
  b.add_input("data", {3, size, size});
  z.conv({"conv0", "data", 3, 32, 3, 2, 1, 1, true});
  static const MobilenetBlock blocks[] = {
      {"conv1/dw", "conv1", 64, 1},    {"conv2/dw", "conv2", 128, 2},   {"conv3/dw", "conv3", 128, 1},
      {"conv4/dw", "conv4", 256, 2},   {"conv5/dw", "conv5", 256, 1},   {"conv6/dw", "conv6", 512, 2},
      {"conv7/dw", "conv7", 512, 1},   {"conv8/dw", "conv8", 512, 1},   {"conv9/dw", "conv9", 512, 1},
      {"conv10/dw", "conv10", 512, 1}, {"conv11/dw", "conv11", 512, 1}, {"conv12/dw", "conv12", 1024, 2},
      {"conv13/dw", "conv13", 1024, 1},
  };
  std::string prev = "conv0";
  int channels = 32;
  add_blocks(z, blocks, &prev, &channels);
  // Extra feature layers: 1x1 squeeze then 3x3 stride 2.
  struct Extra {
    const char* squeeze;
    const char* expand;
    int mid;
    int out;
  };
  static const Extra extras[] = {{"conv14_1", "conv14_2", 256, 512},
                                 {"conv15_1", "conv15_2", 128, 256},
                                 {"conv16_1", "conv16_2", 128, 256},
                                 {"conv17_1", "conv17_2", 64, 128}};
  for (const Extra& e : extras) {
    z.conv({e.squeeze, prev, channels, e.mid, 1, 1, 0, 1, true});
    z.conv({e.expand, e.squeeze, e.mid, e.out, 3, 2, 1, 1, true});
    prev = e.expand;
    channels = e.out;
  }
  static const SsdHead heads[] = {{"conv11", 60.f, 0.f, false},     {"conv13", 105.f, 150.f, true},
                                  {"conv14_2", 150.f, 195.f, true}, {"conv15_2", 195.f, 240.f, true},
                                  {"conv16_2", 240.f, 285.f, true}, {"conv17_2", 285.f, 300.f, true}};
  static const int head_channels[] = {512, 1024, 512, 256, 256, 128};
  for (size_t i = 0; i < 6; ++i) ssd_head(z, heads[i], head_channels[i], num_classes);

  auto concat = [&](const std::string& name, const std::string& suffix, int axis) {
    std::vector<std::string> parts;
    for (const SsdHead& h : heads) parts.push_back(std::string(h.source) + suffix);
    fb::ConcatParamT cp;
    cp.axis = axis;
    fb::LayerParamsUnion u;
    u.Set(std::move(cp));
    b.add_layer("Concat", name, parts, {name}, std::move(u));
  };
  concat("mbox_loc", "_mbox_loc_flat", 0);
  concat("mbox_conf", "_mbox_conf_flat", 0);
  concat("mbox_priorbox", "_mbox_priorbox", 1);  // Caffe axis 2 of [1,2,N]
  fb::ReshapeParamT rs;
  rs.shape = {-1, num_classes};
  z.layer("Reshape", "mbox_conf_reshape", {"mbox_conf"}, std::move(rs));
  fb::SoftmaxParamT sm;
  sm.axis = 1;
  z.layer("Softmax", "mbox_conf_softmax", {"mbox_conf_reshape"}, std::move(sm));
  z.layer("Flatten", "mbox_conf_flatten", {"mbox_conf_softmax"}, fb::FlattenParamT{});
  fb::DetectionOutputParamT det;
  det.num_classes = num_classes;
  det.share_location = true;
  det.background_label_id = 0;
  det.nms_threshold = 0.45f;
  det.top_k = 100;
  det.keep_top_k = 100;
  det.confidence_threshold = 0.25f;
  det.code_type = fb::CodeType::CenterSize;
  fb::LayerParamsUnion u;
  u.Set(std::move(det));
  b.add_layer("DetectionOutput", "detection_out", {"mbox_loc", "mbox_conf_flatten", "mbox_priorbox"},
              {"detection_out"}, std::move(u));
  b.add_output("detection_out");
  b.set_metadata("task", "detection");
  b.set_metadata("mean", "127.5,127.5,127.5");
  b.set_metadata("norm", "0.007843,0.007843,0.007843");
  b.set_metadata("source", "kestrel model zoo: MobileNet-SSD, seeded random weights");
  return b;
}

}  // namespace kestrel
