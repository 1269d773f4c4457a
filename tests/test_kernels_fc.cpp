// Every inner-product kernel of the registry against kernels::fc_reference on seeded
// random geometries (output counts around the 8-output block, inputs as one run or
// as padded channel planes of odd sizes, with and without bias, every activation),
// with 1 and 4 threads; then the InnerProduct layer with both kernel sets.
#include <map>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/fc_kernels.h"
#include "layer_test_util.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::ActivationType;
using kestrel::kernels::FcGeometry;
using kestrel::kernels::FcKernel;

std::string describe(const FcGeometry& g, const Shape& in) {
  std::ostringstream o;
  o << "in dims " << in.dims << " [" << in.c << "," << in.h << "," << in.w << "] (" << g.in_planes << " x "
    << g.in_plane << ") -> " << g.num_output << (g.bias ? " bias" : "") << " act " << int(g.act.type);
  return o.str();
}

kestrel::ActivationSpec random_activation(std::mt19937& rng) {
  kestrel::ActivationSpec a;
  const int t = int(rng() % 14);
  a.type = t > 10 ? ActivationType::None : ActivationType(t);
  a.alpha = a.type == ActivationType::Clip ? -0.5f : a.type == ActivationType::HardSigmoid ? 0.2f : 0.1f;
  a.beta = a.type == ActivationType::Clip ? 0.75f : 0.5f;
  return a;
}

struct FcCase {
  FcGeometry g;
  Shape in;
};

