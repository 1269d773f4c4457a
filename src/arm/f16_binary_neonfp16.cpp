// Binary ops (Add, Sub, Mul, Div, Max, Min; array and scalar forms) and Eltwise folds
// (Sum without coefficients, Prod, Max) on arrays of halves (ARMv8.2 FEAT_FP16): one
// FADD / FSUB / FMUL / FDIV .8h, or compare + select, per 8 values, 32 values a step
// (LD1 / ST1 of 4 registers), the last < 8 through a vector copied on the stack (a
// kernel reads and writes its n values only). A row has no layout: pack8 blocks and
// planar halves alike.
//
// Why these equal the fp16 reference bit for bit. The reference of an fp16 BinaryOp or
// Eltwise computes in fp32 on the widened halves, activation included, and the Net
// rounds the result to a half once.
// - + - * / of two halves: fp32's 24 bits are >= 2 * 11 + 2, so rounding the fp32
//   result to a half gives the exact result rounded to a half (the double rounding is
//   innocuous; Figueroa 1995), which the .8h instruction computes. A fold of two inputs
//   is one such operation (a Sum's 1 * x is x); a longer Sum or Prod rounds at every
//   step where the reference rounds once, and the layers never ask for one.
// - Max and min select an operand, a half already: compare + select replays the
//   reference's (a > b || isnan(a)) ? a : b (FMAX / FMIN would give max(+0, -0) = +0).
// - ReLU and Clip act after the rounding here, before it in the reference. Rounding is
//   monotone, so the two agree where the bounds are halves (Clip's must be: a bound
//   between two halves could meet a value rounded onto it) and no zero changes sign: a
//   result that rounds to zero is zero exactly (a nonzero sum or difference of two
//   halves is a multiple of 2^-24; max and min round nothing). After * and / a tiny
//   negative result rounds to -0 where the fp32 ReLU gave +0, and LeakyReLU's product
//   would round twice: supports() claims neither (the layer keeps its fp32 path there).
// - NaN: the reference's rounding (float_to_half) writes a NaN as its sign | 0x7e00;
//   the results' payloads are cleared the same way (FCMEQ, ORR, AND: 12 of the 26
//   instructions of a 32-value Add step; FADD keeps them). Of two NaN operands the first one's sign comes out; the reference's
//   fp32 a + b and a * b give either, as GCC orders the operands (its vector loops b's).
//   The commutative ops are written in asm so that GCC cannot swap them here too: the
//   kernel's NaN does not depend on the compiler, nor on where a value falls in a row.
#include <arm_neon.h>

#include <cstddef>
#include <cstring>

#include "arm/arm_kernels.h"
#include "arm/f16_conv1x1_pack8_16x8_neonfp16.h"
#include "core/half.h"

