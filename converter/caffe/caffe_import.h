// Caffe front end: deploy prototxt (text) + caffemodel (binary) -> Graph, layer for
// layer and unoptimized (BatchNorm, Scale and ReLU stay separate nodes; optimize()
// folds them).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kestrel::convert {

struct CaffeImportOptions {
  // Overrides of declared input shapes: name -> NCHW as on the command line (the
  // batch, which must be 1, is dropped).
  std::vector<std::pair<std::string, std::vector<int>>> input_shapes;
};

// Errors name the file, the layer, its type and the parameter at fault; unknown
// prototxt fields are ignored, unknown layer types are errors.
Status import_caffe(const std::string& prototxt_path, const std::string& caffemodel_path,
                    const CaffeImportOptions& options, Graph* graph);
// The same from memory (tests, fuzzing): the prototxt's text and the caffemodel's
// bytes (size 0: no weights); messages call them <prototxt> and <caffemodel>.
Status import_caffe_bytes(const std::string& prototxt_text, const void* caffemodel, size_t caffemodel_size,
                          const CaffeImportOptions& options, Graph* graph);

}  // namespace kestrel::convert