std::vector<FcCase> sweep() {
  std::mt19937 rng(20261124);
  const int outputs[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 33, 100};
  const int extents[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31};
  auto pick = [&](const auto& v) { return v[rng() % (sizeof(v) / sizeof(v[0]))]; };
  std::vector<FcCase> out;
  for (int i = 0; i < 300; ++i) {
    FcCase c;
    switch (rng() % 3) {
      case 0: c.in = Shape::make1(pick(extents) * pick(extents)); break;
      case 1: c.in = Shape::make2(pick(extents), pick(extents)); break;
      default: c.in = Shape::make3(pick(extents), pick(extents), pick(extents)); break;
    }
    c.g.in_planes = c.in.dims >= 3 ? c.in.c : 1;
    c.g.in_plane = size_t(c.in.w) * c.in.h;
    c.g.num_output = pick(outputs);
    c.g.bias = rng() % 3 != 0;
    c.g.act = random_activation(rng);
    out.push_back(c);
  }
  // Classifier heads: MobileNet's 1024 -> 1000 (reduced), a flattened 7x7 map.
  FcCase c;
  c.in = Shape::make3(1, 1, 1024);
  c.g.in_planes = 1024, c.g.in_plane = 1, c.g.num_output = 100, c.g.bias = true;
  out.push_back(c);
  c.in = Shape::make3(7, 7, 32);
  c.g.in_planes = 32, c.g.in_plane = 49, c.g.num_output = 20;
  c.g.act.type = ActivationType::ReLU;
  out.push_back(c);
  return out;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("inner-product kernels match fc_reference") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::fc_kernels());
    MESSAGE("active ISA " << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa())) << ", "
                          << kernels.size() << " of " << kestrel::kernels::fc_kernels().size() << " "
                          << "inner-product kernels runnable");
    std::map<std::string, int> tested;
    std::mt19937 rng(9);
    // Each case again with weights that are halves, where a half-weight kernel claims
    // it: those kernels must equal their fp32 twins bit for bit.
    for (const FcCase& c : sweep()) for (bool halves : {false, true}) {
      FcGeometry g = c.g;
      g.half_weights = halves;
      std::vector<const FcKernel*> claim;
      bool half_kernel = false;
      for (const FcKernel* k : kernels) {
        if (!k->supports(g)) continue;
        claim.push_back(k);
        half_kernel = half_kernel || k->half_weights;
      }
      if (claim.empty() || (halves && !half_kernel)) continue;
      Mat in;
      REQUIRE(in.create(c.in));
      std::fill(in.data, in.data + in.total(), NAN);  // channel padding: reading it shows
      kt::fill_random(in, rng);
      std::vector<float> w = kt::random_vector(size_t(g.num_output) * g.num_input(), rng);
      if (halves) w = kt::rounded_to_halves(w);
      const std::vector<float> b = kt::random_vector(g.num_output, rng);
      const float* bias = g.bias ? b.data() : nullptr;
      kt::GuardedArray ref(g.num_output);
      kestrel::kernels::fc_reference(g, w.data(), bias, in.data, in.cstep, ref.data(), 1);
      for (const FcKernel* k : claim) {
        INFO(std::string(k->name) << ": " << describe(g, c.in));
        Mat packed;
        REQUIRE(packed.create(Shape::make1(int(k->packed_floats(g)) + 1)));
        k->pack(g, w.data(), bias, packed.data);
        for (int threads : kt::kernel_thread_counts()) {
          INFO("threads " << threads);
          kt::GuardedArray out(g.num_output);
          kt::KernelScratch scratch;
          const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
          k->run(g, packed.data, in.data, in.cstep, out.data(), ctx);
          const double err = kt::relative_error(out.data(), ref.data(), g.num_output);
          CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
          CHECK_MESSAGE(out.guards_untouched(), "wrote outside the output");
          if (const FcKernel* twin = k->half_weights ? kt::fp32_twin(kernels, k) : nullptr) {
            Mat twin_packed;
            REQUIRE(twin_packed.create(Shape::make1(int(twin->packed_floats(g)) + 1)));
            twin->pack(g, w.data(), bias, twin_packed.data);
            kt::GuardedArray twin_out(g.num_output);
            kt::KernelScratch twin_scratch;
            twin->run(g, twin_packed.data, in.data, in.cstep, twin_out.data(),
                      twin_scratch.make(twin->workspace_bytes(g), twin->workspace_per_thread_bytes(g), threads));
            INFO("against " << std::string(twin->name));
            CHECK(kt::same_bits(twin_out.data(), out.data(), g.num_output));
          }
        }
        tested[k->name]++;
      }
    }
    for (const FcKernel* k : kernels) {
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no geometry of the sweep was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " geometries");
      if (k->half_weights) CHECK_MESSAGE(kt::fp32_twin(kernels, k) != nullptr, "no fp32 twin runnable");
    }
  }

  TEST_CASE("the reference kernel set and KESTREL_ISA=ref select no inner-product kernel") {
    FcGeometry g;
    g.in_plane = 16;
    g.num_output = 8;
    CHECK(kestrel::kernels::select_fc_kernel(g, kestrel::kernels::Isa::kRef) == nullptr);
  }

  TEST_CASE("InnerProduct layer: both kernel sets, 1 and 4 threads") {
    std::mt19937 rng(91);
    const Shape shapes[] = {Shape::make1(37), Shape::make2(5, 3), Shape::make3(3, 3, 11), Shape::make3(1, 1, 64)};
    int checks = 0;
    for (const Shape& s : shapes) {
      for (int num_output : {1, 9, 20}) {
        INFO("input dims " << s.dims << " total " << s.total() << " -> " << num_output);
        const int n_in = int(s.total());
        kestrel::fb::InnerProductParamT p;
        p.num_output = num_output;
        p.bias_term = num_output != 9;
        p.activation = lt::act(num_output == 20 ? lt::AT::Sigmoid : lt::AT::ReLU);
        const lt::Tensor w = lt::random_tensor({num_output, n_in}, rng);
        const lt::Tensor b = lt::random_tensor({num_output}, rng);
        std::vector<kestrel::WeightView> views{lt::view(w)};
        if (p.bias_term) views.push_back(lt::view(b));
        lt::Harness h("InnerProduct", std::move(p), views);
        REQUIRE(h.load.ok());
        const Mat in = lt::make_mat(s, lt::random_values(s.total(), rng));
        checks += kt::check_layer_kernel_sets(*h.layer, {in}, 1e-4);
      }
    }
    CHECK(checks == 2 * 4 * 3);
  }
}
