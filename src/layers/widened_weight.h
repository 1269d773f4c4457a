// A layer's kernel weight that the model stores as F16 or I8 (Layer::widens_weight):
// the layer widens it to floats only while it needs them, to pack them into a kernel's
// layout; its fp32 reference loop reads the halves in place (conv_reference_halves),
// only the fp16 and bf16 oracles keep floats. An I8 weight's int8 values and scales go
// to the layer's int8 route as they are (no round trip through floats), its floats
// (q / scale) to an fp32 route. Weights given as floats pass through untouched.
#pragma once
#include <cstdint>
#include <vector>

#include "core/half.h"
#include "core/layer.h"

namespace kestrel {

class WidenedWeight {
 public:
  // Takes the view's floats, or widens its halves. Throws std::bad_alloc.
  const float* bind(const WeightView& w) {
    halves_ = w.data ? nullptr : w.half_data;
    view_ = w;
    i8_ = !w.data && w.i8_data;
    count_ = w.count;
    own_.clear();
    own_.shrink_to_fit();
    floats_ = w.data;
    return floats();
  }
  // The floats, widened again if drop() freed them. Throws std::bad_alloc.
  const float* floats() {
    if (!compact() || !own_.empty()) return compact() ? own_.data() : floats_;
    own_.resize(count_);
    widen_weight(view_, own_.data());
    return own_.data();
  }
  // Frees widened floats once a packing holds the weights.
  void drop() { std::vector<float>().swap(own_); }
  // True where the weight came as halves: the layer reads the model's copy only through
  // halves() (the reference loop on halves), never as floats.
  bool from_halves() const { return halves_ != nullptr; }
  const uint16_t* halves() const { return halves_; }
  // An I8 weight: its rows' int8 values and scales (WeightView), else nullptr.
  const int8_t* int8() const { return i8_ ? view_.i8_data : nullptr; }
  const float* int8_scales() const { return i8_ ? view_.i8_scales : nullptr; }
  // True where the floats are made here (halves or int8 values), not the model's.
  bool compact() const { return halves_ || i8_; }
  size_t held_bytes() const { return own_.size() * sizeof(float); }

 private:
  const uint16_t* halves_ = nullptr;
  const float* floats_ = nullptr;
  WeightView view_;
  bool i8_ = false;
  size_t count_ = 0;
  std::vector<float> own_;
};

}  // namespace kestrel
