// The fp16 binary-op and Eltwise kernels on halves (f16_binary_neonfp16,
// f16_eltwise_neonfp16) against their reference: binary_reference / eltwise_reference on
// the widened halves, activation included, rounded to halves (float_to_half), bit for
// bit. Swept: every op, form and activation the kernels claim (and the claims themselves:
// nothing whose fp16 result could differ), lengths 1 to 40 and a few large ones, separate
// and in-place outputs, misaligned rows; inputs mixing random halves, any finite bit
// pattern, subnormals, +-0, +-inf, values near 65504 and NaNs of both signs, quiet and
// signalling, with payloads; every half against a set of special values. Then a small
// net at fp16 whose residual adds (BinaryOp, Eltwise) of fp16 convolutions run on
// halves, with no conversion around them, equal to the fp16 oracle bit for bit at 1 and
// 4 threads. Where the CPU has no fp16 arithmetic (cortex-a72, x86) no fp16 kernel may be
// selected, and the cases say so.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "kernels/elementwise_kernels.h"
#include "kernel_test_util.h"
#include "kernels/isa.h"
#include "test_util.h"

namespace {

using kestrel::ActivationSpec;
using kestrel::fb::ActivationType;
using kestrel::fb::BinaryOpType;
using kestrel::fb::EltwiseOp;
using kestrel::kernels::BinaryForm;
using kestrel::kernels::BinaryGeometry;
using kestrel::kernels::BinaryKernel;
using kestrel::kernels::EltwiseGeometry;
using kestrel::kernels::EltwiseKernel;
using kestrel::kernels::Feature;

constexpr uint16_t kNanGuard = 0x7e55;  // around inputs: a value read from there shows as NaN
constexpr uint16_t kSentinel = 0x3c01;  // around outputs: 1.0009765625

bool fp16_arith() { return kt::fp16_kernels_run(); }

std::string hex(uint16_t h) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%04x", h);
  return s;
}

// The f16 kernel of a registry that this CPU runs, or nullptr without fp16 arithmetic.
// An aarch64 build must have one where the CPU has it.
template <class K>
const K* runnable_f16(const std::vector<const K*>& all) {
  if (!fp16_arith()) return nullptr;
  const K* found = nullptr;
  for (const K* k : all) {
    if (k->f16) found = k;
  }
  if (kestrel::kernels::active_isa() == kestrel::kernels::Isa::kNeon) CHECK(found != nullptr);
  return found;
}

// n halves `skew` halves past a 16-byte boundary, with kGuard halves of `guard` on
// each side.
struct Halves {
  static constexpr size_t kGuard = 16;
  Halves(size_t n, size_t skew, uint16_t guard) : storage(n + 2 * kGuard + skew, guard), size(n), at(kGuard + skew),
                                                   guard_value(guard) {}
  uint16_t* data() { return storage.data() + at; }
  const uint16_t* data() const { return storage.data() + at; }
  float* as_floats() { return reinterpret_cast<float*>(data()); }
  bool guards_untouched() const {
    for (size_t i = 0; i < storage.size(); ++i) {
      if ((i < at || i >= at + size) && storage[i] != guard_value) return false;
    }
    return true;
  }
  std::vector<uint16_t> storage;
  size_t size, at;
  uint16_t guard_value;
};

// A half of the mix the header describes.
uint16_t random_half(std::mt19937& rng) {
  const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
  const int r = static_cast<int>(rng() % 100);
  if (r < 40) return kestrel::float_to_half(std::uniform_real_distribution<float>(-4.f, 4.f)(rng));
  if (r < 55) return static_cast<uint16_t>(sign | rng() % 0x7c00);                  // any finite half
  if (r < 63) return static_cast<uint16_t>(sign | rng() % 0x400);                   // subnormal
  if (r < 71) return sign;                                                          // +-0
  if (r < 75) return static_cast<uint16_t>(sign | 0x7c00);                          // +-inf
  if (r < 81) return static_cast<uint16_t>(sign | 0x7e00 | (rng() & 0x1ff));        // quiet NaN
  if (r < 84) return static_cast<uint16_t>(sign | 0x7c00 | (1 + rng() % 0x1ff));    // signalling NaN
  if (r < 92) return static_cast<uint16_t>(sign | (0x7800 + rng() % 0x400));        // 32768 to 65504
  return static_cast<uint16_t>(sign | (0x3c00 + rng() % 8));                        // 1 and the next halves
}

