// The fp16 kernels' activations beyond one rounded operation (Sigmoid, TanH, HardSigmoid,
// HardSwish, SiLU, ELU, GELU), exactly as conv_reference_f16 computes them: the reference
// rounds the fp32 activation of the fp16 accumulator once, and a half has only 65,536
// values, so a table of the 65,536 results, built by calling the reference's own
// function (layers/activation.h), is exact by construction on every CPU, NaN inputs
// included. A kernel looks each output's bits up in it.
//
// Where the tables live: one per distinct activation (type, and alpha / beta rounded to
// halves where the type reads them), shared by the whole process and kept until exit,
// not one per layer in its packed weights. A table is 128 KiB, and the networks that
// fuse these activations often fuse them after every convolution (SiLU, HardSwish: 50
// such layers would carry 6.4 MiB of tables, more than many of those networks' fp16
// weights), while the distinct activations of a network are few (Sigmoid; HardSwish's
// alpha is 0 or 1/6; ELU's alpha 1). A lookup costs a mutex per layer run, not per tile;
// the kernels' pack() builds the table at Net load (65,536 calls of the activation), so
// that a run only finds it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "layers/activation.h"

namespace kestrel::kernels {

constexpr size_t kF16ActivationTableSize = size_t(1) << 16;  // one entry per half

// True for the activations the fp16 kernels apply through a table: all but None,
// ReLU, Clip and LeakyReLU (compares and at most one multiply, which the kernels do on
// the vector as the reference does).
bool f16_activation_uses_table(fb::ActivationType t);

// table[h] = the bits of conv_reference_f16's activation of the half whose bits are h:
// half(activate(float(h), a with alpha and beta rounded to halves)), for all 65,536 h.
void build_f16_activation_table(const ActivationSpec& a, uint16_t* table);

// The process-wide table of `a` (built on its first request, by any thread), valid until
// the process exits.
const uint16_t* f16_activation_table(const ActivationSpec& a);

}  // namespace kestrel::kernels
