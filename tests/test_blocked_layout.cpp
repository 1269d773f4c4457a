// Blocked feature maps at load (Option::blocked_layout): a MobileNet-like 14x14 chain
// (see chain_net) with a blob two convolutions read and two blobs an Eltwise reads must
// give the planar bits for every blob (the output with every memory strategy) at 1 and
// 3 threads; the maps between the x86 channel kernels and the NEON pack4 ones must in fact be blocked there (5x5
// depthwise layers too), and extract() of one must hand out a planar copy. Pooling
// layers (a ResNet-like stem and tail) and PriorBox (an SSD head) take part: on NEON the
// pooling layers run their pack4 kernels, and a PriorBox reading a map leaves it blocked.
#include <map>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "test_util.h"

namespace {

using kestrel::ModelBuilder;

// x86 (16 or 8 lanes) and NEON (4) have kernels taking blocked maps; the reference none.
bool blocking_isa() { return kestrel::kernels::active_isa() != kestrel::kernels::Isa::kRef; }

// data [256,14,14] -> pw1 (256) -> dw1 -> {pw2, pw2b} (256 each) -> sum (Eltwise) -> dw2
// (stride 2, 7x7) -> pw3 (96) -> dw3 -> pw4 (80) -> out. On x86 pw1's and dw1's outputs
// are blocked (dw1's read by two convolutions), pw2's and pw2b's stay planar for the
// Eltwise, dw2's is blocked into pw3, and dw3 (a 7x7 map: the flat kernel) keeps its
// neighbours planar.
ModelBuilder chain_net() {
  ModelBuilder b;
  b.add_input("data", {256, 14, 14});
  kt::add_conv(b, "pw1", "data", 256, 256, 1, 3);
  kt::add_depthwise(b, "dw1", "pw1", 256, 1, 5);
  kt::add_conv(b, "pw2", "dw1", 256, 256, 1, 9);
  kt::add_conv(b, "pw2b", "dw1", 256, 256, 1, 13);
  kestrel::fb::EltwiseParamT e;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(e));
  b.add_layer("Eltwise", "sum", {"pw2", "pw2b"}, {"sum"}, std::move(u), {});
  kt::add_depthwise(b, "dw2", "sum", 256, 2, 11);
  kt::add_conv(b, "pw3", "dw2", 256, 96, 1, 15);
  kt::add_depthwise(b, "dw3", "pw3", 96, 1, 17);
  kt::add_conv(b, "pw4", "dw3", 96, 80, 1, 19);
  b.add_output("pw4");
  return b;
}

// A residual Add of two maps of one shape (BinaryOp, Layer::elementwise_any_layout)
// takes its inputs' layout: data [64,14,14] -> d0 -> x0 (64) -> {e1 (128) -> d1 -> p1 (64)}
// -> r1 = x0 + p1 -> {e2 (128) -> d2 -> p2 (64)} -> r2 = r1 + p2 -> out (48). On x86
// x0, p1, r1, p2 and r2 are blocked together (the convolutions around them say so),
// as are e1/d1/e2/d2. A third Add that broadcasts a [64,1,1] weight onto r2 would keep
// the whole group planar (residual_net(true)).
void add_binary(ModelBuilder& b, const std::string& name, const std::vector<std::string>& bottoms,
                std::vector<uint32_t> weights = {}) {
  kestrel::fb::BinaryOpParamT p;
  p.op = kestrel::fb::BinaryOpType::Add;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  b.add_layer("BinaryOp", name, bottoms, {name}, std::move(u), weights);
}