std::vector<uint16_t> random_halves(size_t n, std::mt19937& rng) {
  std::vector<uint16_t> v(n);
  for (uint16_t& h : v) h = random_half(rng);
  return v;
}

std::vector<float> widen(const uint16_t* h, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = kestrel::half_to_float(h[i]);
  return v;
}

std::vector<uint16_t> round_all(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = kestrel::float_to_half(v[i]);
  return h;
}

bool is_nan(uint16_t h) { return (h & 0x7fff) > 0x7c00; }

// Index of the first of n halves that is neither want[i] nor also[i], or -1.
long first_difference(const uint16_t* got, const std::vector<uint16_t>& want, const std::vector<uint16_t>& also,
                      size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i] && got[i] != also[i]) return static_cast<long>(i);
  }
  return -1;
}

// The other result a commutative op may give where both operands are NaN: the reference's
// fp32 a + b or a * b returns one operand's NaN, and which one is the compiler's choice
// of operand order (GCC's vector loops of binary_reference and eltwise_reference take
// b's, its scalar loops a's). The kernels return the first operand's.
std::vector<uint16_t> other_nan(const std::vector<uint16_t>& want, const std::vector<uint16_t>& a,
                                const std::vector<uint16_t>& b, size_t n, bool commutative) {
  std::vector<uint16_t> also = want;
  for (size_t i = 0; commutative && i < n; ++i) {
    const uint16_t x = a[a.size() == n ? i : 0], y = b[b.size() == n ? i : 0];
    if (!is_nan(x) || !is_nan(y)) continue;
    const uint16_t cx = static_cast<uint16_t>((x & 0x8000) | 0x7e00), cy = static_cast<uint16_t>((y & 0x8000) | 0x7e00);
    also[i] = want[i] == cx ? cy : cx;
  }
  return also;
}

ActivationSpec activation(ActivationType t, float alpha = 0.f, float beta = 0.f) {
  ActivationSpec a;
  a.type = t;
  a.alpha = alpha;
  a.beta = beta;
  return a;
}

// The activations the kernels may claim (None, ReLU, ReLU6, a Clip of other halves) and
// some they must not (bounds that are not halves, LeakyReLU, exp-based ones).
const ActivationSpec kActivations[] = {
    activation(ActivationType::None),          activation(ActivationType::ReLU),
    activation(ActivationType::Clip, 0.f, 6.f), activation(ActivationType::Clip, -0.5f, 1.25f),
    activation(ActivationType::Clip, 0.1f, 6.f), activation(ActivationType::LeakyReLU, 0.1f),
    activation(ActivationType::Sigmoid),
};

std::string describe(const ActivationSpec& a) {
  std::ostringstream o;
  o << kestrel::fb::EnumNameActivationType(a.type);
  if (a.type == ActivationType::Clip) o << "(" << a.alpha << "," << a.beta << ")";
  return o.str();
}

// What the kernels claim, as f16_binary_neonfp16.cpp argues: the activation after an op
// that never rounds a nonzero value to zero (+, -, max, min) may be ReLU or a Clip
// between halves; after * and / none.
bool exact_activation(const ActivationSpec& a, bool rounds_to_zero) {
  if (a.type == ActivationType::None) return true;
  if (rounds_to_zero) return false;
  return a.type == ActivationType::ReLU ||
         (a.type == ActivationType::Clip && kestrel::is_exact_half(a.alpha) && kestrel::is_exact_half(a.beta));
}

bool claimed(BinaryOpType op, const ActivationSpec& a) {
  switch (op) {
    case BinaryOpType::Add: case BinaryOpType::Sub: case BinaryOpType::Max: case BinaryOpType::Min:
      return exact_activation(a, false);
    case BinaryOpType::Mul: case BinaryOpType::Div: return exact_activation(a, true);
    default: return false;
  }
}

bool claimed(EltwiseOp op, const ActivationSpec& a) {
  return op == EltwiseOp::Prod ? exact_activation(a, true) : exact_activation(a, false);
}

