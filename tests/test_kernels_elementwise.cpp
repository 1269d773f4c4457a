// Every elementwise kernel (binary ops, Eltwise folds, activations, the affine map)
// against its family's reference on every op, form and activation, array lengths
// around the vector and unroll widths, misaligned and in-place operands, NaN and
// infinities where the reference defines them; the guards around every array catch
// reads (NaN) and writes (sentinel) outside it. Then the layers that run these
// kernels (BinaryOp with its broadcasting, Eltwise, Activation, PReLU, BatchNorm,
// Scale) with both kernel sets and 1 and 4 threads, and on aarch64 the accuracy of
// the NEON exp and erf.
#include <map>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/elementwise_kernels.h"
#include "layer_test_util.h"
#include "layers/layers.h"

#if defined(__aarch64__)
#include "arm/neon_math.h"
#endif

namespace {

using kestrel::ActivationSpec;
using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::ActivationType;
using kestrel::fb::BinaryOpType;
using kestrel::fb::EltwiseOp;
using kestrel::kernels::BinaryForm;
using namespace kestrel::kernels;

const size_t kLengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 257};

// Every activation type with the parameters networks use.
std::vector<ActivationSpec> all_activations() {
  std::vector<ActivationSpec> v;
  for (int t = 0; t <= int(ActivationType::MAX); ++t) {
    ActivationSpec a;
    a.type = ActivationType(t);
    switch (a.type) {
      case ActivationType::LeakyReLU: a.alpha = 0.1f; break;
      case ActivationType::Clip: a.alpha = -0.5f, a.beta = 6.f; break;
      case ActivationType::HardSigmoid: a.alpha = 0.2f, a.beta = 0.5f; break;
      case ActivationType::ELU: a.alpha = 1.3f; break;
      default: break;
    }
    v.push_back(a);
  }
  // HardSwish as TensorFlow graphs write it: (x * alpha) * clamp(x + 3, 0, 6), alpha
  // their fp16 1/6.
  ActivationSpec tf_swish;
  tf_swish.type = ActivationType::HardSwish;
  tf_swish.alpha = 0.1666259765625f;
  v.push_back(tf_swish);
  return v;
}

bool exact_activation(ActivationType t) {
  return t == ActivationType::None || t == ActivationType::ReLU || t == ActivationType::LeakyReLU ||
         t == ActivationType::Clip || t == ActivationType::HardSwish;
}

// Input values: mostly uniform in [lo, hi], now and then a value from `specials`.
void fill(float* p, size_t n, std::mt19937& rng, float lo, float hi, const std::vector<float>& specials = {}) {
  std::uniform_real_distribution<float> d(lo, hi);
  for (size_t i = 0; i < n; ++i) {
    p[i] = d(rng);
    if (!specials.empty() && rng() % 8 == 0) p[i] = specials[rng() % specials.size()];
  }
}

std::string act_name(const ActivationSpec& a) { return kestrel::fb::EnumNameActivationType(a.type); }

