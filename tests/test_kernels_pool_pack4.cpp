// The NEON pooling kernels on pack4 maps (f32_pool2d_pack4_neon, f32_pool_global_pack4_neon)
// against pool_reference and, bit for bit, against the planar NEON kernel that the
// registry picks for the same planar geometry: a network must give the same bits with
// blocked and planar maps. Swept on purpose: 4-channel blocks 1, 3, 5 and 9 (channels 4,
// 12, 20, 36); heights and widths 1 to 17 (one and several 4-output groups with every
// tail, windows clipped on both sides); 2x2, 3x3, 2x3, 5x5 and a 7x4 window (the run-time
// width path); strides 1 and 2 (and 3 vertically); padding 0, 1 and 2; ceil mode;
// count_include_pad both ways; maps wider than one 64-output strip; a NaN (max
// propagates it as the planar kernel does) and maps of -0 (an average of -0 is +0
// there); global max and average with every residue of the planar kernel's 16-float
// steps (1 to 17 pixels and larger), pack4 and planar outputs; 1 and 3 threads. The
// inputs' channel padding is NaN (a kernel reading it shows) and the outputs' holds a
// sentinel (a kernel writing it shows). On other architectures the kernels are absent
// and the cases say so; on an aarch64 build running NEON a missing kernel fails.
#include <cmath>
#include <cstring>
#include <sstream>

#include "conv_test_util.h"
#include "kernels/isa.h"
#include "kernels/pool_kernels.h"
#include "layers/layers.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::PoolType;
using kestrel::kernels::PoolGeometry;
using kestrel::kernels::PoolKernel;

const PoolKernel* find_kernel(const char* name) {
  for (const PoolKernel* k : kt::runnable_kernels(kestrel::kernels::pool_kernels())) {
    if (std::strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

// Both kernels, or false (and a message) where this build has none; an aarch64 build
// running NEON must have them: a kernel dropped from the registry fails here.
bool find_pair(const char* blocked_name, const char* planar_name, const PoolKernel** blocked,
               const PoolKernel** planar) {
  *blocked = find_kernel(blocked_name);
  *planar = find_kernel(planar_name);
  if (*blocked && *planar) return true;
  CHECK(kestrel::kernels::active_isa() != kestrel::kernels::Isa::kNeon);
  MESSAGE("no NEON " << std::string(blocked_name) << " in this build: skipped");
  return false;
}

std::string describe(const PoolGeometry& g) {
  std::ostringstream o;
  o << (g.pool == PoolType::Max ? "max " : "avg ") << (g.global ? "global " : "") << g.channels << "x" << g.in_h
    << "x" << g.in_w << " -> " << g.out_h << "x" << g.out_w << " k" << g.kh << "x" << g.kw << " s" << g.sh << "x"
    << g.sw << " pad " << g.pad_top << "," << g.pad_left << "," << g.pad_bottom << "," << g.pad_right
    << (g.count_include_pad ? " include_pad" : " exclude_pad") << " packs " << g.in_pack << ">" << g.out_pack;
  return o.str();
}

// A windowed geometry resolved as the layer does (Caffe's ceil rule included); false
// where the window does not fit.
bool windowed(PoolGeometry* g, bool ceil_mode) {
  kestrel::layer_util::AxisGeometry gy, gx;
  const auto mode = kestrel::fb::PadMode::Explicit;
  if (!kestrel::layer_util::axis_geometry("h", g->in_h, g->kh, g->sh, 1, g->pad_top, g->pad_bottom, mode, ceil_mode,
                                          &gy).ok() ||
      !kestrel::layer_util::axis_geometry("w", g->in_w, g->kw, g->sw, 1, g->pad_left, g->pad_right, mode, ceil_mode,
                                          &gx).ok()) {
    return false;
  }
  g->pad_bottom = gy.pad_end;
  g->pad_right = gx.pad_end;
  g->out_h = gy.out;
  g->out_w = gx.out;
  return g->out_h >= 1 && g->out_w >= 1;
}

// What fills the input: random values, random values and a NaN, or -0 everywhere.
enum class Fill { kRandom, kNan, kNegativeZero };

Mat make_input(const PoolGeometry& g, Fill fill, std::mt19937& rng) {
  Mat in;
  REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.channels)));
  if (fill == Fill::kNegativeZero) {
    for (int q = 0; q < in.c; ++q) std::fill(in.channel(q), in.channel(q) + size_t(in.w) * in.h, -0.f);
    return in;
  }
  kt::fill_random(in, rng, -4.f, 4.f);
  if (fill == Fill::kNan) in.channel(int(rng() % unsigned(g.channels)))[rng() % (size_t(g.in_w) * g.in_h)] = NAN;
  return in;
}