// Runs k on g over a and b (halves of the form's lengths) into a separate output, over a
// and over b (where that is an array of n), against binary_reference rounded (CHECKs).
void check_binary(const BinaryKernel* k, const BinaryGeometry& g, const std::vector<uint16_t>& a,
                  const std::vector<uint16_t>& b, size_t n, std::mt19937& rng) {
  BinaryGeometry wide = g;
  wide.f16 = false;
  const std::vector<float> wa = widen(a.data(), a.size()), wb = widen(b.data(), b.size());
  std::vector<float> ref(n);
  kestrel::kernels::binary_reference(wide, wa.data(), wb.data(), ref.data(), n);
  const std::vector<uint16_t> want = round_all(ref);
  const std::vector<uint16_t> also = other_nan(want, a, b, n, g.op == BinaryOpType::Add || g.op == BinaryOpType::Mul);
  for (int place = 0; place < 3; ++place) {
    if ((place == 1 && a.size() != n) || (place == 2 && b.size() != n)) continue;
    Halves ha(a.size(), rng() % 8, kNanGuard), hb(b.size(), rng() % 8, kNanGuard), out(n, rng() % 8, kSentinel);
    std::copy(a.begin(), a.end(), ha.data());
    std::copy(b.begin(), b.end(), hb.data());
    uint16_t* dst = place == 1 ? ha.data() : place == 2 ? hb.data() : out.data();
    k->run(g, ha.as_floats(), hb.as_floats(), reinterpret_cast<float*>(dst), n);
    const long i = first_difference(dst, want, also, n);
    INFO(std::string(k->name) << ": op " << std::string(kestrel::fb::EnumNameBinaryOpType(g.op)) << " form "
                              << static_cast<int>(g.form) << " act " << describe(g.act) << " n " << n << " place "
                              << place);
    if (i >= 0) {
      const size_t ia = a.size() == n ? i : 0, ib = b.size() == n ? i : 0;
      INFO("at " << i << ": " << hex(a[ia]) << " op " << hex(b[ib]) << " gave " << hex(dst[i]) << ", want "
                 << hex(want[i]));
      CHECK(i < 0);
    }
    CHECK(ha.guards_untouched());
    CHECK(hb.guards_untouched());
    CHECK(out.guards_untouched());
  }
}

// Runs k on g over `count` inputs into a separate output and over the first input,
// against eltwise_reference rounded (CHECKs); coefficients absent or all 1.
void check_eltwise(const EltwiseKernel* k, const EltwiseGeometry& g, const std::vector<std::vector<uint16_t>>& in,
                   size_t n, bool ones, std::mt19937& rng) {
  EltwiseGeometry wide = g;
  wide.f16 = false;
  const int count = static_cast<int>(in.size());
  std::vector<std::vector<float>> wv;
  std::vector<const float*> ws;
  for (const auto& x : in) wv.push_back(widen(x.data(), n));
  for (const auto& x : wv) ws.push_back(x.data());
  const std::vector<float> coef(count, 1.f);
  std::vector<float> ref(n);
  kestrel::kernels::eltwise_reference(wide, ws.data(), ones ? coef.data() : nullptr, count, ref.data(), n);
  const std::vector<uint16_t> want = round_all(ref);
  const std::vector<uint16_t> also = other_nan(want, in[0], in[count - 1], n, count == 2 && g.op != EltwiseOp::Max);
  for (bool in_place : {false, true}) {
    std::vector<Halves> hs;
    std::vector<const float*> srcs;
    for (const auto& x : in) {
      hs.emplace_back(n, rng() % 8, kNanGuard);
      std::copy(x.begin(), x.end(), hs.back().data());
    }
    for (Halves& h : hs) srcs.push_back(h.as_floats());
    Halves out(n, rng() % 8, kSentinel);
    uint16_t* dst = in_place ? hs[0].data() : out.data();
    k->run(g, srcs.data(), ones ? coef.data() : nullptr, count, reinterpret_cast<float*>(dst), n);
    const long i = first_difference(dst, want, also, n);
    INFO(std::string(k->name) << ": op " << std::string(kestrel::fb::EnumNameEltwiseOp(g.op)) << " act "
                              << describe(g.act) << " count " << count << " n " << n
                              << (ones ? " coefficients 1" : "") << (in_place ? " in place" : ""));
    if (i >= 0) {
      std::ostringstream o;
      for (const auto& x : in) o << hex(x[i]) << " ";
      INFO("at " << i << ": inputs " << o.str() << "gave " << hex(dst[i]) << ", want " << hex(want[i]));
      CHECK(i < 0);
    }
    for (const Halves& h : hs) CHECK(h.guards_untouched());
    CHECK(out.guards_untouched());
  }
}