// The runnable kernels on floats: those for halves have their suite (test_kernels_f16_binary.cpp).
template <class K>
std::vector<const K*> runnable_fp32(const std::vector<const K*>& all) {
  std::vector<const K*> r;
  for (const K* k : kt::runnable_kernels(all)) {
    if (!k->f16) r.push_back(k);
  }
  return r;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("binary kernels match binary_reference") {
    const auto kernels = runnable_fp32(binary_kernels());
    MESSAGE(kernels.size() << " of " << binary_kernels().size() << " binary kernels runnable");
    std::map<std::string, int> tested;
    std::mt19937 rng(10);
    const BinaryForm forms[] = {BinaryForm::kArrayArray, BinaryForm::kArrayScalar, BinaryForm::kScalarArray};
    for (int op = 0; op <= int(BinaryOpType::MAX); ++op) {
      for (BinaryForm form : forms) {
        for (const ActivationSpec& act : all_activations()) {
          for (size_t n : kLengths) {
            BinaryGeometry g;
            g.op = BinaryOpType(op);
            g.form = form;
            g.act = act;
            std::vector<const BinaryKernel*> claim;
            for (const BinaryKernel* k : kernels) {
              if (k->supports(g)) claim.push_back(k);
            }
            if (claim.empty()) continue;
            const size_t na = form == BinaryForm::kScalarArray ? 1 : n, nb = form == BinaryForm::kArrayScalar ? 1 : n;
            kt::GuardedArray a(na, rng() % 4, NAN), b(nb, rng() % 4, NAN);
            const bool nan_ops = g.op == BinaryOpType::Max || g.op == BinaryOpType::Min;
            const std::vector<float> specials = nan_ops ? std::vector<float>{NAN, 0.f, -0.f, INFINITY}
                                                        : std::vector<float>{};
            fill(a.data(), na, rng, -3.f, 3.f, specials);
            fill(b.data(), nb, rng, -3.f, 3.f, specials);
            if (g.op == BinaryOpType::Div || g.op == BinaryOpType::Pow) {
              // Divisors away from 0, positive bases for pow.
              for (size_t i = 0; i < nb; ++i) b.data()[i] = (b.data()[i] < 0 ? -0.25f : 0.25f) + b.data()[i];
              if (g.op == BinaryOpType::Pow) {
                for (size_t i = 0; i < na; ++i) a.data()[i] = std::fabs(a.data()[i]) + 0.1f;
              }
            }
            kt::GuardedArray ref(n);
            binary_reference(g, a.data(), b.data(), ref.data(), n);
            for (const BinaryKernel* k : claim) {
              // 0: separate output; 1: over a; 2: over b (where that operand is an array).
              for (int place = 0; place < 3; ++place) {
                if ((place == 1 && na != n) || (place == 2 && nb != n)) continue;
                INFO(std::string(k->name) << ": op " << op << " form " << int(form) << " act " << act_name(act)
                                          << " n " << n << " place " << place);
                kt::GuardedArray out(n, rng() % 4), ca = a, cb = b;
                float* dst = place == 1 ? ca.data() : place == 2 ? cb.data() : out.data();
                k->run(g, ca.data(), cb.data(), dst, n);
                const double err = kt::relative_error(dst, ref.data(), n);
                CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
                if (g.op != BinaryOpType::Pow && exact_activation(act.type)) {
                  CHECK_MESSAGE(err == 0, "differs from the reference, relative error ", err);
                }
                CHECK(out.guards_untouched());
                CHECK(ca.guards_untouched());
                CHECK(cb.guards_untouched());
              }
              tested[k->name]++;
            }
          }
        }
      }
    }
    for (const BinaryKernel* k : kernels) {
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no case was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " cases");
    }
  }

  TEST_CASE("eltwise kernels match eltwise_reference") {
    const auto kernels = runnable_fp32(eltwise_kernels());
    MESSAGE(kernels.size() << " of " << eltwise_kernels().size() << " eltwise kernels runnable");
    std::map<std::string, int> tested;
    std::mt19937 rng(11);
    for (int op = 0; op <= int(EltwiseOp::MAX); ++op) {
      for (const ActivationSpec& act : all_activations()) {
        for (int count : {1, 2, 3, 4, 8}) {
          for (size_t n : kLengths) {
            EltwiseGeometry g;
            g.op = EltwiseOp(op);
            g.act = act;
            std::vector<const EltwiseKernel*> claim;
            for (const EltwiseKernel* k : kernels) {
              if (k->supports(g)) claim.push_back(k);
            }
            if (claim.empty()) continue;
            std::vector<kt::GuardedArray> inputs;
            std::vector<const float*> srcs;
            for (int i = 0; i < count; ++i) {
              inputs.emplace_back(n, rng() % 4, NAN);
              fill(inputs.back().data(), n, rng, -2.f, 2.f,
                   g.op == EltwiseOp::Max ? std::vector<float>{NAN, -INFINITY} : std::vector<float>{});
            }
            for (const kt::GuardedArray& in : inputs) srcs.push_back(in.data());
            const std::vector<float> coef_values = kt::random_vector(count, rng, -2.f, 2.f);
            const float* coef = g.op == EltwiseOp::Sum && rng() % 2 ? coef_values.data() : nullptr;
            kt::GuardedArray ref(n);
            eltwise_reference(g, srcs.data(), coef, count, ref.data(), n);
            for (const EltwiseKernel* k : claim) {
              for (bool in_place : {false, true}) {
                INFO(std::string(k->name) << ": op " << op << " act " << act_name(act) << " count " << count
                                          << " n " << n << (coef ? " coefficients" : "")
                                          << (in_place ? " in place" : ""));
                kt::GuardedArray out(n, rng() % 4), first = inputs[0];
                std::vector<const float*> s = srcs;
                s[0] = first.data();
                float* dst = in_place ? first.data() : out.data();
                k->run(g, s.data(), coef, count, dst, n);
                const double err = kt::relative_error(dst, ref.data(), n);
                CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
                if (g.op != EltwiseOp::Sum && exact_activation(act.type)) {
                  CHECK_MESSAGE(err == 0, "differs from the reference, relative error ", err);
                }
                CHECK(out.guards_untouched());
                CHECK(first.guards_untouched());
              }
              tested[k->name]++;
            }
          }
        }
      }
    }
    for (const EltwiseKernel* k : kernels) {
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no case was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " cases");
    }
  }

  TEST_CASE("activation kernels match activation_reference") {
    const auto kernels = kt::runnable_kernels(activation_kernels());
    MESSAGE(kernels.size() << " of " << activation_kernels().size() << " activation kernels runnable");
    std::map<std::string, int> tested;
    std::mt19937 rng(12);
    const std::vector<float> specials = {NAN, INFINITY, -INFINITY, 0.f, -0.f, 100.f, -100.f, 90.f, -90.f,
                                         1e-4f, -1e-4f, 1e-30f, 3.f, -3.f};
    for (const ActivationSpec& act : all_activations()) {
      for (size_t n : kLengths) {
        std::vector<const ActivationKernel*> claim;
        for (const ActivationKernel* k : kernels) {
          if (k->supports(act)) claim.push_back(k);
        }
        if (claim.empty()) continue;
        kt::GuardedArray in(n, rng() % 4, NAN);
        fill(in.data(), n, rng, -12.f, 12.f, specials);
        kt::GuardedArray ref(n);
        activation_reference(act, in.data(), ref.data(), n);
        for (const ActivationKernel* k : claim) {
          for (bool in_place : {false, true}) {
            INFO(std::string(k->name) << ": " << act_name(act) << " n " << n << (in_place ? " in place" : ""));
            kt::GuardedArray out(n, rng() % 4), src = in;
            float* dst = in_place ? src.data() : out.data();
            k->run(act, src.data(), dst, n);
            const double err = kt::relative_error(dst, ref.data(), n);
            CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
            if (exact_activation(act.type)) CHECK_MESSAGE(err == 0, "differs from the reference: ", err);
            CHECK(out.guards_untouched());
            CHECK(src.guards_untouched());
          }
          tested[k->name]++;
        }
      }
    }
    for (const ActivationKernel* k : kernels) {
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no case was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " cases");
    }
  }

  TEST_CASE("affine kernels match affine_reference") {
    const auto kernels = kt::runnable_kernels(affine_kernels());
    MESSAGE(kernels.size() << " of " << affine_kernels().size() << " affine kernels runnable");
    std::map<std::string, int> tested;
    std::mt19937 rng(13);
    for (size_t n : kLengths) {
      for (int rep = 0; rep < 4; ++rep) {
        kt::GuardedArray in(n, rng() % 4, NAN);
        fill(in.data(), n, rng, -5.f, 5.f);
        const float scale = kt::random_vector(1, rng, -3.f, 3.f)[0], shift = kt::random_vector(1, rng)[0];
        kt::GuardedArray ref(n);
        affine_reference(in.data(), ref.data(), n, scale, shift);
        for (const AffineKernel* k : kernels) {
          for (bool in_place : {false, true}) {
            INFO(std::string(k->name) << ": n " << n << (in_place ? " in place" : ""));
            kt::GuardedArray out(n, rng() % 4), src = in;
            float* dst = in_place ? src.data() : out.data();
            k->run(src.data(), dst, n, scale, shift);
            const double err = kt::relative_error(dst, ref.data(), n);
            CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
            CHECK(out.guards_untouched());
            CHECK(src.guards_untouched());
          }
          tested[k->name]++;
        }
      }
    }
    for (const AffineKernel* k : kernels) {
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no case was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " cases");
    }
  }

  TEST_CASE("the reference kernel set and KESTREL_ISA=ref select no elementwise kernel") {
    CHECK(select_binary_kernel(BinaryGeometry{}, Isa::kRef) == nullptr);
    CHECK(select_eltwise_kernel(EltwiseGeometry{}, Isa::kRef) == nullptr);
    CHECK(select_activation_kernel(ActivationSpec{}, Isa::kRef) == nullptr);
    CHECK(select_affine_kernel(Isa::kRef) == nullptr);
  }