// Runs k on g with the planar `in` given in g.in_pack's layout (its channel padding
// NaN); the output comes back planar.
Mat run_pool_kernel(const PoolKernel* k, const PoolGeometry& g, const Mat& in, int threads) {
  Mat src = g.in_pack == 1 ? in.clone() : kestrel::convert_packing(in, g.in_pack);
  REQUIRE(src.data != nullptr);
  const size_t plane = size_t(src.w) * src.h * src.elempack;
  for (int q = 0; q < src.c; ++q) std::fill(src.channel(q) + plane, src.channel(q) + src.cstep, NAN);
  Shape os = Shape::make3(g.out_w, g.out_h, g.channels / g.out_pack);
  os.elempack = g.out_pack;
  Mat out;
  REQUIRE(out.create(os));
  kt::fill_sentinel(out);
  kt::KernelScratch scratch;
  const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
  k->run(g, src.data, src.cstep, out.data, out.cstep, ctx);
  CHECK_MESSAGE(kt::padding_untouched(out), "wrote into channel padding");
  return g.out_pack == 1 ? out : kestrel::convert_packing(out, 1);
}

// The planar kernel's output for g (planar) against the reference, then k on the
// blocked twins of g against it bit for bit at 1 and 3 threads. Returns the runs made.
int compare(const PoolKernel* k, const PoolKernel* planar, const PoolGeometry& g, const std::vector<int>& out_packs,
            Fill fill, std::mt19937& rng) {
  INFO(describe(g) << ", fill " << int(fill));
  const kestrel::kernels::Isa isa = kestrel::kernels::active_isa();
  REQUIRE(kestrel::kernels::select_pool_kernel(g, isa) == planar);
  CHECK_FALSE(k->supports(g));  // never planar
  const Mat in = make_input(g, fill, rng);
  const Mat want = run_pool_kernel(planar, g, in, 1);
  Mat ref;
  REQUIRE(ref.create(want.shape()));
  kestrel::kernels::pool_reference(g, in.data, in.cstep, ref.data, ref.cstep, 1);
  const double err = kt::relative_error(want, ref);
  CHECK(err <= (g.pool == PoolType::Max ? 0.0 : planar->tolerance));
  int runs = 0;
  for (int out_pack : out_packs) {
    PoolGeometry gb = g;
    gb.in_pack = 4;
    gb.out_pack = out_pack;
    INFO("packs 4>" << out_pack);
    REQUIRE(k->supports(gb));
    CHECK_FALSE(planar->supports(gb));
    CHECK(kestrel::kernels::select_pool_kernel(gb, isa) == k);
    for (int threads : {1, 3}) {
      INFO("threads " << threads);
      CHECK(kt::same_plane_values(run_pool_kernel(k, gb, in, threads), want));
      ++runs;
    }
  }
  return runs;
}

// A 3x3 stride-2 window padded by 1 (ResNet's stem pooling) and a global pooling, on 8
// channels in blocks of 4.
PoolGeometry blocked_window() {
  PoolGeometry g;
  g.channels = 8;
  g.in_h = g.in_w = 9;
  g.kh = g.kw = 3;
  g.sh = g.sw = 2;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  REQUIRE(windowed(&g, false));
  g.in_pack = g.out_pack = 4;
  return g;
}

PoolGeometry blocked_global() {
  PoolGeometry g;
  g.global = true;
  g.pool = PoolType::Average;
  g.channels = 8;
  g.in_h = g.kh = 5;
  g.in_w = g.kw = 6;
  g.out_h = g.out_w = 1;
  g.in_pack = 4;
  g.out_pack = 1;
  return g;
}