std::vector<size_t> lengths() {
  std::vector<size_t> v;
  for (size_t n = 1; n <= 40; ++n) v.push_back(n);
  for (size_t n : {63, 64, 65, 100, 257, 1000, 8195}) v.push_back(n);
  return v;
}

constexpr BinaryOpType kBinaryOps[] = {BinaryOpType::Add, BinaryOpType::Sub, BinaryOpType::Mul,
                                       BinaryOpType::Div, BinaryOpType::Max, BinaryOpType::Min,
                                       BinaryOpType::Pow};
constexpr BinaryForm kForms[] = {BinaryForm::kArrayArray, BinaryForm::kArrayScalar, BinaryForm::kScalarArray};

// Where this CPU has no fp16 arithmetic: no f16 kernel is selected, whatever the op.
void check_none_selected(const char* what) {
  for (BinaryOpType op : kBinaryOps) {
    BinaryGeometry g;
    g.op = op;
    g.f16 = true;
    CHECK(kestrel::kernels::select_binary_kernel(g, kestrel::kernels::active_isa()) == nullptr);
  }
  for (EltwiseOp op : {EltwiseOp::Sum, EltwiseOp::Prod, EltwiseOp::Max}) {
    EltwiseGeometry g;
    g.op = op;
    g.f16 = true;
    CHECK(kestrel::kernels::select_eltwise_kernel(g, kestrel::kernels::active_isa()) == nullptr);
  }
  MESSAGE("no fp16 arithmetic on this CPU (active features: '" << std::string(kestrel::kernels::active_features())
                                                                << "'): no f16 binary or eltwise kernel selected; "
                                                                << std::string(what) << " skipped");
}

