// The int8 residual add over whole maps (kernels::i8_add_reference's values): BinaryOp
// Add and Eltwise Sum of two maps of one shape at Precision::kInt8, re-targeted to int8
// maps (Layer::set_int8_maps).
#pragma once
#include <vector>

#include "kestrel/mat.h"
#include "layers/activation.h"

namespace kestrel::layer_util {

// The operands as set_int8_maps gave them: 1 / an int8 input's scale (0: an fp32 map),
// the int8 output's scale (0: fp32).
struct I8AddMaps {
  float in_dequant[2] = {0.f, 0.f};
  float out_scale = 0.f;
  bool reference = false;  // the reference kernel set's add

  // Takes set_int8_maps' scales (two inputs; 0: an fp32 map); true if some map is int8.
  bool set(const std::vector<float>& in_scales, float out);
  // The kernel a re-targeted layer runs: the map kernel's name, or nullptr (the oracle).
  const char* kernel_name() const;
};

// out = act(a + b), planes cut into kElementwiseChunk pieces, one per iteration (so the
// result does not depend on num_threads). act: one of kernels::i8_output_activation's.
void run_i8_add(const I8AddMaps& maps, const Mat& a, const Mat& b, Mat& out, const ActivationSpec& act,
                int num_threads);

}  // namespace kestrel::layer_util
