#include "kernels/f16_activation_table.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/half.h"
#include "kernels/f16_reference.h"

namespace kestrel::kernels {

bool f16_activation_uses_table(fb::ActivationType t) {
  using A = fb::ActivationType;
  return t == A::Sigmoid || t == A::TanH || t == A::HardSigmoid || t == A::HardSwish || t == A::SiLU || t == A::ELU ||
         t == A::GELU;
}

void build_f16_activation_table(const ActivationSpec& a, uint16_t* table) {
  const ActivationSpec h = f16_activation(a);  // what conv_reference_f16 applies
  for (size_t bits = 0; bits < kF16ActivationTableSize; ++bits) {
    table[bits] = float_to_half(activate(half_to_float(static_cast<uint16_t>(bits)), h));
  }
}

namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The parameters that change the table: two Sigmoids share one whatever alpha says.
using Key = std::tuple<int, uint32_t, uint32_t>;
Key key_of(const ActivationSpec& a) {
  using A = fb::ActivationType;
  const ActivationSpec h = f16_activation(a);
  const bool alpha = a.type == A::HardSigmoid || a.type == A::HardSwish || a.type == A::ELU;
  const bool beta = a.type == A::HardSigmoid;
  return {static_cast<int>(a.type), alpha ? bits_of(h.alpha) : 0u, beta ? bits_of(h.beta) : 0u};
}

}  // namespace

const uint16_t* f16_activation_table(const ActivationSpec& a) {
  static std::mutex mu;
  // Never destroyed: a thread may still run a layer while static destructors run.
  static auto* tables = new std::map<Key, std::unique_ptr<uint16_t[]>>;
  const Key key = key_of(a);
  const std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<uint16_t[]>& t = (*tables)[key];
  if (!t) {
    t.reset(new uint16_t[kF16ActivationTableSize]);
    build_f16_activation_table(a, t.get());
  }
  return t.get();
}

}  // namespace kestrel::kernels
