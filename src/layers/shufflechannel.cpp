// ShuffleChannel (ShuffleNet): output channel c*group+g <- input channel g*(C/group)+c,
// i.e. the channels seen as [group][C/group] are transposed.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class ShuffleChannel final : public Layer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ShuffleChannelParam* p = ctx.layer->params_as_ShuffleChannelParam();
    if (!p) return corrupt("missing ShuffleChannelParam");
    group_ = p->group();
    reverse_ = p->reverse();
    return layer_util::ParamCheck().positive("group", group_).status();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::prepare_same_shape("ShuffleChannel", inputs, outputs);
    if (!s.ok()) return s;
    const int channels = layer_util::channel_view(inputs[0], inputs[0].cstep()).channels;
    if (channels % group_ != 0) {
      return corrupt(std::to_string(channels) + " channels do not divide into group = " + std::to_string(group_));
    }
    // Undoing the [group][C/group] transpose is the transpose of [C/group][group].
    rows_ = reverse_ ? channels / group_ : group_;
    return Status::Ok();
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    // The channel is the outermost axis whatever the dims (layers.h channel_view).
    const layer_util::ChannelView iv = layer_util::channel_view(inputs[0]);
    const layer_util::ChannelView ov = layer_util::channel_view(outputs[0]);
    const int cols = iv.channels / rows_;
#pragma omp parallel for num_threads(ctx.num_threads)
    for (int o = 0; o < iv.channels; ++o) {
      const size_t src = static_cast<size_t>((o % rows_) * cols + o / rows_);
      std::memcpy(outputs[0].data + ov.stride * o, inputs[0].data + iv.stride * src, iv.size * sizeof(float));
    }
    return Status::Ok();
  }

 private:
  int group_ = 1;
  bool reverse_ = false;
  int rows_ = 1;  // rows of the [rows][C/rows] channel matrix that is transposed
};

}  // namespace

std::unique_ptr<Layer> create_shufflechannel_layer() { return std::make_unique<ShuffleChannel>(); }

}  // namespace kestrel
