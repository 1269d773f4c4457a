// Permute against the index mapping it stands for: every order of 2-D, 3-D and 4-D
// blobs whose extents are and are not multiples of 4 (the tiled plane transpose and
// its edges, the strided copy where no axis is contiguous), 1 and 4 threads; and the
// channels-last order (1, 2, 0) reading channel-blocked maps of 4, 8 and 16 lanes
// (Layer::set_packs, SSD's heads), which every other layout and order refuse.
#include <algorithm>
#include <numeric>
#include <string>

#include "layer_test_util.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;

// The values of `in` (logical order, extents e) permuted by `order`, in logical order.
std::vector<float> permuted(const std::vector<float>& in, const std::vector<int>& e, const std::vector<int>& order) {
  const int n = static_cast<int>(e.size());
  std::vector<size_t> stride(n, 1);
  for (int i = n - 2; i >= 0; --i) stride[i] = stride[i + 1] * e[i + 1];
  std::vector<int> oe(n), idx(n, 0);
  for (int i = 0; i < n; ++i) oe[i] = e[order[i]];
  std::vector<float> out;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t at = 0;
    for (int i = 0; i < n; ++i) at += idx[i] * stride[order[i]];
    out.push_back(in[at]);
    for (int i = n - 1; i >= 0 && ++idx[i] == oe[i]; --i) idx[i] = 0;
  }
  return out;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

Shape shape_of(const std::vector<int>& e) {
  switch (e.size()) {
    case 2: return Shape::make2(e[1], e[0]);
    case 3: return Shape::make3(e[2], e[1], e[0]);
    default: return Shape::make4(e[3], e[2], e[1], e[0]);
  }
}

}  // namespace

TEST_SUITE("layers") {
  TEST_CASE("Permute matches the index mapping for every order") {
    const std::vector<std::vector<int>> shapes = {{5, 7},        {8, 4},       {12, 19, 19}, {21, 3, 3},
                                                  {4, 8, 12},    {1, 5, 6},    {3, 1, 1},    {6, 5, 4, 3},
                                                  {4, 4, 8, 5}, {7, 2, 9, 1}};
    std::mt19937 rng(25);
    int runs = 0;
    for (const std::vector<int>& e : shapes) {
      std::vector<int> order(e.size());
      std::iota(order.begin(), order.end(), 0);
      do {
        kestrel::fb::PermuteParamT p;
        p.order = order;
        lt::Harness h("Permute", p);
        REQUIRE(h.load.ok());
        const Shape s = shape_of(e);
        const std::vector<float> values = lt::random_values(s.total(), rng);
        const Mat in = lt::make_mat(s, values);
        const std::vector<float> want = permuted(values, e, order);
        for (int threads : {1, 4}) {
          INFO("extents " << join(e) << " order " << join(order) << " threads " << threads);
          CHECK(lt::same_bits(lt::logical(h.run({in}, threads)), want));
          ++runs;
        }
      } while (std::next_permutation(order.begin(), order.end()));
    }
    CHECK(runs == 2 * (2 * 2 + 5 * 6 + 3 * 24));
  }

  TEST_CASE("Permute (1, 2, 0) reads channel-blocked maps: the planar result, bit for bit") {
    std::mt19937 rng(26);
    int runs = 0;
    for (const std::vector<int>& e : {std::vector<int>{16, 19, 19}, {48, 3, 5}, {32, 1, 1}, {16, 2, 7}}) {
      kestrel::fb::PermuteParamT p;
      p.order = {1, 2, 0};
      lt::Harness h("Permute", p);
      REQUIRE(h.load.ok());
      const Shape s = shape_of(e);
      const std::vector<float> values = lt::random_values(s.total(), rng);
      const Mat in = lt::make_mat(s, values);
      const std::vector<float> want = permuted(values, e, p.order);
      REQUIRE(h.prepare({s}).ok());
      CHECK_FALSE(h.layer->set_packs(4, 4, true, true));  // the output stays planar
      for (int pack : {4, 8, 16}) {
        if (e[0] % pack != 0) continue;
        REQUIRE(h.layer->set_packs(pack, 1, true, false));
        const Mat blocked = kestrel::convert_packing(in, pack);
        REQUIRE(blocked.elempack == pack);
        for (int threads : {1, 4}) {
          INFO("extents " << join(e) << " lanes " << pack << " threads " << threads);
          std::vector<Mat> out(1);
          REQUIRE(out[0].create(h.out_shapes[0]));
          h.forward({blocked}, out, threads);
          CHECK(lt::same_bits(lt::logical(out[0]), want));
          ++runs;
        }
      }
    }
    CHECK(runs == 2 * (3 + 3 + 3 + 3));
    // Any other order keeps its input planar.
    kestrel::fb::PermuteParamT p;
    p.order = {2, 0, 1};
    lt::Harness other("Permute", p);
    REQUIRE(other.prepare({Shape::make3(4, 4, 8)}).ok());
    CHECK(other.layer->set_packs(1, 1, true, true));
    CHECK_FALSE(other.layer->set_packs(4, 1, true, true));
  }
}