namespace kestrel::kernels::arm {
namespace {

using half = __fp16;
namespace act = conv1x1_pack8_f16;  // NoAct, ReLU, Clip: the reference's -0 and NaN rules

constexpr size_t kLanes = 8;

// The operations on 8 halves. kQuiet: a NaN result is quiet already (the arithmetic
// quiets it); a selected operand is as it came.
struct AddH {
  static constexpr bool kQuiet = true;
  static float16x8_t apply(float16x8_t a, float16x8_t b) {
    float16x8_t r;
    asm("fadd %0.8h, %1.8h, %2.8h" : "=w"(r) : "w"(a), "w"(b));
    return r;
  }
};
struct SubH {
  static constexpr bool kQuiet = true;
  static float16x8_t apply(float16x8_t a, float16x8_t b) { return vsubq_f16(a, b); }
};
struct MulH {
  static constexpr bool kQuiet = true;
  static float16x8_t apply(float16x8_t a, float16x8_t b) {
    float16x8_t r;
    asm("fmul %0.8h, %1.8h, %2.8h" : "=w"(r) : "w"(a), "w"(b));
    return r;
  }
};
struct DivH {
  static constexpr bool kQuiet = true;
  static float16x8_t apply(float16x8_t a, float16x8_t b) { return vdivq_f16(a, b); }
};
// (a > b || isnan(a)) ? a : b: FCMGT, FCMEQ, ORN, BSL.
struct MaxH {
  static constexpr bool kQuiet = false;
  static float16x8_t apply(float16x8_t a, float16x8_t b) {
    return vbslq_f16(vornq_u16(vcgtq_f16(a, b), vceqq_f16(a, a)), a, b);
  }
};
// (a < b || isnan(a)) ? a : b.
struct MinH {
  static constexpr bool kQuiet = false;
  static float16x8_t apply(float16x8_t a, float16x8_t b) {
    return vbslq_f16(vornq_u16(vcltq_f16(a, b), vceqq_f16(a, a)), a, b);
  }
};
// A one-input Eltwise: the input as it is.
struct FirstH {
  static constexpr bool kQuiet = false;
  static float16x8_t apply(float16x8_t a, float16x8_t) { return a; }
};

// r, where a NaN is written as float_to_half writes it: sign | 0x7e00.
template <bool kQuiet>
inline float16x8_t nan_as_reference(float16x8_t r) {
  const uint16x8_t number = vceqq_f16(r, r);
  uint16x8_t bits = vreinterpretq_u16_f16(r);
  if constexpr (!kQuiet) bits = vorrq_u16(bits, vbicq_u16(vdupq_n_u16(0x0200), number));  // quiet a NaN
  return vreinterpretq_f16_u16(vandq_u16(bits, vorrq_u16(number, vdupq_n_u16(0xfe00))));
}

// One operand as the row loop sees it: an array, or one value in every lane.
template <bool kScalar>
struct Operand {
  const half* p;
  float16x8_t s;
  explicit Operand(const half* data) : p(data), s(kScalar ? vld1q_dup_f16(data) : vdupq_n_f16(0)) {}
  float16x8_t load(size_t i) const {
    if constexpr (kScalar) return s;
    else return vld1q_f16(p + i);
  }
  // 32 values from i on: one LD1 of 4 registers.
  float16x8x4_t load4(size_t i) const {
    if constexpr (kScalar) return {{s, s, s, s}};
    else return vld1q_f16_x4(p + i);
  }
  // The r < 8 values from i on, the other lanes 0.
  float16x8_t load_tail(size_t i, size_t r) const {
    if constexpr (kScalar) {
      return s;
    } else {
      half t[kLanes] = {};
      std::memcpy(t, p + i, r * sizeof(half));
      return vld1q_f16(t);
    }
  }
};

// out[i] = act(a[i] Op b[i]) for i < n in form F; every step loads before it stores, so
// out may equal a or b.
template <class Op, BinaryForm F, class Act>
void row(const half* a, const half* b, half* out, size_t n, const Act& act) {
  const Operand<F == BinaryForm::kScalarArray> qa(a);
  const Operand<F == BinaryForm::kArrayScalar> qb(b);
  auto value = [&](float16x8_t x, float16x8_t y) { return act(nan_as_reference<Op::kQuiet>(Op::apply(x, y))); };
  size_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const float16x8x4_t x = qa.load4(i), y = qb.load4(i);
    float16x8x4_t r;
    for (size_t k = 0; k < 4; ++k) r.val[k] = value(x.val[k], y.val[k]);
    vst1q_f16_x4(out + i, r);
  }
  for (; i + kLanes <= n; i += kLanes) vst1q_f16(out + i, value(qa.load(i), qb.load(i)));
  if (i < n) {
    const size_t r = n - i;
    half t[kLanes];
    vst1q_f16(t, value(qa.load_tail(i, r), qb.load_tail(i, r)));
    std::memcpy(out + i, t, r * sizeof(half));
  }
}

// fn(functor) for the activations claimed (supports()): Clip's bounds are halves.
template <class Fn>
void with_activation(const ActivationSpec& a, Fn&& fn) {
  switch (a.type) {
    case fb::ActivationType::ReLU: fn(act::ReLU{}); break;
    case fb::ActivationType::Clip: fn(act::Clip{vdupq_n_f16(a.alpha), vdupq_n_f16(a.beta)}); break;
    default: fn(act::NoAct{}); break;
  }
}

template <class Op>
void run_op(const BinaryGeometry& g, const half* a, const half* b, half* out, size_t n) {
  with_activation(g.act, [&](const auto& act) {
    switch (g.form) {
      case BinaryForm::kArrayScalar: row<Op, BinaryForm::kArrayScalar>(a, b, out, n, act); break;
      case BinaryForm::kScalarArray: row<Op, BinaryForm::kScalarArray>(a, b, out, n, act); break;
      default: row<Op, BinaryForm::kArrayArray>(a, b, out, n, act); break;
    }
  });
}

void run_binary(const BinaryGeometry& g, const float* a, const float* b, float* out, size_t n) {
  if (n == 0) return;
  const half* ha = reinterpret_cast<const half*>(a);
  const half* hb = reinterpret_cast<const half*>(b);
  half* ho = reinterpret_cast<half*>(out);
  using T = fb::BinaryOpType;
  switch (g.op) {
    case T::Sub: run_op<SubH>(g, ha, hb, ho, n); break;
    case T::Mul: run_op<MulH>(g, ha, hb, ho, n); break;
    case T::Div: run_op<DivH>(g, ha, hb, ho, n); break;
    case T::Max: run_op<MaxH>(g, ha, hb, ho, n); break;
    case T::Min: run_op<MinH>(g, ha, hb, ho, n); break;
    default: run_op<AddH>(g, ha, hb, ho, n); break;
  }
}

// Input after input, in fp16, the activation on the last step. Coefficients are not
// read: a Sum is claimed without them (Eltwise::set_half declines any but 1).
template <class Op>
void fold(const EltwiseGeometry& g, const half* const* srcs, int count, half* out, size_t n) {
  with_activation(g.act, [&](const auto& act) {
    if (count == 1) {
      row<FirstH, BinaryForm::kArrayArray>(srcs[0], srcs[0], out, n, act);
      return;
    }
    for (int k = 1; k < count; ++k) {
      const half* acc = k == 1 ? srcs[0] : out;
      if (k + 1 == count) {
        row<Op, BinaryForm::kArrayArray>(acc, srcs[k], out, n, act);
      } else {
        row<Op, BinaryForm::kArrayArray>(acc, srcs[k], out, n, act::NoAct{});
      }
    }
  });
}

void run_eltwise(const EltwiseGeometry& g, const float* const* srcs, const float* /*coef*/, int count, float* out,
                 size_t n) {
  if (n == 0 || count < 1) return;
  const half* const* hs = reinterpret_cast<const half* const*>(srcs);
  half* ho = reinterpret_cast<half*>(out);
  switch (g.op) {
    case fb::EltwiseOp::Prod: fold<MulH>(g, hs, count, ho, n); break;
    case fb::EltwiseOp::Max: fold<MaxH>(g, hs, count, ho, n); break;
    default: fold<AddH>(g, hs, count, ho, n); break;
  }
}

// The activations whose fp16 form equals the rounded fp32 one after an operation that
// cannot round a nonzero value to zero (see the top of the file).
bool exact_activation(const ActivationSpec& a, bool rounds_to_zero) {
  switch (a.type) {
    case fb::ActivationType::None: return true;
    case fb::ActivationType::ReLU: return !rounds_to_zero;
    case fb::ActivationType::Clip: return !rounds_to_zero && is_exact_half(a.alpha) && is_exact_half(a.beta);
    default: return false;
  }
}

bool supports_binary(const BinaryGeometry& g) {
  using T = fb::BinaryOpType;
  if (!g.f16) return false;
  switch (g.op) {
    case T::Add: case T::Sub: case T::Max: case T::Min: return exact_activation(g.act, false);
    case T::Mul: case T::Div: return exact_activation(g.act, true);
    default: return false;
  }
}

bool supports_eltwise(const EltwiseGeometry& g) {
  if (!g.f16) return false;
  switch (g.op) {
    case fb::EltwiseOp::Sum: case fb::EltwiseOp::Max: return exact_activation(g.act, false);
    case fb::EltwiseOp::Prod: return exact_activation(g.act, true);
    default: return false;
  }
}

}  // namespace

const BinaryKernel kF16Binary_Neon = {"f16_binary_neonfp16", Isa::kNeon, supports_binary, 0.0, run_binary, true};
const EltwiseKernel kF16Eltwise_Neon = {"f16_eltwise_neonfp16", Isa::kNeon, supports_eltwise, 0.0, run_eltwise,
                                        true};

}  // namespace kestrel::kernels::arm
