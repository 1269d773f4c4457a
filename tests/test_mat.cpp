#include <cstdint>

#include "test_util.h"

using kestrel::Mat;
using kestrel::Shape;

namespace {

class FailingAllocator final : public kestrel::Allocator {
 public:
  void* allocate(size_t) override { return nullptr; }
  void deallocate(void*) override {}
};

}  // namespace

TEST_SUITE("mat") {
  TEST_CASE("channels are 64-byte aligned and padded") {
    for (int w : {1, 3, 7, 16, 17}) {
      Mat m(w, 5, 3);
      REQUIRE(!m.empty());
      CHECK(reinterpret_cast<uintptr_t>(m.data) % kestrel::kAlignment == 0);
      CHECK(m.cstep * sizeof(float) % kestrel::kAlignment == 0);
      CHECK(m.cstep >= size_t(w) * 5);
      CHECK(reinterpret_cast<uintptr_t>(m.channel(2)) % kestrel::kAlignment == 0);
    }
    Mat v(13);
    CHECK(v.cstep == 13);
    Mat p(5, 4);
    CHECK(p.cstep == 20);
  }

  TEST_CASE("copies share data and the last release frees once") {
    kt::CountingAllocator alloc;
    {
      Mat a(8, 8, 4, &alloc);
      a.fill(2.f);
      Mat b = a;
      CHECK(b.data == a.data);
      CHECK(a.refcount_value() == 2);
      Mat c = std::move(b);
      CHECK(c.refcount_value() == 2);
      CHECK(b.data == nullptr);
      a.release();
      CHECK(c.refcount_value() == 1);
      CHECK(alloc.deallocations == 0);
      CHECK(c.channel(3)[63] == 2.f);
    }
    CHECK(alloc.allocations == 1);
    CHECK(alloc.deallocations == 1);
  }

  TEST_CASE("clone is deep; external data is never freed") {
    Mat a = kt::random_mat(Shape::make3(5, 3, 2), 1);
    Mat b = a.clone();
    CHECK(b.data != a.data);
    CHECK(kt::same_bits(a, b));
    b.channel(1)[0] += 1.f;
    CHECK(!kt::same_bits(a, b));

    std::vector<float> buf(30, 1.5f);
    Mat e = Mat::external(Shape::make3(5, 3, 2), buf.data(), 15);
    CHECK(e.cstep == 15);
    CHECK(e.channel(1)[14] == 1.5f);
    Mat ec = e.clone();
    CHECK(ec.cstep != e.cstep);
    CHECK(kt::same_bits(e, ec));
    e.release();
    CHECK(buf[0] == 1.5f);
  }

  TEST_CASE("allocation failure and overflow leave the Mat empty") {
    FailingAllocator fail;
    Mat m;
    CHECK_FALSE(m.create(Shape::make3(4, 4, 4), &fail));
    CHECK(m.empty());
    CHECK_FALSE(m.create(Shape::make3(1 << 30, 1 << 30, 1 << 30)));
    CHECK(m.empty());
    CHECK(Shape::make3(1 << 30, 1 << 30, 1 << 30).bytes() == 0);
  }

  TEST_CASE("reshape shares memory only where the layout allows") {
    Mat flat = kt::random_mat(Shape::make1(24), 3);
    Mat r = flat.reshape(Shape::make2(6, 4));
    REQUIRE(!r.empty());
    CHECK(r.data == flat.data);
    CHECK(r.row(3)[5] == flat[23]);
    Mat padded(3, 3, 2);  // channel padding: 9 floats in a 16-float cstep
    CHECK(padded.reshape(Shape::make1(18)).empty());
    CHECK(flat.reshape(Shape::make1(25)).empty());
  }

  TEST_CASE("convert_packing interleaves channels and round-trips") {
    for (int pack : {4, 8, 16}) {
      const int channels = pack * 2;
      Mat src = kt::random_mat(Shape::make3(7, 3, channels), static_cast<uint32_t>(pack));
      Mat packed = kestrel::convert_packing(src, pack);
      REQUIRE(!packed.empty());
      CHECK(packed.elempack == pack);
      CHECK(packed.c == 2);
      CHECK(packed.channels() == channels);
      for (int k = 0; k < channels; ++k) {
        for (int i = 0; i < 21; ++i) {
          REQUIRE(packed.channel(k / pack)[i * pack + k % pack] == src.channel(k)[i]);
        }
      }
      Mat back = kestrel::convert_packing(packed, 1);
      CHECK(kt::same_bits(back, src));
    }
    Mat odd(4, 4, 6);
    CHECK(kestrel::convert_packing(odd, 4).empty());
    CHECK(kestrel::convert_packing(odd, 3).empty());
  }
}
