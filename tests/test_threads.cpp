#include <thread>

#include "test_util.h"

TEST_SUITE("threads") {
  TEST_CASE("one Net, four threads with their own Extractors, same bits as one thread") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kestrel::mobilenet_v1({9, 64})).ok());
    constexpr int kThreads = 4;
    constexpr int kRuns = 3;
    std::vector<kestrel::Mat> inputs, expected;
    {
      kestrel::Extractor ex = net.create_extractor();
      ex.set_num_threads(1);
      for (int i = 0; i < kThreads * kRuns; ++i) {
        inputs.push_back(kt::random_input(net, "data", static_cast<uint32_t>(100 + i)));
        kestrel::Mat out;
        REQUIRE(ex.input("data", inputs.back()).ok());
        REQUIRE(ex.extract("prob", out).ok());
        expected.push_back(out.clone());
      }
    }
    std::vector<std::vector<kestrel::Mat>> got(kThreads);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) {
      pool.emplace_back([&, t] {
        kestrel::Extractor ex = net.create_extractor();
        ex.set_num_threads(1 + t % 2);  // OpenMP inside some of them too
        for (int r = 0; r < kRuns; ++r) {
          kestrel::Mat out;
          const kestrel::Mat& in = inputs[static_cast<size_t>(t * kRuns + r)];
          if (!ex.input("data", in).ok() || !ex.extract("prob", out).ok()) return;
          got[t].push_back(out);
        }
      });
    }
    for (std::thread& th : pool) th.join();
    for (int t = 0; t < kThreads; ++t) {
      REQUIRE(got[t].size() == kRuns);
      for (int r = 0; r < kRuns; ++r) CHECK(kt::same_bits(got[t][r], expected[static_cast<size_t>(t * kRuns + r)]));
    }
  }

  TEST_CASE("results do not depend on the thread count") {
    kestrel::Net net;
    REQUIRE(kt::load(net, kestrel::mobilenet_ssd({2, 128})).ok());
    const kestrel::Mat in = kt::random_input(net, "data", 8);
    kestrel::Mat ref;
    for (int threads : {1, 2, 3}) {
      kestrel::Extractor ex = net.create_extractor();
      ex.set_num_threads(threads);
      kestrel::Mat conf;
      REQUIRE(ex.input("data", in).ok());
      REQUIRE(ex.extract("mbox_conf_flatten", conf).ok());
      if (ref.empty()) ref = conf;
      CHECK(kt::same_bits(conf, ref));
    }
  }
}
