// The built-in layer types by registry name.
#include "core/layer.h"
#include "layers/layers.h"

namespace kestrel {

namespace {

struct Entry {
  const char* type;
  LayerCreator create;
};

constexpr Entry kLayers[] = {
    {"Convolution", create_convolution_layer},
    {"Pooling", create_pooling_layer},
    {"InnerProduct", create_innerproduct_layer},
    {"Softmax", create_softmax_layer},
    {"Concat", create_concat_layer},
    {"Flatten", create_flatten_layer},
    {"Reshape", create_reshape_layer},
    {"Permute", create_permute_layer},
    {"PriorBox", create_priorbox_layer},
    {"DetectionOutput", create_detectionoutput_layer},
    {"Activation", create_activation_layer},
    {"Dropout", create_dropout_layer},
};

}  // namespace

LayerCreator find_layer_creator(const std::string& type) {
  for (const Entry& e : kLayers) {
    if (type == e.type) return e.create;
  }
  return nullptr;
}

std::vector<std::string> registered_layer_types() {
  std::vector<std::string> names;
  for (const Entry& e : kLayers) names.emplace_back(e.type);
  return names;
}

}  // namespace kestrel
