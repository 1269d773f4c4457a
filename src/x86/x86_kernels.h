// The x86 kernels (AVX2+FMA and AVX-512F, each ISA in its own translation units),
// listed by registry_x86.cpp.
#pragma once
#include "kernels/conv_kernels.h"

namespace kestrel::kernels::x86 {

}  // namespace kestrel::kernels::x86
