#include <algorithm>
#include <random>

#include "core/memory_plan.h"
#include "test_util.h"

using kestrel::MemoryStrategy;

namespace {

// Bytes of one branch_net feature map: 4 channels of 8x8 floats (256 B, already
// 64-byte aligned per channel).
constexpr size_t kMap4 = 4 * 8 * 8 * sizeof(float);
constexpr size_t kMap8 = 2 * kMap4;

struct Trace {
  std::vector<std::string> layers;
  std::vector<size_t> in_use;
};

Trace trace_inference(kestrel::Extractor& ex, const kestrel::Mat& in, const char* target) {
  Trace t;
  ex.set_observer([&](const kestrel::LayerEvent& e) {
    t.layers.emplace_back(e.layer_name);
    t.in_use.push_back(e.in_use_bytes);
  });
  REQUIRE(ex.input("data", in).ok());
  kestrel::Mat out;
  const kestrel::Status s = ex.extract(target, out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  ex.set_observer(nullptr);
  return t;
}

// Runs `count` inferences and returns the system allocations each one made.
std::vector<long> allocations_per_inference(const kestrel::Net& net, MemoryStrategy strategy, bool light,
                                            int count) {
  kt::CountingAllocator counting;
  kestrel::Option opt = net.option();
  std::vector<long> per;
  kestrel::Net& mutable_net = const_cast<kestrel::Net&>(net);
  mutable_net.option().allocator = &counting;
  {
    kestrel::Extractor ex = net.create_extractor();
    ex.set_memory_strategy(strategy);
    ex.set_light_mode(light);
    const std::string in_name = net.input_names()[0];
    const std::string out_name = net.output_names()[0];
    kestrel::Mat out;
    for (int i = 0; i < count; ++i) {
      const kestrel::Mat in = kt::random_input(net, in_name, static_cast<uint32_t>(i));
      const long before = counting.allocations;
      REQUIRE(ex.input(in_name, in).ok());
      const kestrel::Status s = ex.extract(out_name, out);
      REQUIRE_MESSAGE(s.ok(), s.message());
      per.push_back(counting.allocations - before);
    }
    const kestrel::MemoryStats st = ex.memory_stats();
    CHECK(static_cast<long>(st.system_allocations) == counting.allocations);
  }
  CHECK(counting.allocations == counting.deallocations);  // nothing leaked
  mutable_net.option() = opt;
  return per;
}

void check_plan_is_valid(const std::vector<kestrel::PlanBuffer>& buffers, const kestrel::MemoryPlan& plan) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const bool time = buffers[i].first_step <= buffers[j].last_step && buffers[j].first_step <= buffers[i].last_step;
      const bool space = plan.offsets[i] < plan.offsets[j] + buffers[j].bytes &&
                         plan.offsets[j] < plan.offsets[i] + buffers[i].bytes;
      REQUIRE_FALSE((time && space));
    }
    CHECK(plan.offsets[i] % kestrel::kAlignment == 0);
    CHECK(plan.offsets[i] + buffers[i].bytes <= plan.arena_bytes);
  }
}

}  // namespace

