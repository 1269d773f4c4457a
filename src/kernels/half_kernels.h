// fp32 <-> fp16 conversions over arrays: the Net rounds fp16 layers' outputs and inputs
// with round(); maps stored as halves will convert with to_half / to_float. One
// registry, read by the Net, the tests and the benchmarks. Round to nearest even;
// infinities and NaNs stay (a NaN's payload may not).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/isa.h"

namespace kestrel::kernels {

struct HalfKernel {
  const char* name;  // "f16_convert_avx512"
  Isa isa;
  void (*to_half)(const float* src, uint16_t* dst, size_t n);
  void (*to_float)(const uint16_t* src, float* dst, size_t n);
  // dst[i] = the half nearest src[i], as a float; src may equal dst.
  void (*round)(const float* src, float* dst, size_t n);
  // Two blocks of 4 floats <-> one block of 8 halves (NEON's fp32 maps and its fp16
  // maps): pixel i's 8 halves are lo[4i..4i+4) then hi[4i..4i+4). nullptr where the
  // kernel has none (the caller then goes through scratch).
  void (*to_half_pack8)(const float* lo, const float* hi, uint16_t* dst, size_t pixels);
  void (*to_float_pack4)(const uint16_t* src, float* lo, float* hi, size_t pixels);
};

const std::vector<const HalfKernel*>& half_kernels();
// Every half kernel converts every value; nullptr under Isa::kRef.
const HalfKernel* select_half_kernel(Isa isa);
// The reference (core/half.h, value by value), behind the same signatures.
extern const HalfKernel kHalfReference;
// select_half_kernel(active_isa()), else kHalfReference.
const HalfKernel& active_half_kernel();

namespace detail {
// Defined once per architecture (registry_arm.cpp, registry_x86.cpp, registry_generic.cpp).
std::vector<const HalfKernel*> arch_half_kernels();
}  // namespace detail

}  // namespace kestrel::kernels