ModelBuilder residual_net(bool broadcast_tail) {
  ModelBuilder b;
  b.add_input("data", {64, 14, 14});
  kt::add_depthwise(b, "d0", "data", 64, 1, 2);
  kt::add_conv(b, "x0", "d0", 64, 64, 1, 3);
  kt::add_conv(b, "e1", "x0", 64, 128, 1, 5);
  kt::add_depthwise(b, "d1", "e1", 128, 1, 7);
  kt::add_conv(b, "p1", "d1", 128, 64, 1, 9);
  add_binary(b, "r1", {"x0", "p1"});
  kt::add_conv(b, "e2", "r1", 64, 128, 1, 11);
  kt::add_depthwise(b, "d2", "e2", 128, 1, 13);
  kt::add_conv(b, "p2", "d2", 128, 64, 1, 15);
  add_binary(b, "r2", {"r1", "p2"});
  std::string last = "r2";
  if (broadcast_tail) {
    std::vector<float> w(64);
    for (int i = 0; i < 64; ++i) w[i] = 0.01f * static_cast<float>(i);
    add_binary(b, "r3", {"r2"}, {b.add_weight("r3/w", {64, 1, 1}, w)});
    last = "r3";
  }
  kt::add_conv(b, "out", last, 64, 48, 1, 17);
  b.add_output("out");
  return b;
}

// A MobileNet v1-like head on a map wider than 64 and larger than 56x56: data
// [3,144,144] -> stem (3x3 stride 2, 32) -> hd (depthwise, 72x72) -> hp (1x1, pw_out)
// -> hs (depthwise stride 2, 36x36) -> tail (1x1, 32). With 16 lanes the 72x72 layers
// take blocked maps only all together (net_layout.cpp's chains): the depthwise kernel
// takes such wide rows only blocked on both sides, the 1x1 channel tiles such a large
// map only written blocked. With pw_out 16 (MobileNet v2's 32 -> 16 projection) the
// channel tiles lose to the pixel tiles, and the whole chain stays planar.
ModelBuilder wide_head_net(int pw_out) {
  ModelBuilder b;
  b.add_input("data", {3, 144, 144});
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> w(32 * 3 * 9), bias(32);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  const uint32_t wi = b.add_weight("stem/w", {32, 3, 3, 3}, w);
  const uint32_t bi = b.add_weight("stem/b", {32}, bias);
  b.add_layer("Convolution", "stem", {"data"}, {"stem"}, kt::conv_params(32, 3, 2, 1, true), {wi, bi});
  kt::add_depthwise(b, "hd", "stem", 32, 1, 3);
  kt::add_conv(b, "hp", "hd", 32, pw_out, 1, 5);
  kt::add_depthwise(b, "hs", "hp", pw_out, 2, 7);
  kt::add_conv(b, "tail", "hs", pw_out, 32, 1, 9);
  b.add_output("tail");
  return b;
}

// MobileNet v3's blocks, with k x k depthwise layers: data [48,16,16] -> e1 (1x1, 96) ->
// d1 (k x k) -> p1 (1x1, 48) -> e2 (1x1, 96) -> d2 (k x k stride 2, 8x8) -> out (1x1, 32).
// The 5x5 depthwise kernels take blocked operands as the 3x3 ones do, so the layout pass
// leaves both windows the same layouts: on x86 with 16 lanes the maps from d1's output to
// out's input are blocked (e1, reading the planar network input, keeps a pixel-tile
// kernel and a planar output).
ModelBuilder depthwise_block_net(int k) {
  ModelBuilder b;
  b.add_input("data", {48, 16, 16});
  kt::add_conv(b, "e1", "data", 48, 96, 1, 3);
  kt::add_depthwise(b, "d1", "e1", 96, 1, 5, k);
  kt::add_conv(b, "p1", "d1", 96, 48, 1, 7);
  kt::add_conv(b, "e2", "p1", 48, 96, 1, 9);
  kt::add_depthwise(b, "d2", "e2", 96, 2, 11, k);
  kt::add_conv(b, "out", "d2", 96, 32, 1, 13);
  b.add_output("out");
  return b;
}

kestrel::fb::LayerParamsUnion pool_params(kestrel::fb::PoolType pool, int k, int stride, int pad, bool global,
                                          bool include_pad = true) {
  kestrel::fb::PoolingParamT p;
  p.pool = pool;
  p.global = global;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.count_include_pad = include_pad;
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(p));
  return u;
}

