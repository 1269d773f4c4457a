// Tensors in the source model's own layout and names (kestrel-run --input/--output on
// a model converted from TF.js): the converter records, per input and output blob,
//   tf_input.BLOB  = "TFNAME:0 1,192,192,3 nhwc int32"
//   tf_output.BLOB = "TFNAME:0 1,48,48,17 nhwc"
// ("nhwc": the blob is [C,H,W], the source tensor [.., H, W, C]; otherwise the same
// values in the same order), and folded_preprocess = BLOB when the source's own
// pre-processing of that input became the mean/norm metadata.
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace kt {

struct SourceTensor {
  std::string name;       // the source's tensor name
  std::vector<int> dims;  // the source's shape
  bool nhwc = false;
};

// False when `meta` is empty or malformed.
inline bool parse_source_tensor(const std::string& meta, SourceTensor* t) {
  std::istringstream in(meta);
  std::string dims, layout;
  if (!(in >> t->name >> dims)) return false;
  in >> layout;
  t->nhwc = layout == "nhwc";
  t->dims.clear();
  std::istringstream d(dims);
  for (std::string item; std::getline(d, item, ',');) {
    try {
      t->dims.push_back(std::stoi(item));
    } catch (...) {
      return false;
    }
    if (t->dims.back() < 0) return false;
  }
  return !t->dims.empty() && (!t->nhwc || t->dims.size() >= 3);
}

// Values in the source's order -> Kestrel's ([.., H, W, C] -> [C, H, W]), or back.
inline std::vector<float> reorder(const SourceTensor& t, const std::vector<float>& v, bool to_kestrel) {
  if (!t.nhwc) return v;
  const size_t r = t.dims.size();
  const size_t H = static_cast<size_t>(t.dims[r - 3]), W = static_cast<size_t>(t.dims[r - 2]),
               C = static_cast<size_t>(t.dims[r - 1]);
  std::vector<float> out(v.size());
  for (size_t c = 0; c < C; ++c) {
    for (size_t p = 0; p < H * W && c * H * W + p < v.size(); ++p) {
      float& kestrel = to_kestrel ? out[c * H * W + p] : out[p * C + c];
      kestrel = to_kestrel ? v[p * C + c] : v[c * H * W + p];
    }
  }
  return out;
}

}  // namespace kt
