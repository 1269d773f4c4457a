// What the AVX-512 int8 kernels share: quantize_i8 on sixteen floats, and vpdpbusd with
// a folded broadcast.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/i8_reference.h"
#include "x86/x86_kernels.h"
#include "x86/x86_vec.h"

KESTREL_X86_NS_BEGIN

// quantize_i8 (kernels/i8_reference.h): x * scale, NaN to 0, clamped to +-127, rounded
// to nearest even, as an integer-valued float. Identical to the scalar steps: the clamp
// comes first, and vrndscaleps rounds to even as nearbyint does in the default rounding
// mode.
KESTREL_X86_INLINE __m512 quantize_i8x16(__m512 x, __m512 scale) {
  const __m512 v = _mm512_mul_ps(x, scale);
  const __mmask16 ok = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512 lim = _mm512_set1_ps(static_cast<float>(kI8Max));
  const __m512 c = F32x16::min(lim, F32x16::max(_mm512_sub_ps(_mm512_setzero_ps(), lim), v));
  return _mm512_maskz_roundscale_ps(ok, c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// acc += u (u8) . the dword at s (s8), broadcast to every lane: vpdpbusd with the
// broadcast folded into the instruction, for the VNNI kernels only (written out, so it
// needs no compiler flag: GCC 12 folds no broadcast from _mm512_dpbusd_epi32 and
// _mm512_set1_epi32, and copied every accumulator around each vpdpbusd, with spills:
// 2x slower on MobileNet's pointwise layers).
KESTREL_X86_INLINE __m512i dpbusd_broadcast(__m512i acc, __m512i u, const uint32_t* s) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*s));
  return acc;
}

KESTREL_X86_NS_END
