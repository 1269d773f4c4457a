// Which instruction sets the fast kernels may use on this CPU. Detected once, at the
// first call; KESTREL_ISA=ref|neon|avx2|avx512 caps it (never raises it above what the
// CPU has), so every path can be tested and benchmarked on one machine.
#pragma once

namespace kestrel::kernels {

// Levels of one architecture are ordered: a kernel for level L runs on any CPU whose
// level is >= L. kNeon is the only level of aarch64; kAvx2 means AVX2 + FMA and
// kAvx512 AVX-512F on x86-64.
enum class Isa { kRef = 0, kNeon = 1, kAvx2 = 2, kAvx512 = 3 };

const char* isa_name(Isa isa);

// What this CPU has (the highest level), regardless of KESTREL_ISA.
Isa host_isa();

// host_isa() capped by KESTREL_ISA, read at the first call. Net::load uses this to
// choose kernels.
Isa active_isa();

// True if a kernel written for `kernel` may run when `active` is the active level.
bool isa_allows(Isa active, Isa kernel);

// True if some core of this machine issues in order (ARM Cortex-A53, A55, A35, A510,
// A520...: the little cores of most robot boards), detected once. A kernel whose
// instructions are fewest but whose loads feed the very next instructions (on an
// in-order core, stalls) steps aside for one that suits such cores. False on x86 and
// where it cannot be told.
bool host_has_in_order_cores();

// Extensions beyond a level that some kernels need, each detected once, per level (a
// kernel written for a level uses the extension's encoding of that level):
// - kFp16Arith: fp16 vector arithmetic (aarch64 ARMv8.2 FEAT_FP16, HWCAP asimdhp:
//   Cortex-A55/A75/A76/A78; x86 AVX512-FP16: Sapphire Rapids);
// - kBf16: bf16 dot products (x86 AVX512-BF16; aarch64 FEAT_BF16, HWCAP2 bf16);
// - kDot8: int8 dot products (aarch64 dotprod, HWCAP asimddp; x86 at kAvx512
//   AVX512-VNNI, at kAvx2 AVX-VNNI: Alder Lake and later, Sapphire Rapids, Zen 4);
// - kVbmi: byte permutes across a whole vector (x86 AVX512-VBMI, with AVX512-BW and -VL:
//   Ice Lake, Sapphire Rapids, Zen 4; not Cascade Lake). None on aarch64, whose TBL
//   every NEON kernel may use.
enum class Feature { kFp16Arith, kBf16, kDot8, kVbmi };
const char* feature_name(Feature f);  // "fp16", "bf16", "dot8", "vbmi"
// What this CPU has at its level, regardless of the environment.
bool host_has(Feature f);
// What kernels of `level` may use: the CPU has f at that level, the level is allowed by
// the active one (isa_allows), and KESTREL_DISABLE does not list the feature ("fp16",
// "bf16,dot8"). A level capped by KESTREL_ISA keeps that level's extensions
// (KESTREL_ISA=avx2 on a CPU with AVX-VNNI: an Alder Lake), so the kernels that do
// without one are tested with KESTREL_DISABLE on the same CPU.
bool active_has(Feature f, Isa level);
// The same at the active level.
bool active_has(Feature f);
// The active level's features as text ("fp16,dot8"; "" for none), for tools and reports.
const char* active_features();
namespace detail {
// Defined once per architecture (src/arm/cpu_arm.cpp, src/x86/cpu_x86.cpp,
// src/kernels/cpu_generic.cpp): the CPU's highest level, whether any core issues in
// order, and whether the CPU has f in the encoding of `level` (<= the host's level).
Isa detect_host_isa();
bool detect_in_order_cores();
bool detect_feature(Feature f, Isa level);
}  // namespace detail

}  // namespace kestrel::kernels