TEST_SUITE("memory") {
  TEST_CASE("greedy plan: hand case and random lifetimes") {
    const std::vector<kestrel::PlanBuffer> chain = {{100, 0, 1}, {200, 1, 2}, {100, 2, 3}};
    const kestrel::MemoryPlan p = kestrel::plan_memory(chain);
    check_plan_is_valid(chain, p);
    CHECK(p.lower_bound_bytes == 128 + 256);
    CHECK(p.arena_bytes == 128 + 256);

    std::mt19937 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<kestrel::PlanBuffer> bufs(1 + rng() % 30);
      size_t sum = 0;
      for (auto& b : bufs) {
        b.bytes = 64 * (1 + rng() % 50);
        b.first_step = static_cast<int>(rng() % 20);
        b.last_step = b.first_step + static_cast<int>(rng() % 6);
        sum += b.bytes;
      }
      const kestrel::MemoryPlan plan = kestrel::plan_memory(bufs);
      check_plan_is_valid(bufs, plan);
      CHECK(plan.lower_bound_bytes <= plan.arena_bytes);
      CHECK(plan.arena_bytes <= sum);
    }
  }

  TEST_CASE("light mode frees each map right after its last consumer") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 1);
    kestrel::Extractor ex = net.create_extractor();
    ex.set_light_mode(true);
    const Trace on = trace_inference(ex, in, "f");
    CHECK(on.layers == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
    // a lives until c; b and c are written straight into the concat d (zero-copy), so
    // d exists from b on; e runs in place over d; f's input e is freed.
    CHECK(on.in_use == std::vector<size_t>{kMap4, kMap4 + kMap8, kMap8, kMap8, kMap8, kMap4});
    // The peak is reached while c is written into d and still reads a.
    CHECK(ex.memory_stats().peak_in_use_bytes == kMap4 + kMap8);

    kestrel::Extractor heavy = net.create_extractor();
    heavy.set_light_mode(false);
    const Trace off = trace_inference(heavy, in, "f");
    CHECK(off.in_use == std::vector<size_t>{kMap4, kMap4 + kMap8, kMap4 + kMap8, kMap4 + kMap8,
                                            kMap4 + 2 * kMap8, 2 * kMap4 + 2 * kMap8});
  }

  TEST_CASE("in-place layers allocate nothing; the pool reuses whole maps") {
    kestrel::Net net;
    // Counts feature maps only: the reference kernels need no scratch, whose one
    // allocation (first inference) the fast kernels of some CPUs would add.
    net.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    // Without a pool every map is a system allocation: a, d (b and c live in it), f (e
    // runs over d); with light mode off e cannot overwrite d, which stays readable.
    CHECK(allocations_per_inference(net, MemoryStrategy::kNone, true, 2) == std::vector<long>{3, 3});
    CHECK(allocations_per_inference(net, MemoryStrategy::kNone, false, 2) == std::vector<long>{4, 4});
    const std::vector<long> pool = allocations_per_inference(net, MemoryStrategy::kPool, true, 3);
    CHECK(pool[0] > 0);
    CHECK(pool[0] < 3);  // f takes the block a freed
    CHECK(pool[1] == 0);
    CHECK(pool[2] == 0);
  }

  TEST_CASE("zero-copy concat: producers write into the concatenated map, same bits as copying") {
    // In branch_net b and c are read by the concat d alone, so they are views of d's
    // channels. Declaring b an output (users hold outputs) keeps it a map of its own,
    // which d then copies: both nets must agree bit for bit, under every strategy.
    kestrel::ModelBuilder copying = kt::branch_net();
    copying.add_output("b");
    kestrel::Net zero, copy;
    REQUIRE(kt::load(zero, kt::branch_net()).ok());
    REQUIRE(kt::load(copy, copying).ok());
    const kestrel::Mat in = kt::random_input(zero, "data", 4);
    for (MemoryStrategy s : {MemoryStrategy::kNone, MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
      for (bool light : {false, true}) {
        INFO("strategy " << int(s) << ", light " << light);
        kestrel::Extractor ez = zero.create_extractor(), ec = copy.create_extractor();
        for (kestrel::Extractor* ex : {&ez, &ec}) {
          ex->set_memory_strategy(s);
          ex->set_light_mode(light);
          REQUIRE(ex->input("data", in).ok());
        }
        kestrel::Mat fz, fc, dz, dc;
        REQUIRE(ez.extract("f", fz).ok());
        REQUIRE(ec.extract("f", fc).ok());
        CHECK(kt::same_bits(fz, fc));
        REQUIRE(ez.extract("d", dz).ok());
        REQUIRE(ec.extract("d", dc).ok());
        CHECK(kt::same_bits(dz, dc));
      }
    }
    // Light mode off keeps every map: b and c are d's first and last four channels.
    kestrel::Extractor ex = zero.create_extractor();
    ex.set_memory_strategy(MemoryStrategy::kPool);
    ex.set_light_mode(false);
    REQUIRE(ex.input("data", in).ok());
    kestrel::Mat b, c, d;
    REQUIRE(ex.extract("b", b).ok());
    REQUIRE(ex.extract("c", c).ok());
    REQUIRE(ex.extract("d", d).ok());
    CHECK(b.data == d.channel(0));
    CHECK(c.data == d.channel(4));
    // Asking for b alone first (d not needed yet) still gives d the same values.
    kestrel::Extractor first_b = zero.create_extractor();
    first_b.set_light_mode(true);
    REQUIRE(first_b.input("data", in).ok());
    kestrel::Mat b2, d2;
    REQUIRE(first_b.extract("b", b2).ok());
    CHECK(kt::same_bits(b2, b));
    REQUIRE(first_b.extract("d", d2).ok());
    CHECK(kt::same_bits(d2, d));
  }

  TEST_CASE("all strategies give the same bits") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kestrel::mobilenet_ssd({5, 96})).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 2);
    std::vector<kestrel::Mat> outs;
    for (MemoryStrategy s : {MemoryStrategy::kNone, MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
      for (bool light : {false, true}) {
        kestrel::Extractor ex = net.create_extractor();
        ex.set_memory_strategy(s);
        ex.set_light_mode(light);
        kestrel::Mat loc;
        REQUIRE(ex.input("data", in).ok());
        REQUIRE(ex.extract("mbox_loc", loc).ok());
        outs.push_back(loc);
      }
    }
    for (const kestrel::Mat& m : outs) CHECK(kt::same_bits(m, outs[0]));
  }

  TEST_CASE("steady state makes no system allocations (MobileNet v1, MobileNet-SSD)") {
    for (bool ssd : {false, true}) {
      kestrel::Net net;
      REQUIRE(kt::load(net, ssd ? kestrel::mobilenet_ssd({1, 160}) : kestrel::mobilenet_v1({1, 96})).ok());
      for (MemoryStrategy s : {MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
        const std::vector<long> per = allocations_per_inference(net, s, true, 3);
        MESSAGE(std::string(ssd ? "MobileNet-SSD" : "MobileNet v1"), std::string(s == MemoryStrategy::kPool ? " pool" : " plan"),
                ": system allocations per inference ", per[0], ", ", per[1], ", ", per[2]);
        CHECK(per[0] > 0);
        CHECK(per[1] == 0);
        CHECK(per[2] == 0);
      }
      // Without the pool every stored map is allocated every time (the first run also
      // allocates the layers' shared workspace, if any); fused pairs store fewer maps.
      const std::vector<long> none = allocations_per_inference(net, MemoryStrategy::kNone, true, 3);
      CHECK(none[1] == none[2]);
      kestrel::Net unfused;
      unfused.option().fuse_layers = false;
      REQUIRE(kt::load(unfused, ssd ? kestrel::mobilenet_ssd({1, 160}) : kestrel::mobilenet_v1({1, 96})).ok());
      const std::vector<long> every = allocations_per_inference(unfused, MemoryStrategy::kNone, true, 3);
      MESSAGE("maps allocated per inference without the pool: ", every[1], " unfused, ", none[1], " fused");
      CHECK(every[1] > 20);
      CHECK(none[1] <= every[1]);
    }
  }

  TEST_CASE("plan: arena vs lower bound at full size") {
    for (bool ssd : {false, true}) {
      kestrel::Net net;
      REQUIRE(kt::load(net, ssd ? kestrel::mobilenet_ssd() : kestrel::mobilenet_v1()).ok());
      const size_t planned = net.planned_bytes();
      const size_t lower = net.lower_bound_bytes();
      MESSAGE(std::string(ssd ? "MobileNet-SSD 300" : "MobileNet v1 224"), ": planned ", planned, " B, lower bound ", lower,
              " B, ratio ", static_cast<double>(planned) / static_cast<double>(lower));
      CHECK(lower > 0);
      CHECK(planned >= lower);
    }
  }

  TEST_CASE("plan: a held output is never overwritten; releasing it restores reuse") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    kt::CountingAllocator counting;
    net.option().allocator = &counting;
    kestrel::Extractor ex = net.create_extractor();
    ex.set_memory_strategy(MemoryStrategy::kPlan);
    const kestrel::Mat in1 = kt::random_input(net, "data", 1);
    const kestrel::Mat in2 = kt::random_input(net, "data", 2);
    kestrel::Mat first, second;
    REQUIRE(ex.input("data", in1).ok());
    REQUIRE(ex.extract("f", first).ok());
    const kestrel::Mat first_copy = first.clone();
    REQUIRE(ex.input("data", in2).ok());
    const long before = counting.allocations;
    REQUIRE(ex.extract("f", second).ok());
    CHECK(counting.allocations == before + 1);  // a fresh arena: `first` still holds the old one
    CHECK(kt::same_bits(first, first_copy));
    CHECK_FALSE(kt::same_bits(first, second));
    first.release();
    second.release();
    REQUIRE(ex.input("data", in1).ok());
    const long steady = counting.allocations;
    REQUIRE(ex.extract("f", second).ok());
    CHECK(counting.allocations == steady);
    CHECK(kt::same_bits(second, first_copy));
    // An intermediate blob comes out as a copy equal to the pool's answer.
    kestrel::Mat c_plan, c_pool;
    REQUIRE(ex.extract("c", c_plan).ok());
    kestrel::Extractor pool = net.create_extractor();
    REQUIRE(pool.input("data", in1).ok());
    REQUIRE(pool.extract("c", c_pool).ok());
    CHECK(kt::same_bits(c_plan, c_pool));
    second.release();
    c_plan.release();
    net.option().allocator = nullptr;
  }

  TEST_CASE("an output Mat outlives its Extractor") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kt::branch_net()).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 4);
    kestrel::Mat kept, expected;
    for (MemoryStrategy s : {MemoryStrategy::kNone, MemoryStrategy::kPool, MemoryStrategy::kPlan}) {
      {
        kestrel::Extractor ex = net.create_extractor();
        ex.set_memory_strategy(s);
        REQUIRE(ex.input("data", in).ok());
        REQUIRE(ex.extract("f", kept).ok());
      }
      if (expected.empty()) expected = kept.clone();
      CHECK(kt::same_bits(kept, expected));  // AddressSanitizer checks the reads too
      kept.release();
    }
  }
}
