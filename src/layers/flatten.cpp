// Flatten: any blob to 1-D [c*d*h*w], values in logical order.
#include "layers/layers.h"

namespace kestrel {
namespace {

class Flatten final : public LayoutOnlyLayer {
 public:
  // FlattenParam has no fields, so a missing table is as good as an empty one.
  Status load(const LoadContext&) override { return Status::Ok(); }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Flatten", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const size_t total = inputs[0].total();
    if (total > 0x7fffffffu) return layer_util::corrupt("flattened size " + std::to_string(total) + " is too large");
    outputs[0] = Shape::make1(static_cast<int>(total));
    return Status::Ok();
  }

};

}  // namespace

std::unique_ptr<Layer> create_flatten_layer() { return std::make_unique<Flatten>(); }

}  // namespace kestrel