struct Window {
  int kh, kw, sh, sw, pad;
  bool ceil_mode;
};

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pack4 windowed NEON pooling: the planar kernel's bits") {
    const PoolKernel *k = nullptr, *planar = nullptr;
    if (!find_pair("f32_pool2d_pack4_neon", "f32_pool2d_neon", &k, &planar)) return;
    const Window windows[] = {
        {2, 2, 2, 2, 0, false}, {2, 2, 1, 1, 0, false}, {2, 2, 2, 2, 1, true},  {3, 3, 2, 2, 1, false},
        {3, 3, 2, 2, 0, true},  {3, 3, 1, 1, 1, false}, {3, 3, 1, 1, 0, false}, {3, 3, 2, 2, 1, true},
        {2, 3, 1, 2, 1, false}, {3, 2, 3, 1, 1, true},  {5, 5, 1, 1, 2, false}, {4, 7, 2, 2, 2, true},
    };
    const int channels[] = {4, 12, 20, 36};
    std::mt19937 rng(61);
    int runs = 0, geometries = 0;
    for (const Window& win : windows) {
      for (PoolType pool : {PoolType::Max, PoolType::Average}) {
        for (bool include_pad : {true, false}) {
          if (pool == PoolType::Max && !include_pad) continue;
          for (int w = 1; w <= 17; ++w) {
            PoolGeometry g;
            g.pool = pool;
            g.count_include_pad = include_pad;
            g.channels = channels[(w + win.kw) % 4];
            g.in_w = w;
            g.in_h = (w * 7 + win.kh) % 17 + 1;
            g.kh = win.kh, g.kw = win.kw, g.sh = win.sh, g.sw = win.sw;
            g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = win.pad;
            if (!windowed(&g, win.ceil_mode)) continue;
            const Fill fill = w % 5 == 0 ? Fill::kNan : w == 11 ? Fill::kNegativeZero : Fill::kRandom;
            runs += compare(k, planar, g, {4}, fill, rng);
            ++geometries;
          }
        }
      }
    }
    // Rows of more than one 64-output strip, and ResNet's stem pooling at a reduced size.
    struct Wide {
      int c, h, w;
      Window win;
      PoolType pool;
    };
    for (const Wide& x : {Wide{4, 3, 150, {3, 3, 1, 1, 1, false}, PoolType::Average},
                          Wide{8, 2, 301, {2, 2, 2, 2, 0, true}, PoolType::Max},
                          Wide{64, 28, 28, {3, 3, 2, 2, 1, false}, PoolType::Max}}) {
      PoolGeometry g;
      g.pool = x.pool;
      g.channels = x.c;
      g.in_h = x.h;
      g.in_w = x.w;
      g.kh = x.win.kh, g.kw = x.win.kw, g.sh = x.win.sh, g.sw = x.win.sw;
      g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = x.win.pad;
      g.count_include_pad = false;
      REQUIRE(windowed(&g, x.win.ceil_mode));
      runs += compare(k, planar, g, {4}, Fill::kRandom, rng);
      ++geometries;
    }
    MESSAGE("f32_pool2d_pack4_neon: " << geometries << " geometries, " << runs << " runs");
    CHECK(geometries > 300);
  }

  TEST_CASE("pack4 global NEON pooling: the planar kernel's bits, pack4 and planar outputs") {
    const PoolKernel *k = nullptr, *planar = nullptr;
    if (!find_pair("f32_pool_global_pack4_neon", "f32_pool_global_neon", &k, &planar)) return;
    const int channels[] = {4, 12, 20, 36};
    std::mt19937 rng(67);
    int runs = 0, geometries = 0;
    // Every pixel count 1 to 17 (the 16-float steps, the 4-float steps and the tail of
    // the planar loop), then larger planes.
    std::vector<std::pair<int, int>> sizes;
    for (int n = 1; n <= 17; ++n) sizes.emplace_back(n % 3 == 0 ? 3 : 1, n % 3 == 0 ? n / 3 : n);
    for (auto hw : {std::make_pair(4, 5), std::make_pair(7, 7), std::make_pair(9, 11), std::make_pair(19, 19),
                    std::make_pair(1, 63), std::make_pair(10, 10)}) {
      sizes.push_back(hw);
    }
    for (PoolType pool : {PoolType::Max, PoolType::Average}) {
      for (size_t i = 0; i < sizes.size(); ++i) {
        PoolGeometry g;
        g.global = true;
        g.pool = pool;
        g.channels = channels[i % 4];
        g.in_h = g.kh = sizes[i].first;
        g.in_w = g.kw = sizes[i].second;
        g.out_h = g.out_w = 1;
        const Fill fill = i % 4 == 3 ? Fill::kNan : i == 5 ? Fill::kNegativeZero : Fill::kRandom;
        runs += compare(k, planar, g, {4, 1}, fill, rng);
        ++geometries;
      }
    }
    MESSAGE("f32_pool_global_pack4_neon: " << geometries << " geometries, " << runs << " runs");
  }

  TEST_CASE("pack4 NEON pooling claims only whole blocks and the planar kernel's windows") {
    const PoolKernel *k = nullptr, *planar = nullptr;
    if (!find_pair("f32_pool2d_pack4_neon", "f32_pool2d_neon", &k, &planar)) return;
    const PoolKernel* global = find_kernel("f32_pool_global_pack4_neon");
    REQUIRE(global != nullptr);
    PoolGeometry base = blocked_window();
    REQUIRE(k->supports(base));
    auto refuses = [&](const PoolKernel* kernel, const char* what, auto&& change) {
      PoolGeometry g = base;
      change(g);
      INFO(std::string(kernel->name) << ": " << std::string(what));
      CHECK_FALSE(kernel->supports(g));
    };
    refuses(k, "planar", [](PoolGeometry& g) { g.in_pack = g.out_pack = 1; });
    refuses(k, "planar output", [](PoolGeometry& g) { g.out_pack = 1; });
    refuses(k, "planar input", [](PoolGeometry& g) { g.in_pack = 1; });
    refuses(k, "8 lanes", [](PoolGeometry& g) { g.in_pack = g.out_pack = 8; });
    refuses(k, "part of a block", [](PoolGeometry& g) { g.channels = 6; });
    refuses(k, "stride 3 across (the planar kernel's neither)", [](PoolGeometry& g) {
      g.sw = 3;
      REQUIRE(windowed(&g, false));
    });
    refuses(k, "global", [](PoolGeometry& g) { g.global = true; });
    base = blocked_global();
    REQUIRE(global->supports(base));
    refuses(global, "planar", [](PoolGeometry& g) { g.in_pack = 1; });
    refuses(global, "planar input, blocked output", [](PoolGeometry& g) { g.in_pack = 1, g.out_pack = 4; });
    refuses(global, "8 lanes", [](PoolGeometry& g) { g.in_pack = g.out_pack = 8; });
    refuses(global, "part of a block", [](PoolGeometry& g) { g.channels = 10; });
    refuses(global, "windowed", [](PoolGeometry& g) { g.global = false; });
  }

  TEST_CASE("planar pooling kernels refuse blocked maps") {
    // Every ISA: a kernel of blocked_lanes 0 must never claim a blocked geometry (the
    // layout pass would hand it maps that it reads as planes).
    int planar_claims = 0;
    for (const PoolKernel* p : kestrel::kernels::pool_kernels()) {
      if (p->blocked_lanes != 0) continue;
      for (const PoolGeometry& base : {blocked_window(), blocked_global()}) {
        PoolGeometry g = base;
        g.in_pack = g.out_pack = 1;
        planar_claims += p->supports(g);
        for (int lanes : {4, 8, 16}) {
          g.channels = 2 * lanes;
          for (auto packs : {std::make_pair(lanes, lanes), std::make_pair(lanes, 1), std::make_pair(1, lanes)}) {
            g.in_pack = packs.first;
            g.out_pack = packs.second;
            INFO(std::string(p->name) << ": " << describe(g));
            CHECK_FALSE(p->supports(g));
          }
        }
      }
    }
    // Something to refuse: the planar twins are claimed where this build has kernels.
    if (!kestrel::kernels::pool_kernels().empty()) CHECK(planar_claims > 0);
  }
}
