// Networks with seeded random weights, built layer for layer like the Caffe deploy
// definitions (BatchNorm and Scale already folded into the convolution's bias, ReLU
// fused), for tests, benchmarks and the demo. Same seed, same bytes.
#pragma once
#include <cstdint>

#include "kestrel/builder.h"

namespace kestrel {

struct ZooOptions {
  uint32_t seed = 1;
  // Square input side; 0 keeps the network's own (224 for MobileNet v1, 300 for SSD).
  int input_size = 0;
};

// MobileNet v1 (mobilenet_deploy.prototxt): input "data" [3,224,224], output "prob" [1000,1,1].
ModelBuilder mobilenet_v1(const ZooOptions& options = {});
// MobileNet-SSD (mobilenet_ssd_deploy.prototxt, 21 VOC classes): input "data" [3,300,300],
// output "detection_out" [N,6] rows (label, score, xmin, ymin, xmax, ymax).
ModelBuilder mobilenet_ssd(const ZooOptions& options = {});

}  // namespace kestrel
