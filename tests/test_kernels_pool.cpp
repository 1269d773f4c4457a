// Every pooling kernel of the registry against kernels::pool_reference on seeded
// random geometries (max and average, windows 1 to 7 wide with 2x2 and 3x3 most
// often, strides 1 to 3, every padding up to the window, ceil mode, both divisor
// rules, global pooling, 1x1 and wide maps), with 1 and 4 threads, the kernels of
// blocked maps on the geometries' blocked twins; then the Pooling layer with both
// kernel sets.
#include <map>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/pool_kernels.h"
#include "layer_test_util.h"
#include "layers/layers.h"

namespace {

using kestrel::Mat;
using kestrel::Shape;
using kestrel::fb::PoolType;
using kestrel::kernels::PoolGeometry;
using kestrel::kernels::PoolKernel;

std::string describe(const PoolGeometry& g) {
  std::ostringstream o;
  o << (g.pool == PoolType::Max ? "max " : "avg ") << (g.global ? "global " : "") << g.channels << "x" << g.in_h
    << "x" << g.in_w << " -> " << g.out_h << "x" << g.out_w << " k" << g.kh << "x" << g.kw << " s" << g.sh << "x"
    << g.sw << " pad " << g.pad_top << "," << g.pad_left << "," << g.pad_bottom << "," << g.pad_right
    << (g.count_include_pad ? " include_pad" : " exclude_pad");
  return o.str();
}

// Fills the output extents the way the layer does (Caffe ceil rule included);
// false if the window does not fit.
bool resolve(PoolGeometry* g, bool ceil_mode) {
  if (g->global) {
    g->kh = g->in_h, g->kw = g->in_w, g->sh = g->sw = 1;
    g->pad_top = g->pad_left = g->pad_bottom = g->pad_right = 0;
    g->out_h = g->out_w = 1;
    return true;
  }
  kestrel::layer_util::AxisGeometry gy, gx;
  const auto explicit_pad = kestrel::fb::PadMode::Explicit;
  if (!kestrel::layer_util::axis_geometry("h", g->in_h, g->kh, g->sh, 1, g->pad_top, g->pad_bottom, explicit_pad,
                                          ceil_mode, &gy).ok() ||
      !kestrel::layer_util::axis_geometry("w", g->in_w, g->kw, g->sw, 1, g->pad_left, g->pad_right, explicit_pad,
                                          ceil_mode, &gx).ok()) {
    return false;
  }
  g->out_h = gy.out;
  g->out_w = gx.out;
  return g->out_h >= 1 && g->out_w >= 1;
}

std::vector<PoolGeometry> sweep() {
  std::mt19937 rng(20261123);
  const int channels[] = {1, 2, 3, 5, 8, 17};
  // 150 and 301 make rows wider than one 128-output strip of the NEON kernel.
  const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 23, 33, 150, 301};
  const int windows[] = {2, 2, 3, 3, 1, 4, 5, 7};
  auto pick = [&](const auto& v) { return v[rng() % (sizeof(v) / sizeof(v[0]))]; };
  std::vector<PoolGeometry> out;
  for (int i = 0; i < 600; ++i) {
    PoolGeometry g;
    g.channels = pick(channels);
    g.in_h = pick(sizes);
    g.in_w = pick(sizes);
    if (g.in_h * g.in_w > 3000) g.in_h = 1 + int(rng() % 7);
    g.pool = rng() % 2 ? PoolType::Max : PoolType::Average;
    g.count_include_pad = rng() % 2 == 0;
    g.global = rng() % 10 == 0;
    const bool square = rng() % 3 != 0;
    g.kh = pick(windows);
    g.kw = square ? g.kh : pick(windows);
    g.sh = 1 + int(rng() % 3);
    g.sw = rng() % 5 == 0 ? 3 : 1 + int(rng() % 2);
    if (square && rng() % 2) g.sh = g.sw;
    // Every padding below the window (Caffe and ONNX reject pad >= kernel).
    g.pad_top = int(rng() % g.kh);
    g.pad_bottom = rng() % 2 ? g.pad_top : int(rng() % g.kh);
    g.pad_left = int(rng() % g.kw);
    g.pad_right = rng() % 2 ? g.pad_left : int(rng() % g.kw);
    if (rng() % 3 == 0) g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = 0;
    if (!resolve(&g, rng() % 3 == 0)) continue;
    out.push_back(g);
  }
  // The networks' pooling layers at reduced size: MobileNet's global average, the
  // ResNet stem (3x3 s2 pad 1), VGG (2x2 s2), Inception (3x3 s1 pad 1 average),
  // SqueezeNet/GoogLeNet (3x3 s2 ceil).
  auto add = [&](PoolType pool, int c, int hw, int k, int s, int pad, bool ceil_mode, bool global) {
    PoolGeometry g;
    g.pool = pool;
    g.channels = c;
    g.in_h = g.in_w = hw;
    g.kh = g.kw = k;
    g.sh = g.sw = s;
    g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
    g.global = global;
    if (resolve(&g, ceil_mode)) out.push_back(g);
  };
  add(PoolType::Average, 64, 7, 7, 1, 0, false, true);
  add(PoolType::Max, 16, 56, 3, 2, 1, false, false);
  add(PoolType::Max, 16, 28, 2, 2, 0, false, false);
  add(PoolType::Average, 16, 17, 3, 1, 1, false, false);
  add(PoolType::Max, 16, 27, 3, 2, 0, true, false);
  return out;
}