#if defined(__aarch64__)
  TEST_CASE("NEON exp and erf against std::exp and std::erf") {
    using namespace kestrel::kernels::arm;
    double exp_rel = 0, erf_abs = 0;
    int points = 0;
    // Every result that is a normal float, and the erf range that matters.
    for (float x = -87.3f; x <= 88.7f; x += 0.0173f) {
      const float xs[4] = {x, x + 0.004f, x + 0.009f, x + 0.013f};
      float e[4], r[4];
      vst1q_f32(e, exp_ps(vld1q_f32(xs)));
      vst1q_f32(r, erf_ps(vld1q_f32(xs)));
      for (int l = 0; l < 4; ++l) {
        const double want = std::exp(double(xs[l]));
        if (want < 1.2e-38 || want > 3.4e38) continue;
        exp_rel = std::max(exp_rel, std::fabs(e[l] - want) / want);
        erf_abs = std::max(erf_abs, std::fabs(r[l] - std::erf(double(xs[l]))));
        ++points;
      }
    }
    MESSAGE("exp_ps: max relative error " << exp_rel << ", erf_ps: max absolute error " << erf_abs << " over "
                                          << points << " points");
    CHECK(points > 30000);
    CHECK(exp_rel < 3e-7);
    CHECK(erf_abs < 5e-7);
    // Overflow, underflow through the denormals, and the special values.
    const float xs[8] = {89.f, 1000.f, INFINITY, -104.f, -INFINITY, NAN, -100.f, 0.f};
    float e[8];
    vst1q_f32(e, exp_ps(vld1q_f32(xs)));
    vst1q_f32(e + 4, exp_ps(vld1q_f32(xs + 4)));
    CHECK(e[0] == INFINITY);
    CHECK(e[1] == INFINITY);
    CHECK(e[2] == INFINITY);
    CHECK(e[3] == 0.f);
    CHECK(e[4] == 0.f);
    CHECK(std::isnan(e[5]));
    CHECK(std::fabs(e[6] - std::exp(-100.f)) <= 2e-45);
    CHECK(e[7] == 1.f);
    const float es[4] = {INFINITY, -INFINITY, NAN, -0.f};
    float r[4];
    vst1q_f32(r, erf_ps(vld1q_f32(es)));
    CHECK(r[0] == 1.f);
    CHECK(r[1] == -1.f);
    CHECK(std::isnan(r[2]));
    CHECK(r[3] == 0.f);
  }
