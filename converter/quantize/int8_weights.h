// kestrel-quantize's last step: the weights of the layers that run int8 stored as int8
// (kestrel.fbs: Weight dtype I8 with one scale a row), a quarter of their fp32 bytes, as
// ncnn2int8 writes its int8 models.
#pragma once
#include <string>
#include <vector>

#include "kestrel/status.h"

namespace kestrel::quantize {

// `quantized` (calibrate()'s output, its keep_fp32 final) with the kernel weights of
// every layer that computes in int8 (int8_layers, and no more input taps per output than
// kMaxProducts) rewritten as I8: quantize_rows_i8's values and scales over shape[0]
// rows, exactly what the loader would quantize them to, so int8 inference gives the same
// outputs, bit for bit. A layer at fp32 reads them back as q / scale. Left as they are:
// weights that several layers share, and rows whose scale would not be finite. The
// converted layers' names in *layers. Errors, and no output: the model does not load.
Status store_int8_weights(const std::string& quantized, std::string* out, std::vector<std::string>* layers);

}  // namespace kestrel::quantize