// The geometry kernel k computes for g: g itself, or for a kernel of blocked maps
// (PoolKernel::blocked_lanes W) its twin on maps blocked by W, where the channels are
// whole blocks (test_kernels_pool_pack4.cpp compares those with the planar kernels bit
// for bit).
PoolGeometry run_by(const PoolGeometry& g, const PoolKernel* k) {
  PoolGeometry r = g;
  if (k->blocked_lanes != 0) r.in_pack = r.out_pack = k->blocked_lanes;
  return r;
}

// `in` blocked by `lanes`, its channel padding NaN (reading it shows).
Mat blocked_copy(const Mat& in, int lanes) {
  Mat b = kestrel::convert_packing(in, lanes);
  REQUIRE(b.data != nullptr);
  const size_t plane = size_t(b.w) * b.h * b.elempack;
  for (int q = 0; q < b.c; ++q) std::fill(b.channel(q) + plane, b.channel(q) + b.cstep, NAN);
  return b;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("pooling kernels match pool_reference") {
    const auto kernels = kt::runnable_kernels(kestrel::kernels::pool_kernels());
    MESSAGE("active ISA " << std::string(kestrel::kernels::isa_name(kestrel::kernels::active_isa())) << ", "
                          << kernels.size() << " of " << kestrel::kernels::pool_kernels().size() << " "
                          << "pooling kernels runnable");
    const std::vector<PoolGeometry> geoms = sweep();
    std::map<std::string, int> tested;
    std::mt19937 rng(8);
    for (const PoolGeometry& g : geoms) {
      std::vector<const PoolKernel*> claim;
      for (const PoolKernel* k : kernels) {
        if (!k->f16 && k->supports(run_by(g, k))) claim.push_back(k);  // f16: test_kernels_f16_pool.cpp
      }
      if (claim.empty()) continue;
      Mat in, ref;
      REQUIRE(in.create(Shape::make3(g.in_w, g.in_h, g.channels)));
      REQUIRE(ref.create(Shape::make3(g.out_w, g.out_h, g.channels)));
      std::fill(in.data, in.data + in.total(), NAN);  // channel padding: reading it shows
      kt::fill_random(in, rng, -4.f, 4.f);
      // A NaN now and then: max pooling propagates it (the window's last NaN wins), average
      // pooling propagates it, and the kernels must agree.
      if (rng() % 8 == 0) in.channel(0)[rng() % (size_t(g.in_w) * g.in_h)] = NAN;
      kestrel::kernels::pool_reference(g, in.data, in.cstep, ref.data, ref.cstep, 1);
      for (const PoolKernel* k : claim) {
        const PoolGeometry gk = run_by(g, k);
        INFO(std::string(k->name) << ": " << describe(g) << " packs " << gk.in_pack << ">" << gk.out_pack);
        const Mat src = gk.in_pack == 1 ? in : blocked_copy(in, gk.in_pack);
        for (int threads : kt::kernel_thread_counts()) {
          INFO("threads " << threads);
          Shape os = ref.shape();
          os.c /= gk.out_pack;
          os.elempack = gk.out_pack;
          Mat out;
          REQUIRE(out.create(os));
          kt::fill_sentinel(out);
          kt::KernelScratch scratch;
          const auto ctx = scratch.make(k->workspace_bytes(gk), k->workspace_per_thread_bytes(gk), threads);
          k->run(gk, src.data, src.cstep, out.data, out.cstep, ctx);
          CHECK_MESSAGE(kt::padding_untouched(out), "wrote into channel padding");
          if (gk.out_pack != 1) out = kestrel::convert_packing(out, 1);
          const double err = kt::relative_error(out, ref);
          CHECK_MESSAGE(err <= k->tolerance, "relative error ", err, " > ", k->tolerance);
          // A maximum is one of the inputs: nothing to round.
          if (g.pool == PoolType::Max) CHECK_MESSAGE(err == 0, "max pooling differs from the reference");
        }
        tested[k->name]++;
      }
    }
    for (const PoolKernel* k : kernels) {
      if (k->f16) continue;
      INFO(std::string(k->name));
      CHECK_MESSAGE(tested[k->name] > 0, "no geometry of the sweep was claimed by ", std::string(k->name));
      MESSAGE(std::string(k->name) << ": " << tested[k->name] << " geometries");
    }
  }

  TEST_CASE("the reference kernel set and KESTREL_ISA=ref select no pooling kernel") {
    PoolGeometry g;
    g.channels = 4;
    g.in_h = g.in_w = 8;
    g.kh = g.kw = g.sh = g.sw = 2;
    g.out_h = g.out_w = 4;
    CHECK(kestrel::kernels::select_pool_kernel(g, kestrel::kernels::Isa::kRef) == nullptr);
  }

  TEST_CASE("Pooling layer: both kernel sets, 1 and 4 threads") {
    using PM = kestrel::fb::PadMode;
    struct Case {
      PoolType pool;
      int c, h, w, kh, kw, sh, sw, pad;
      PM mode;
      bool ceil_mode, include_pad, global;
    };
    const Case cases[] = {
        {PoolType::Max, 5, 13, 17, 3, 3, 2, 2, 1, PM::Explicit, false, true, false},
        {PoolType::Average, 5, 13, 17, 3, 3, 2, 2, 1, PM::Explicit, true, false, false},
        {PoolType::Average, 3, 9, 10, 2, 2, 2, 2, 0, PM::SameUpper, false, true, false},
        {PoolType::Max, 3, 9, 10, 3, 2, 1, 2, 0, PM::SameLower, false, true, false},
        {PoolType::Average, 7, 7, 7, 1, 1, 1, 1, 0, PM::Explicit, false, true, true},
        {PoolType::Max, 7, 1, 1, 1, 1, 1, 1, 0, PM::Explicit, false, true, true},
    };
    std::mt19937 rng(81);
    int checks = 0;
    for (const Case& k : cases) {
      INFO("pool " << int(k.pool) << " " << k.c << "x" << k.h << "x" << k.w << " k" << k.kh << "x" << k.kw << " s"
                   << k.sh << "x" << k.sw << " pad " << k.pad << " mode " << int(k.mode));
      kestrel::fb::PoolingParamT p;
      p.pool = k.pool;
      p.global = k.global;
      p.kernel_h = k.kh, p.kernel_w = k.kw, p.stride_h = k.sh, p.stride_w = k.sw;
      p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k.pad;
      p.pad_mode = k.mode;
      p.round_mode = k.ceil_mode ? kestrel::fb::RoundMode::Ceil : kestrel::fb::RoundMode::Floor;
      p.count_include_pad = k.include_pad;
      lt::Harness h("Pooling", p);
      REQUIRE(h.load.ok());
      const Mat in = lt::make_mat(Shape::make3(k.w, k.h, k.c), lt::random_values(size_t(k.c) * k.h * k.w, rng));
      checks += kt::check_layer_kernel_sets(*h.layer, {in}, 1e-4);
    }
    CHECK(checks == 2 * int(sizeof(cases) / sizeof(cases[0])));
  }
}