#endif

  TEST_CASE("BinaryOp layer: broadcasting forms with both kernel sets, 1 and 4 threads") {
    struct Case {
      std::vector<int> a, b;
    };
    const Case cases[] = {
        {{3, 5, 7}, {3, 5, 7}},    {{3, 5, 7}, {3, 1, 1}},  {{3, 5, 7}, {7}},         {{3, 5, 7}, {1, 5, 1}},
        {{5, 7}, {5, 1}},          {{4, 1, 6}, {1, 3, 1}},  {{2, 3, 4, 5}, {3, 1, 5}}, {{16, 1, 1}, {16, 1, 1}},
        {{20000}, {20000}},        {{20000}, {1}},          {{1}, {3, 9, 9}},         {{6, 1}, {6, 9000}},
    };
    std::mt19937 rng(14);
    int checks = 0;
    for (const Case& c : cases) {
      for (int op : {0, 1, 2, 3, 4, 5}) {
        INFO("a " << kestrel::layer_util::join_dims(c.a) << " b " << kestrel::layer_util::join_dims(c.b) << " op "
                  << op);
        kestrel::fb::BinaryOpParamT p;
        p.op = BinaryOpType(op);
        p.activation = lt::act(op == 2 ? lt::AT::SiLU : lt::AT::ReLU);
        lt::Harness h("BinaryOp", std::move(p));
        REQUIRE(h.load.ok());
        const Shape sa = lt::shape_of(c.a), sb = lt::shape_of(c.b);
        const Mat a = lt::make_mat(sa, lt::random_values(sa.total(), rng));
        std::vector<float> bv = lt::random_values(sb.total(), rng);
        for (float& x : bv) x += x < 0 ? -0.5f : 0.5f;  // divisors away from 0
        const Mat b = lt::make_mat(sb, bv);
        checks += kt::check_layer_kernel_sets(*h.layer, {a, b}, 1e-4);
        // Prepared above: the output has a's shape, so it may overwrite a.
        if (h.layer->supports_inplace()) checks += kt::check_layer_kernel_sets(*h.layer, {a, b}, 1e-4, true);
      }
    }
    // A constant weight operand and a scalar, each way round.
    for (bool reverse : {false, true}) {
      kestrel::fb::BinaryOpParamT p;
      p.op = BinaryOpType::Sub;
      p.with_scalar = true;
      p.scalar = 0.75f;
      p.reverse = reverse;
      lt::Harness hs("BinaryOp", std::move(p));
      const Mat a = lt::make_mat(Shape::make3(9, 5, 3), lt::random_values(135, rng));
      checks += kt::check_layer_kernel_sets(*hs.layer, {a}, 1e-4);
      kestrel::fb::BinaryOpParamT q;
      q.op = BinaryOpType::Div;
      q.reverse = reverse;
      const lt::Tensor w = lt::random_tensor({3, 1, 1}, rng);
      lt::Harness hw("BinaryOp", std::move(q), {lt::view(w)});
      checks += kt::check_layer_kernel_sets(*hw.layer, {a}, 1e-4);
    }
    CHECK(checks > 12 * 6 * 2);
  }

  TEST_CASE("Eltwise, Activation, PReLU, BatchNorm and Scale layers with both kernel sets") {
    std::mt19937 rng(15);
    int checks = 0;
    const Shape shapes[] = {Shape::make3(9, 5, 3), Shape::make1(20000), Shape::make2(33, 3), Shape::make3(1, 1, 40)};
    for (const Shape& s : shapes) {
      INFO("shape dims " << s.dims << " total " << s.total());
      const Mat x = lt::make_mat(s, lt::random_values(s.total(), rng, -3.f, 3.f));
      // Eltwise over 1 to 17 inputs (more than one pass of the layer's 8-input folds).
      for (int op = 0; op <= int(EltwiseOp::MAX); ++op) {
        for (int count : {1, 2, 3, 9, 17}) {
          INFO("eltwise op " << op << " count " << count);
          kestrel::fb::EltwiseParamT p;
          p.op = EltwiseOp(op);
          p.activation = lt::act(count == 3 ? lt::AT::TanH : lt::AT::Clip, -1.f, 2.f);
          if (op == 0 && count % 2) p.coefficients = kt::random_vector(count, rng, -1.5f, 1.5f);
          lt::Harness h("Eltwise", std::move(p));
          REQUIRE(h.load.ok());
          std::vector<Mat> inputs;
          for (int i = 0; i < count; ++i) {
            inputs.push_back(lt::make_mat(s, lt::random_values(s.total(), rng, op == 1 ? 0.5f : -2.f, 1.5f)));
          }
          checks += kt::check_layer_kernel_sets(*h.layer, inputs, 1e-4);
        }
      }
      for (const ActivationSpec& a : all_activations()) {
        INFO("activation " << act_name(a));
        kestrel::fb::ActivationParamT p;
        p.activation = lt::act(a.type, a.alpha, a.beta);
        lt::Harness h("Activation", std::move(p));
        checks += kt::check_layer_kernel_sets(*h.layer, {x}, 1e-4);
        checks += kt::check_layer_kernel_sets(*h.layer, {x}, 1e-4, true);
      }
      const int channels = s.dims >= 3 ? s.c : s.dims == 2 ? s.h : s.w;
      for (int count : {channels, 1}) {
        INFO("per-channel parameters: " << count);
        const lt::Tensor slope = lt::random_tensor({count}, rng);
        lt::Harness prelu("PReLU", kestrel::fb::PReLUParamT{}, {lt::view(slope)});
        checks += kt::check_layer_kernel_sets(*prelu.layer, {x}, 1e-4, true);
        kestrel::fb::ScaleParamT sp;
        sp.bias_term = count != 1;
        const lt::Tensor scale = lt::random_tensor({count}, rng), bias = lt::random_tensor({count}, rng);
        std::vector<kestrel::WeightView> sw{lt::view(scale)};
        if (sp.bias_term) sw.push_back(lt::view(bias));
        lt::Harness scale_layer("Scale", sp, sw);
        checks += kt::check_layer_kernel_sets(*scale_layer.layer, {x}, 1e-4);
      }
      lt::Tensor mean = lt::random_tensor({channels}, rng), var = lt::random_tensor({channels}, rng);
      for (float& v : var.data) v = std::fabs(v) + 0.1f;
      const lt::Tensor gamma = lt::random_tensor({channels}, rng), beta = lt::random_tensor({channels}, rng);
      lt::Harness bn("BatchNorm", kestrel::fb::BatchNormParamT{},
                     {lt::view(mean), lt::view(var), lt::view(gamma), lt::view(beta)});
      REQUIRE(bn.load.ok());
      checks += kt::check_layer_kernel_sets(*bn.layer, {x}, 1e-4, true);
    }
    CHECK(checks > 100);
  }
}
