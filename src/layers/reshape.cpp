// Reshape: same values in logical order, new shape of 1 to 4 dims.
#include "layers/layers.h"

namespace kestrel {
namespace {

using layer_util::corrupt;

class Reshape final : public LayoutOnlyLayer {
 public:
  Status load(const LoadContext& ctx) override {
    const fb::ReshapeParam* p = ctx.layer->params_as_ReshapeParam();
    if (!p || !p->shape()) return corrupt("missing ReshapeParam.shape");
    target_.assign(p->shape()->begin(), p->shape()->end());
    if (target_.empty() || target_.size() > 4) {
      return corrupt("shape must have 1 to 4 dims, got " + std::to_string(target_.size()));
    }
    int inferred = 0;
    for (int v : target_) {
      if (v < -1) return corrupt("shape entry " + std::to_string(v) + " is invalid (use > 0, 0 = keep, -1 = infer)");
      inferred += v == -1 ? 1 : 0;
    }
    if (inferred > 1) return corrupt("shape has more than one -1 entry");
    return Status::Ok();
  }

  Status prepare(const std::vector<Shape>& inputs, std::vector<Shape>& outputs, const PrepareContext&) override {
    Status s = layer_util::check_io("Reshape", inputs, 1, 1, outputs);
    if (!s.ok()) return s;
    const std::vector<int> in = layer_util::extents_of(inputs[0]);
    const long long total = static_cast<long long>(inputs[0].total());
    const int n = static_cast<int>(target_.size());
    int ext[4] = {1, 1, 1, 1};
    int infer_at = -1;
    long long known = 1;
    for (int i = 0; i < n; ++i) {
      int v = target_[i];
      if (v == 0) {
        if (i >= static_cast<int>(in.size())) {
          return corrupt("shape entry " + std::to_string(i) + " is 0 (keep) but the input has only " +
                         std::to_string(in.size()) + " dims");
        }
        v = in[i];
      }
      if (v == -1) {
        infer_at = i;
        continue;
      }
      ext[i] = v;
      if (v > 0 && known > total / v) {  // checked before multiplying, so it cannot overflow
        return corrupt("target shape has more values than the input (" + std::to_string(total) + ")");
      }
      known *= v;
    }
    if (infer_at >= 0) {
      if (known <= 0 || known > total || total % known != 0) {
        return corrupt("cannot infer the -1 dimension: " + std::to_string(total) +
                       " values are not a multiple of " + std::to_string(known));
      }
      ext[infer_at] = static_cast<int>(total / known);
      known *= ext[infer_at];
    }
    if (known != total) {
      return corrupt("target shape has " + std::to_string(known) + " values, the input has " + std::to_string(total));
    }
    outputs[0] = layer_util::shape_from_extents(ext, n);
    return Status::Ok();
  }


 private:
  std::vector<int> target_;
};

}  // namespace

std::unique_ptr<Layer> create_reshape_layer() { return std::make_unique<Reshape>(); }

}  // namespace kestrel
