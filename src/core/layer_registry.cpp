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
    {"Deconvolution", create_deconvolution_layer},
    {"BatchNorm", create_batchnorm_layer},
    {"Scale", create_scale_layer},
    {"PReLU", create_prelu_layer},
    {"Eltwise", create_eltwise_layer},
    {"BinaryOp", create_binaryop_layer},
    {"LRN", create_lrn_layer},
    {"Normalize", create_normalize_layer},
    {"Slice", create_slice_layer},
    {"Split", create_split_layer},
    {"Crop", create_crop_layer},
    {"Padding", create_padding_layer},
    {"Squeeze", create_squeeze_layer},
    {"Unsqueeze", create_unsqueeze_layer},
    {"Interp", create_interp_layer},
    {"ShuffleChannel", create_shufflechannel_layer},
    {"Reduce", create_reduce_layer},
    {"Gemm", create_gemm_layer},
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