// A k x k stride-2 stem (padding k / 2, 16 channels) on a planar input, seeded.
void add_stem(ModelBuilder& b, const std::string& name, const std::string& bottom, int in, int k) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  std::vector<float> w(size_t(16) * in * k * k), bias(16);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  const uint32_t wi = b.add_weight(name + "/w", {16, in, k, k}, w);
  const uint32_t bi = b.add_weight(name + "/b", {16}, bias);
  b.add_layer("Convolution", name, {bottom}, {name}, kt::conv_params(16, k, 2, k / 2, true), {wi, bi});
}

// ResNet's ends around MobileNet's blocks: data [3,30,30] -> stem (7x7 stride 2, 16,
// 15x15) -> pool (max 3x3 stride 2 pad 1, 8x8) -> e1 (1x1, 32) -> d1 (depthwise) -> p1
// (1x1, 16) -> r1 = pool + p1 -> avg (average 3x3 stride 1 pad 1, padding not counted)
// -> p2 (1x1, 16) -> r2 = r1 + p2 -> gap (global average) -> fc (InnerProduct, 10). On
// NEON the stem writes pack4 only if the max pooling reads it, and that only if the
// residual group it writes into is blocked too (net_layout.cpp's chains): every map
// from the stem's output to r2 is blocked, the global pooling reads r2 blocked and
// writes the planar vector that fc reads.
ModelBuilder resnet_like_net() {
  using kestrel::fb::PoolType;
  ModelBuilder b;
  b.add_input("data", {3, 30, 30});
  add_stem(b, "stem", "data", 3, 7);
  b.add_layer("Pooling", "pool", {"stem"}, {"pool"}, pool_params(PoolType::Max, 3, 2, 1, false));
  kt::add_conv(b, "e1", "pool", 16, 32, 1, 3);
  kt::add_depthwise(b, "d1", "e1", 32, 1, 5);
  kt::add_conv(b, "p1", "d1", 32, 16, 1, 7);
  add_binary(b, "r1", {"pool", "p1"});
  b.add_layer("Pooling", "avg", {"r1"}, {"avg"}, pool_params(PoolType::Average, 3, 1, 1, false, false));
  kt::add_conv(b, "p2", "avg", 16, 16, 1, 9);
  add_binary(b, "r2", {"r1", "p2"});
  b.add_layer("Pooling", "gap", {"r2"}, {"gap"}, pool_params(PoolType::Average, 1, 1, 0, true));
  kt::add_inner_product(b, "fc", "gap", 10, 16, 29);
  b.add_output("fc");
  return b;
}

// An SSD head: data [3,24,24] -> stem (3x3 stride 2, 16, 12x12) -> d1 (depthwise) ->
// feat (1x1, 32), read by loc (1x1, 12), conf (1x1, 9), prior (PriorBox over feat and
// data: their shapes only) and d2 (depthwise stride 2) -> p2 (1x1, 16). Outputs loc,
// conf, prior and p2. On NEON feat stays blocked for the heads (read blocked, written
// planar) although the PriorBox reads it.
ModelBuilder ssd_like_net() {
  ModelBuilder b;
  b.add_input("data", {3, 24, 24});
  add_stem(b, "stem", "data", 3, 3);
  kt::add_depthwise(b, "d1", "stem", 16, 1, 3);
  kt::add_conv(b, "feat", "d1", 16, 32, 1, 5);
  kt::add_conv(b, "loc", "feat", 32, 12, 1, 7);
  kt::add_conv(b, "conf", "feat", 32, 9, 1, 9);
  kestrel::fb::PriorBoxParamT pb;
  pb.min_sizes = {6.f};
  pb.max_sizes = {12.f};
  pb.aspect_ratios = {2.f};
  pb.flip = true;
  pb.clip = true;
  pb.variances = {0.1f, 0.1f, 0.2f, 0.2f};
  kestrel::fb::LayerParamsUnion u;
  u.Set(std::move(pb));
  b.add_layer("PriorBox", "prior", {"feat", "data"}, {"prior"}, std::move(u));
  kt::add_depthwise(b, "d2", "feat", 32, 2, 11);
  kt::add_conv(b, "p2", "d2", 32, 16, 1, 13);
  for (const char* out : {"loc", "conf", "prior", "p2"}) b.add_output(out);
  return b;
}

