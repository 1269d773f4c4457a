// Dropout: the identity at inference; in place it does nothing at all.
#include "layers/layers.h"

namespace kestrel {
namespace {

class Dropout final : public Layer {
 public:
  // DropoutParam has no fields, so a missing table is as good as an empty one.
  Status load(const LoadContext&) override { return Status::Ok(); }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    return layer_util::prepare_same_shape("Dropout", inputs, outputs);
  }

  Status forward(const std::vector<Mat>& inputs, std::vector<Mat>& outputs,
                 const ForwardContext& ctx) const override {
    if (outputs[0].data == inputs[0].data) return Status::Ok();
    layer_util::copy_logical(inputs[0], outputs[0], ctx.num_threads);
    return Status::Ok();
  }

  bool supports_inplace() const override { return true; }
};

}  // namespace

std::unique_ptr<Layer> create_dropout_layer() { return std::make_unique<Dropout>(); }

}  // namespace kestrel
