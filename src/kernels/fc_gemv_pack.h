// ISA-independent parts of the InnerProduct GEMV kernels (arm/f32_gemv_8x4_neon.cpp,
// x86/f32_gemv_x86.h): geometry check, packed weight layout and workspace size.
// Weights are packed in blocks of `block` outputs, [k][block] inside a block (zeros
// for the missing outputs of the last block), then the bias of every block. These
// are plain functions compiled without ISA flags (fc_gemv_pack.cpp), so the x86
// translation units built with AVX2/AVX-512 flags only call them.
#pragma once
#include <cstddef>

#include "kernels/fc_kernels.h"

namespace kestrel::kernels {

// Number of blocks of `block` outputs covering g.num_output.
size_t gemv_blocks(const FcGeometry& g, size_t block);

bool gemv_supports(const FcGeometry& g);

// halves: the weights kept as IEEE halves (FcKernel::half_weights), two to a 4-byte
// unit, padded to a 64-byte line before the bias floats.
size_t gemv_weight_floats(const FcGeometry& g, size_t block, bool halves = false);
size_t gemv_packed_floats(const FcGeometry& g, size_t block, bool halves = false);

void gemv_pack(const FcGeometry& g, size_t block, const float* weight, const float* bias, float* packed,
               bool halves = false);

// Workspace for gathering an input of several channel planes into one vector.
size_t gemv_workspace_bytes(const FcGeometry& g);

}  // namespace kestrel::kernels