struct Run {
  kestrel::Mat out;
  std::vector<std::string> kernels;  // per layer run, as the observer saw them
  std::vector<std::string> layers;   // their names
};

Run run(const ModelBuilder& b, bool blocked, int threads, kestrel::MemoryStrategy memory, const std::string& blob) {
  kestrel::Net net;
  net.option().blocked_layout = blocked;
  net.option().fuse_layers = false;  // every blob stays extractable
  kestrel::Status s = kt::load(net, b);
  REQUIRE_MESSAGE(s.ok(), s.message());
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(threads);
  ex.set_memory_strategy(memory);
  Run r;
  ex.set_observer([&](const kestrel::LayerEvent& ev) {
    r.kernels.push_back(ev.kernel);
    r.layers.push_back(ev.layer_name);
  });
  REQUIRE(ex.input("data", kt::random_input(net, "data", 21)).ok());
  s = ex.extract(blob, r.out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  REQUIRE(r.out.elempack == 1);
  r.out = r.out.clone();
  return r;
}

}  // namespace

TEST_SUITE("networks") {
  TEST_CASE("blocked feature maps give the planar bits") {
    const ModelBuilder b = chain_net();
    int blocked_kernels = 0;
    for (const char* blob : {"pw4", "pw1", "dw1", "pw2", "sum", "dw2", "pw3", "dw3"}) {
      const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
      // Every memory strategy for the network's output, the pool for the others.
      std::vector<kestrel::MemoryStrategy> strategies{kestrel::MemoryStrategy::kPool};
      if (std::string(blob) == "pw4") strategies = {kestrel::MemoryStrategy::kPool, kestrel::MemoryStrategy::kPlan,
                                                   kestrel::MemoryStrategy::kNone};
      for (kestrel::MemoryStrategy m : strategies) {
        for (int threads : {1, 3}) {
          INFO(std::string(blob) << ", memory " << int(m) << ", " << threads << " threads");
          const Run got = run(b, true, threads, m, blob);
          CHECK(kt::same_bits(got.out, want));
          for (const std::string& k : got.kernels) blocked_kernels += k.find('[') != std::string::npos;
        }
      }
    }
    // The re-targeted kernels' names say "[in>out]"; none on the reference kernels.
    if (blocking_isa()) {
      CHECK(blocked_kernels > 0);
    } else {
      CHECK(blocked_kernels == 0);
    }
  }

  TEST_CASE("a residual Add keeps its maps blocked, a broadcasting one planar") {
    for (bool broadcast_tail : {false, true}) {
      const ModelBuilder b = residual_net(broadcast_tail);
      INFO("broadcast tail " << broadcast_tail);
      std::map<std::string, std::string> kernel_of;  // layer -> kernel, last seen
      std::vector<const char*> blobs{"out", "d0", "x0", "e1", "d1", "p1", "r1", "e2", "d2", "p2", "r2"};
      if (broadcast_tail) blobs.push_back("r3");
      for (const char* blob : blobs) {
        const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
        for (kestrel::MemoryStrategy m : {kestrel::MemoryStrategy::kPool, kestrel::MemoryStrategy::kPlan}) {
          for (int threads : {1, 3}) {
            INFO(std::string(blob) << ", memory " << int(m) << ", " << threads << " threads");
            const Run got = run(b, true, threads, m, blob);
            CHECK(kt::same_bits(got.out, want));
            for (size_t i = 0; i < got.layers.size(); ++i) kernel_of[got.layers[i]] = got.kernels[i];
          }
        }
      }
      // Only with 16 lanes are kernels re-chosen for a blocked geometry (net_layout.cpp):
      // with AVX2 this net's 1x1 layers keep pixel-tile kernels, which take planar maps.
      if (kestrel::kernels::active_isa() != kestrel::kernels::Isa::kAvx512) continue;
      // x0 writes the group blocked and p2 writes into it; e2 and out read r1 and r2 (or,
      // with the broadcasting tail, all of them stay planar).
      for (const char* conv : {"x0", "p1", "p2"}) {
        INFO(std::string(conv) << ": " << kernel_of[conv]);
        CHECK((kernel_of[conv].find(">1]") == std::string::npos && kernel_of[conv].find('[') != std::string::npos) ==
              !broadcast_tail);
      }
      for (const char* conv : {"e1", "e2"}) {
        INFO(std::string(conv) << ": " << kernel_of[conv]);
        CHECK((kernel_of[conv].find("[1>") == std::string::npos && kernel_of[conv].find('[') != std::string::npos) ==
              !broadcast_tail);
      }
    }
  }

  TEST_CASE("5x5 depthwise layers read and write blocked maps as the 3x3 ones do") {
    std::map<int, std::map<std::string, std::string>> kernel_of;  // window -> layer -> kernel
    for (int k : {3, 5}) {
      const ModelBuilder b = depthwise_block_net(k);
      for (const char* blob : {"out", "e1", "d1", "p1", "e2", "d2"}) {
        const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
        for (int threads : {1, 3}) {
          INFO(k << "x" << k << ", " << blob << ", " << threads << " threads");
          const Run got = run(b, true, threads, kestrel::MemoryStrategy::kPool, blob);
          CHECK(kt::same_bits(got.out, want));
          for (size_t i = 0; i < got.layers.size(); ++i) kernel_of[k][got.layers[i]] = got.kernels[i];
        }
      }
    }
    // The layouts are the "[in>out]" suffixes of the kernel names.
    auto layout = [](const std::string& kernel) {
      const size_t at = kernel.find('[');
      return at == std::string::npos ? std::string() : kernel.substr(at);
    };
    // NEON has a pack4 3x3 depthwise kernel but no 5x5 one (its 5x5 layers stay planar).
    const bool both_windows = kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon;
    for (const char* conv : {"e1", "d1", "p1", "e2", "d2", "out"}) {
      INFO(std::string(conv) << ": " << kernel_of[3][conv] << " / " << kernel_of[5][conv]);
      if (both_windows) CHECK(layout(kernel_of[3][conv]) == layout(kernel_of[5][conv]));
    }
    if (kestrel::kernels::active_isa() != kestrel::kernels::Isa::kAvx512) return;
    CHECK(kernel_of[5]["d1"] == "f32_dwconv5x5_c16_avx512[1>16]");
    CHECK(kernel_of[5]["d2"] == "f32_dwconv5x5_c16_avx512[16>16]");
  }

  TEST_CASE("a wide stem chain is blocked all through or not at all") {
    for (int pw_out : {64, 16}) {
      const ModelBuilder b = wide_head_net(pw_out);
      INFO("1x1 to " << pw_out << " channels");
      std::map<std::string, std::string> kernel_of;
      for (const char* blob : {"tail", "stem", "hd", "hp", "hs"}) {
        const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
        for (int threads : {1, 3}) {
          INFO(std::string(blob) << ", " << threads << " threads");
          const Run got = run(b, true, threads, kestrel::MemoryStrategy::kPool, blob);
          CHECK(kt::same_bits(got.out, want));
          for (size_t i = 0; i < got.layers.size(); ++i) kernel_of[got.layers[i]] = got.kernels[i];
        }
      }
      if (kestrel::kernels::active_isa() != kestrel::kernels::Isa::kAvx512) continue;
      const bool blocked = pw_out == 64;
      const std::map<std::string, std::string> layouts = {
          {"stem", "[1>16]"}, {"hd", "[16>16]"}, {"hp", "[16>16]"}};
      // Named references, not structured bindings: clang 14's INFO lambda cannot capture those.
      for (const auto& entry : layouts) {
        const std::string& conv = entry.first;
        const std::string& layout = entry.second;
        INFO(conv << ": " << kernel_of[conv]);
        CHECK((kernel_of[conv].find(layout) != std::string::npos) == blocked);
        if (!blocked) CHECK(kernel_of[conv].find('[') == std::string::npos);
      }
    }
  }

  TEST_CASE("pooling layers read and write blocked maps: a ResNet-like stem, pooled tail") {
    const ModelBuilder b = resnet_like_net();
    std::map<std::string, std::string> kernel_of;
    for (const char* blob : {"fc", "stem", "pool", "e1", "d1", "p1", "r1", "avg", "p2", "r2", "gap"}) {
      const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
      std::vector<kestrel::MemoryStrategy> strategies{kestrel::MemoryStrategy::kPool};
      if (std::string(blob) == "fc") strategies.push_back(kestrel::MemoryStrategy::kPlan);
      for (kestrel::MemoryStrategy m : strategies) {
        for (int threads : {1, 3}) {
          INFO(std::string(blob) << ", memory " << int(m) << ", " << threads << " threads");
          const Run got = run(b, true, threads, m, blob);
          CHECK(kt::same_bits(got.out, want));
          for (size_t i = 0; i < got.layers.size(); ++i) kernel_of[got.layers[i]] = got.kernels[i];
        }
      }
    }
    if (kestrel::kernels::active_isa() == kestrel::kernels::Isa::kNeon) {
      // The stem writes pack4 for the max pooling, which writes the residual group.
      INFO("stem: " << kernel_of["stem"]);
      CHECK(kernel_of["stem"].find("pack1to4_neon[1>4]") != std::string::npos);
      CHECK(kernel_of["pool"] == "f32_pool2d_pack4_neon[4>4]");
      CHECK(kernel_of["avg"] == "f32_pool2d_pack4_neon[4>4]");
      CHECK(kernel_of["gap"] == "f32_pool_global_pack4_neon[4>1]");
      for (const char* conv : {"e1", "d1", "p1", "p2"}) {
        INFO(std::string(conv) << ": " << kernel_of[conv]);
        CHECK(kernel_of[conv].find("[4>4]") != std::string::npos);
      }
    } else {
      // No other ISA has pooling kernels that take blocks.
      for (const char* pool : {"pool", "avg", "gap"}) CHECK(kernel_of[pool].find('[') == std::string::npos);
    }
  }

  TEST_CASE("a PriorBox reading a feature map leaves it blocked") {
    const ModelBuilder b = ssd_like_net();
    std::map<std::string, std::string> kernel_of;
    for (const char* blob : {"loc", "conf", "prior", "p2", "stem", "d1", "feat", "d2"}) {
      const kestrel::Mat want = run(b, false, 1, kestrel::MemoryStrategy::kPool, blob).out;
      std::vector<kestrel::MemoryStrategy> strategies{kestrel::MemoryStrategy::kPool};
      if (std::string(blob) == "prior") strategies.push_back(kestrel::MemoryStrategy::kPlan);
      for (kestrel::MemoryStrategy m : strategies) {
        for (int threads : {1, 3}) {
          INFO(std::string(blob) << ", memory " << int(m) << ", " << threads << " threads");
          const Run got = run(b, true, threads, m, blob);
          CHECK(kt::same_bits(got.out, want));
          for (size_t i = 0; i < got.layers.size(); ++i) kernel_of[got.layers[i]] = got.kernels[i];
        }
      }
    }
    if (kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon) return;
    const std::map<std::string, std::string> layouts = {
        {"feat", "[4>4]"}, {"loc", "[4>1]"}, {"conf", "[4>1]"}, {"d2", "[4>4]"}};
    for (const auto& entry : layouts) {
      INFO(entry.first << ": " << kernel_of[entry.first]);
      CHECK(kernel_of[entry.first].find(entry.second) != std::string::npos);
    }
  }
}
