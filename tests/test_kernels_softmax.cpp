// Every softmax kernel of the registry against kernels::softmax_reference on seeded
// random [outer0][outer1][len][inner] blobs (the axis innermost, or an outer axis
// with 1 to 40 contiguous lines beside it; padded outer strides as channels have;
// Softmax and LogSoftmax; in place), with 1 and 4 threads; lines whose values are a
// stride apart with nothing beside them (the channels of a [C][1][1] map); then the
// Softmax layer on every axis of 1-D to 4-D blobs with both kernel sets.
#include <map>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/softmax_kernels.h"
#include "layer_test_util.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::kernels::SoftmaxGeometry;
using kestrel::kernels::SoftmaxKernel;
using kestrel::kernels::SoftmaxStrides;

std::string describe(const SoftmaxGeometry& g, const SoftmaxStrides& s) {
  std::ostringstream o;
  o << (g.log ? "log " : "") << "[" << g.outer0 << "][" << g.outer1 << "][" << g.len << "][" << g.inner
    << "] strides " << s.outer0 << "," << s.outer1 << "," << s.axis;
  return o.str();
}

struct SoftmaxCase {
  SoftmaxGeometry g;
  SoftmaxStrides s;
  float range;  // inputs uniform in [-range, range]
};

std::vector<SoftmaxCase> sweep() {
  std::mt19937 rng(20261125);
  const int lens[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 21, 32, 33, 100, 1000};
  const int inners[] = {1, 1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 40};
  const int outers[] = {1, 1, 2, 3, 5};
  auto pick = [&](const auto& v) { return v[rng() % (sizeof(v) / sizeof(v[0]))]; };
  std::vector<SoftmaxCase> out;
  for (int i = 0; i < 400; ++i) {
    SoftmaxCase c;
    c.g.outer0 = pick(outers);
    c.g.outer1 = pick(outers);
    c.g.len = pick(lens);
    c.g.inner = pick(inners);
    if (size_t(c.g.len) * c.g.inner > 4000) c.g.len = 1 + int(rng() % 30);
    c.g.log = rng() % 3 == 0;
    // Dense inside an outer0 block, which is padded to a multiple of 16 floats plus
    // some, as a channel's cstep is.
    c.s.axis = size_t(c.g.inner);
    c.s.outer1 = size_t(c.g.len) * c.g.inner;
    c.s.outer0 = (c.s.outer1 * c.g.outer1 + 15) / 16 * 16 + 16 * (rng() % 2);
    c.range = rng() % 4 == 0 ? 100.f : 5.f;
    out.push_back(c);
  }
  return out;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("softmax kernels match softmax_reference") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::softmax_kernels());
    MESSAGE("active ISA " << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa())) << ", "
                          << kernels.size() << " of " << kestrel::kernels::softmax_kernels().size() << " "
                          << "softmax kernels runnable");
    std::map<std::string, int> tested;
    std::mt19937 rng(16);
    for (const SoftmaxCase& c : sweep()) {
      const SoftmaxGeometry& g = c.g;
      std::vector<const SoftmaxKernel*> claim;
      for (const SoftmaxKernel* k : kernels) {
        if (k->supports(g)) claim.push_back(k);
      }
      if (claim.empty()) continue;
      const size_t total = c.s.outer0 * g.outer0;
      // The gaps between outer0 blocks hold NaN in the input (reading them shows)
      // and the sentinel in the outputs (writing them shows).
      kt::GuardedArray in(total, rng() % 4, NAN);
      std::fill(in.data(), in.data() + total, NAN);
      std::uniform_real_distribution<float> d(-c.range, c.range);
      const size_t block = c.s.outer1 * g.outer1;
      for (int o = 0; o < g.outer0; ++o) {
        for (size_t i = 0; i < block; ++i) in.data()[o * c.s.outer0 + i] = d(rng);
      }
      kt::GuardedArray ref(total);
      kestrel::kernels::softmax_reference(g, in.data(), c.s, ref.data(), c.s, 1);
      for (const SoftmaxKernel* k : claim) {
        for (int threads : kt::kernel_thread_counts()) {
          for (bool in_place : {false, true}) {
            INFO(std::string(k->name) << ": " << describe(g, c.s) << " threads " << threads
                                      << (in_place ? " in place" : ""));
            kt::GuardedArray out(total, rng() % 4), src = in;
            float* dst = in_place ? src.data() : out.data();
            kt::KernelScratch scratch;
            k->run(g, src.data(), c.s, dst, c.s, scratch.make(0, 0, threads));
            double err = 0;
            for (int o = 0; o < g.outer0; ++o) {
              err = std::max(err, kt::relative_error(dst + o * c.s.outer0, ref.data() + o * c.s.outer0, block));
            }
            CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
            if (!in_place) {
              bool gaps = out.guards_untouched();
              for (int o = 0; o < g.outer0; ++o) {
                for (size_t i = block; i < c.s.outer0; ++i) gaps = gaps && dst[o * c.s.outer0 + i] == kt::kSentinel;
              }
              CHECK_MESSAGE(gaps, "wrote outside the blob's values");
            }
            CHECK(src.guards_untouched());
          }
        }
        tested[k->name]++;
      }
    }
    for (const SoftmaxKernel* k : kernels) {
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no geometry of the sweep was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " geometries");
    }
  }

  TEST_CASE("softmax kernels on lines of values a stride apart ([C][1][1] maps)") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::softmax_kernels());
    std::mt19937 rng(18);
    int runs = 0;
    for (int len : {1, 2, 3, 4, 5, 7, 8, 17, 100, 1000}) {
      for (size_t stride : {2, 4, 16, 17}) {
        for (int lines : {1, 3}) {
          for (bool log : {false, true}) {
            SoftmaxGeometry g;
            g.outer1 = lines;
            g.len = len;
            g.log = log;
            SoftmaxStrides s;
            s.axis = stride;
            s.outer1 = stride * len + 3;
            const size_t total = s.outer1 * lines;
            // NaN between the values: a kernel that reads them shows it.
            std::vector<float> in(total, NAN);
            std::uniform_real_distribution<float> d(-20.f, 20.f);
            const auto at = [&](int l, int i) { return l * s.outer1 + i * stride; };
            for (int l = 0; l < lines; ++l) {
              for (int i = 0; i < len; ++i) in[at(l, i)] = d(rng);
            }
            std::vector<float> ref(total, kt::kSentinel);
            kestrel::kernels::softmax_reference(g, in.data(), s, ref.data(), s, 1);
            for (const SoftmaxKernel* k : kernels) {
              if (!k->supports(g)) continue;
              for (int threads : kt::kernel_thread_counts()) {
                for (bool in_place : {false, true}) {
                  INFO(std::string(k->name) << ": " << describe(g, s) << " threads " << threads
                                            << (in_place ? " in place" : ""));
                  kt::GuardedArray out(total), src(total, 0, NAN);
                  std::copy(in.begin(), in.end(), src.data());
                  float* dst = in_place ? src.data() : out.data();
                  kt::KernelScratch scratch;
                  k->run(g, src.data(), s, dst, s, scratch.make(0, 0, threads));
                  std::vector<float> got, want;
                  bool gaps = out.guards_untouched() && src.guards_untouched();
                  for (size_t i = 0; i < total; ++i) {
                    const bool value = i % s.outer1 % stride == 0 && i % s.outer1 / stride < size_t(len);
                    if (value) {
                      got.push_back(dst[i]);
                      want.push_back(ref[i]);
                    } else {
                      gaps = gaps && (in_place ? std::isnan(dst[i]) : dst[i] == kt::kSentinel);
                    }
                  }
                  const double err = kt::relative_error(got.data(), want.data(), got.size());
                  CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
                  CHECK_MESSAGE(gaps, "wrote between the line's values or outside the blob");
                  ++runs;
                }
              }
            }
          }
        }
      }
    }
    MESSAGE(runs << " strided-line runs");
  }

  TEST_CASE("the reference kernel set and KESTREL_ISA=ref select no softmax kernel") {
    CHECK(kestrel::kernels::select_softmax_kernel(SoftmaxGeometry{}, kestrel::kernels::Isa::kRef) == nullptr);
  }

  TEST_CASE("Softmax layer: every axis, both kernel sets, 1 and 4 threads") {
    const Shape shapes[] = {Shape::make1(1000), Shape::make2(21, 6), Shape::make3(7, 5, 21),
                            Shape::make4(3, 4, 5, 6), Shape::make3(1, 1, 10)};
    std::mt19937 rng(17);
    int checks = 0;
    for (const Shape& s : shapes) {
      for (int axis = -1; axis < s.dims; ++axis) {
        for (bool log : {false, true}) {
          INFO("dims " << s.dims << " axis " << axis << (log ? " log" : ""));
          kestrel::fb::SoftmaxParamT p;
          p.axis = axis;
          p.log = log;
          lt::Harness h("Softmax", p);
          REQUIRE(h.load.ok());
          const Mat in = lt::make_mat(s, lt::random_values(s.total(), rng, -6.f, 6.f));
          checks += kt::check_layer_kernel_sets(*h.layer, {in}, 1e-4);
        }
      }
    }
    CHECK(checks == 2 * 2 * (2 + 3 + 4 + 5 + 4));
  }
}