kestrel::fb::LayerParamsUnion binary_params(BinaryOpType op, bool reverse, ActivationType act) {
  kestrel::fb::BinaryOpParamT p;
  p.op = op;
  p.reverse = reverse;
  p.activation = std::make_unique<kestrel::fb::ActivationT>();
  p.activation->type = act;
  p.activation->alpha = 0.1f;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

kestrel::fb::LayerParamsUnion eltwise_params(EltwiseOp op, std::vector<float> coefficients) {
  kestrel::fb::EltwiseParamT p;
  p.op = op;
  p.coefficients = std::move(coefficients);
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// 1x1 convolutions (the fp16 1x1 kernel) with residual adds between them: "add" (a
// BinaryOp of two pack8 maps), "sum" (an Eltwise Sum with coefficients 1 of it and "a"),
// "sub" (a reversed BinaryOp Sub with ReLU of two 12-channel maps: planar halves, a
// network output), "max" (an Eltwise Max), and two that must stay fp32: "leaky" (Add
// with LeakyReLU: its fp16 result could differ) and "weighted" (a Sum with a coefficient
// 2).
kestrel::ModelBuilder residual_net() {
  kestrel::ModelBuilder b;
  b.add_input("data", {16, 9, 7});
  kt::add_conv(b, "a", "data", 16, 16, 1);
  kt::add_conv(b, "b", "a", 16, 16, 1);
  b.add_layer("BinaryOp", "add", {"a", "b"}, {"add"}, binary_params(BinaryOpType::Add, false, ActivationType::None));
  b.add_layer("Eltwise", "sum", {"add", "a"}, {"sum"}, eltwise_params(EltwiseOp::Sum, {1.f, 1.f}));
  kt::add_conv(b, "c", "sum", 16, 16, 1);
  kt::add_conv(b, "x", "c", 16, 12, 1);
  kt::add_conv(b, "y", "c", 16, 12, 1);
  b.add_layer("BinaryOp", "sub", {"x", "y"}, {"sub"}, binary_params(BinaryOpType::Sub, true, ActivationType::ReLU));
  b.add_layer("Eltwise", "max", {"c", "b"}, {"max"}, eltwise_params(EltwiseOp::Max, {}));
  kt::add_conv(b, "d", "max", 16, 8, 1);
  b.add_layer("BinaryOp", "leaky", {"a", "c"}, {"leaky"},
              binary_params(BinaryOpType::Add, false, ActivationType::LeakyReLU));
  b.add_layer("Eltwise", "weighted", {"b", "c"}, {"weighted"}, eltwise_params(EltwiseOp::Sum, {1.f, 2.f}));
  b.add_output("d");
  b.add_output("sub");
  b.add_output("leaky");
  b.add_output("weighted");
  return b;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("fp16 binary: the kernels claim exactly the ops and activations that are exact in fp16") {
  const BinaryKernel* bk = runnable_f16(kestrel::kernels::binary_kernels());
  const EltwiseKernel* ek = runnable_f16(kestrel::kernels::eltwise_kernels());
  if (!bk || !ek) {
    check_none_selected("claims");
    return;
  }
  CHECK(std::string(bk->name) == "f16_binary_neonfp16");
  CHECK(std::string(ek->name) == "f16_eltwise_neonfp16");
  for (BinaryOpType op : kBinaryOps) {
    for (const ActivationSpec& a : kActivations) {
      for (BinaryForm form : kForms) {
        BinaryGeometry g;
        g.op = op;
        g.act = a;
        g.form = form;
        INFO("op " << kestrel::fb::EnumNameBinaryOpType(op) << " act " << describe(a));
        CHECK_FALSE(bk->supports(g));  // floats: never
        const BinaryKernel* k32 = kestrel::kernels::select_binary_kernel(g, kestrel::kernels::active_isa());
        CHECK((k32 == nullptr || !k32->f16));
        g.f16 = true;
        CHECK(bk->supports(g) == claimed(op, a));
        CHECK(kestrel::kernels::select_binary_kernel(g, kestrel::kernels::active_isa()) ==
              (claimed(op, a) ? bk : nullptr));
      }
    }
  }
  for (EltwiseOp op : {EltwiseOp::Sum, EltwiseOp::Prod, EltwiseOp::Max}) {
    for (const ActivationSpec& a : kActivations) {
      EltwiseGeometry g;
      g.op = op;
      g.act = a;
      INFO("op " << kestrel::fb::EnumNameEltwiseOp(op) << " act " << describe(a));
      CHECK_FALSE(ek->supports(g));
      g.f16 = true;
      CHECK(ek->supports(g) == claimed(op, a));
      CHECK(kestrel::kernels::select_eltwise_kernel(g, kestrel::kernels::active_isa()) ==
            (claimed(op, a) ? ek : nullptr));
    }
  }
  // The reference set's ISA selects nothing.
  BinaryGeometry g;
  g.f16 = true;
  CHECK(kestrel::kernels::select_binary_kernel(g, kestrel::kernels::Isa::kRef) == nullptr);
}

TEST_CASE("fp16 binary: binary ops on halves equal binary_reference rounded to halves, every form") {
  const BinaryKernel* k = runnable_f16(kestrel::kernels::binary_kernels());
  if (!k) return check_none_selected("binary ops");
  std::mt19937 rng(81);
  int cases = 0;
  for (BinaryOpType op : kBinaryOps) {
    for (const ActivationSpec& a : kActivations) {
      if (!claimed(op, a)) continue;
      for (BinaryForm form : kForms) {
        for (size_t n : lengths()) {
          BinaryGeometry g;
          g.op = op;
          g.act = a;
          g.form = form;
          g.f16 = true;
          const std::vector<uint16_t> x = random_halves(form == BinaryForm::kScalarArray ? 1 : n, rng);
          const std::vector<uint16_t> y = random_halves(form == BinaryForm::kArrayScalar ? 1 : n, rng);
          check_binary(k, g, x, y, n, rng);
          ++cases;
        }
      }
    }
  }
  MESSAGE(cases << " cases, 3 placements each where the operands allow");
}

TEST_CASE("fp16 binary: every half against special values, each op, both scalar forms") {
  const BinaryKernel* k = runnable_f16(kestrel::kernels::binary_kernels());
  if (!k) return check_none_selected("the sweep of every half");
  std::mt19937 rng(82);
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  // Zeros, the subnormal and normal bounds, 1 and its neighbours, values whose products
  // and quotients land near 65504 and 65520 or near half the smallest subnormal, inf, NaN.
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x83ff, 0x3c00, 0xbc00, 0x3c01,
                               0x3bff, 0x7bff, 0xfbff, 0x4000, 0x3800, 0x0200, 0x1400, 0x5bff, 0x57ff, 0x2e66,
                               0x7c00, 0xfc00, 0x7e00, 0xfd01};
  for (BinaryOpType op : kBinaryOps) {
    if (!claimed(op, ActivationSpec{})) continue;
    for (uint16_t s : specials) {
      for (BinaryForm form : {BinaryForm::kArrayScalar, BinaryForm::kScalarArray}) {
        BinaryGeometry g;
        g.op = op;
        g.form = form;
        g.f16 = true;
        const std::vector<uint16_t> one = {s};
        if (form == BinaryForm::kArrayScalar) {
          check_binary(k, g, all, one, all.size(), rng);
        } else {
          check_binary(k, g, one, all, all.size(), rng);
        }
      }
    }
  }
}

TEST_CASE("fp16 binary: Eltwise sum, prod and max of halves equal eltwise_reference rounded to halves") {
  const EltwiseKernel* k = runnable_f16(kestrel::kernels::eltwise_kernels());
  if (!k) return check_none_selected("eltwise folds");
  std::mt19937 rng(83);
  int cases = 0;
  for (EltwiseOp op : {EltwiseOp::Sum, EltwiseOp::Prod, EltwiseOp::Max}) {
    for (const ActivationSpec& a : kActivations) {
      if (!claimed(op, a)) continue;
      // A fold of 1 or 2 inputs; Max of any number (max rounds nothing).
      for (int count : {1, 2, 3, 5}) {
        if (count > 2 && op != EltwiseOp::Max) continue;
        for (size_t n : lengths()) {
          EltwiseGeometry g;
          g.op = op;
          g.act = a;
          g.f16 = true;
          std::vector<std::vector<uint16_t>> in;
          for (int i = 0; i < count; ++i) in.push_back(random_halves(n, rng));
          check_eltwise(k, g, in, n, op == EltwiseOp::Sum && rng() % 2, rng);
          ++cases;
        }
      }
    }
  }
  MESSAGE(cases << " cases, separate and in place");
}

}  // TEST_SUITE("kernels")

TEST_SUITE("precision") {

TEST_CASE("fp16 binary: residual adds of an fp16 net run on halves, equal to the fp16 oracle bit for bit") {
  const kestrel::ModelBuilder builder = residual_net();
  kestrel::Net oracle, fast;
  oracle.option().kernels = kestrel::KernelSet::kReference;
  for (kestrel::Net* net : {&oracle, &fast}) {
    net->option().precision = kestrel::Precision::kFp16;
    // The stem too, whatever the default for a layer weighing the input: then every
    // blob comes from fp16 kernels alone.
    net->option().layer_precision["a"] = kestrel::Precision::kFp16;
  }
  REQUIRE(kt::load(oracle, builder).ok());
  const kestrel::Status loaded = kt::load(fast, builder);
  INFO(loaded.message());
  REQUIRE(loaded.ok());
  const kestrel::Mat in = kt::random_input(fast, "data", 23);
  std::map<std::string, std::string> kernel;
  std::set<std::string> converts;
  const char* const blobs[] = {"a", "b", "add", "sum", "c", "x", "y", "sub", "max", "d", "leaky", "weighted"};
  for (int threads : {1, 4}) {
    for (const char* blob : blobs) {
      INFO("blob " << std::string(blob) << " threads " << threads);
      kestrel::Extractor ex = fast.create_extractor();
      ex.set_num_threads(threads);
      ex.set_observer([&](const kestrel::LayerEvent& e) {
        kernel[e.layer_name] = e.kernel;
        if (std::string(e.layer_type) == "HalfConvert") converts.insert(e.layer_name);
      });
      REQUIRE(ex.input("data", in).ok());
      kestrel::Mat got, want;
      REQUIRE(ex.extract(blob, got).ok());
      kestrel::Extractor ox = oracle.create_extractor();
      REQUIRE(ox.input("data", in).ok());
      REQUIRE(ox.extract(blob, want).ok());
      REQUIRE(got.shape() == want.shape());
      // Without fp16 arithmetic the fp32 convolutions' results are rounded: within fp16's
      // error, no exact match.
      if (fp16_arith()) {
        CHECK(kt::same_bits(got, want));
      } else {
        CHECK(kt::relative_error(got, want) < 0.02);
      }
    }
  }
  if (!fp16_arith()) {
    for (const auto& entry : kernel) {
      CHECK_MESSAGE(entry.second.rfind("f16_", 0) != 0, entry.first << " ran " << entry.second);
    }
    CHECK(converts.empty());
    MESSAGE("no fp16 arithmetic on this CPU: the adds stay fp32, no layer re-targeted to halves");
    return;
  }
  CHECK(kernel["add"] == "f16_binary_neonfp16[h8>h8]");
  CHECK(kernel["sum"] == "f16_eltwise_neonfp16[h8>h8]");
  CHECK(kernel["max"] == "f16_eltwise_neonfp16[h8>h8]");
  CHECK(kernel["sub"] == "f16_binary_neonfp16[h1>h1]");
  CHECK(kernel["leaky"] == "f32_binary_neon");
  CHECK(kernel["weighted"] == "f32_eltwise_neon");
  // The conversions: the input to halves, the fp16 outputs widened, and the fp32
  // layers' inputs; none for the adds on halves.
  const std::set<std::string> expected = {"data@fp16", "d@fp32",   "sub@fp32", "a@fp32",
                                          "b@fp32",    "c@fp32"};
  std::ostringstream seen;
  for (const std::string& c : converts) seen << c << " ";
  INFO("conversions: " << seen.str());
  CHECK(converts == expected);
}

// BlazeFace's residual: the add reads the map a depthwise layer read before, runs in
// place over it, on planes of 16,384 pixels (several pieces per plane), only the net's
// output extracted (so that nothing keeps the intermediate maps alive).
// The stem stays fp32 (3x3 and 5x5): on halves, so its fma chains equal the oracle's
// separate multiplies and adds (net_precision.h, fp32_stem).
TEST_CASE("fp16 binary: a residual add in place on large planes, only the output extracted") {
  for (const std::pair<int, int>& size : {std::pair{128, 3}, std::pair{20, 3}, std::pair{20, 5}, std::pair{37, 7}}) {
    // Named copies: clang's C++17 lambdas (CAPTURE) cannot capture structured bindings.
    const int hw = size.first, k = size.second;
    CAPTURE(hw);
    CAPTURE(k);
    kestrel::ModelBuilder b;
    b.add_input("data", {3, hw, hw});
    kt::add_conv(b, "a", "data", 3, 24, k);
    kt::add_depthwise(b, "dw", "a", 24, 1, 5);
    kt::add_conv(b, "b", "dw", 24, 24, 1);
    b.add_layer("BinaryOp", "add", {"a", "b"}, {"add"}, binary_params(BinaryOpType::Add, false, ActivationType::ReLU));
    kt::add_conv(b, "c", "add", 24, 8, 1);
    b.add_output("c");
    kestrel::Net oracle, fast;
    oracle.option().kernels = kestrel::KernelSet::kReference;
    for (kestrel::Net* net : {&oracle, &fast}) net->option().precision = kestrel::Precision::kFp16;
    REQUIRE(kt::load(oracle, b).ok());
    REQUIRE(kt::load(fast, b).ok());
    const kestrel::Mat in = kt::random_input(fast, "data", 29);
    kestrel::Extractor ex = fast.create_extractor();
    kestrel::Extractor ox = oracle.create_extractor();
    REQUIRE(ex.input("data", in).ok());
    REQUIRE(ox.input("data", in).ok());
    kestrel::Mat got, want;
    REQUIRE(ex.extract("c", got).ok());
    REQUIRE(ox.extract("c", want).ok());
    if (fp16_arith()) {
      CHECK(kt::same_bits(got, want));
    } else {
      CHECK(kt::relative_error(got, want) < 0.02);
    }
  }
}

}  // TEST_SUITE("precision")
