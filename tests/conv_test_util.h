// Running one convolution kernel on blocked or planar operands, for the kernel suites
// (test_kernels_blocked.cpp, test_kernels_pack4_neon.cpp, test_kernels_im2col_pack4_neon.cpp).
#pragma once
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "kernel_test_util.h"
#include "kernels/conv_kernels.h"

namespace kt {

// The conv kernel of this name that this CPU runs, or null.
inline const kestrel::kernels::ConvKernel* find_kernel(const char* name) {
  for (const kestrel::kernels::ConvKernel* k : runnable_kernels(kestrel::kernels::conv_kernels())) {
    if (std::strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

// Runs k on g with `in` (planar) given in g.in_pack's layout; the output comes back
// planar. With nan_padding the input's channel padding (past each channel's values up
// to its cstep) is NaN, so a kernel that reads it into a result shows.
inline kestrel::Mat run_conv_kernel(const kestrel::kernels::ConvKernel* k, const kestrel::kernels::ConvGeometry& g,
                                    const kestrel::Mat& in, const float* packed, int threads,
                                    bool nan_padding = false) {
  kestrel::Mat src = g.in_pack == 1 ? (nan_padding ? in.clone() : in) : kestrel::convert_packing(in, g.in_pack);
  REQUIRE(src.data != nullptr);
  if (nan_padding) {
    const size_t plane = size_t(src.w) * src.h * src.elempack;
    for (int q = 0; q < src.c; ++q) std::fill(src.channel(q) + plane, src.channel(q) + src.cstep, NAN);
  }
  kestrel::Shape os = kestrel::Shape::make3(g.out_w, g.out_h, g.out_c / g.out_pack);
  os.elempack = g.out_pack;
  kestrel::Mat out;
  REQUIRE(out.create(os));
  fill_sentinel(out);
  KernelScratch scratch;
  const auto ctx = scratch.make(k->workspace_bytes(g), k->workspace_per_thread_bytes(g), threads);
  k->run(g, packed, src.data, src.cstep, out.data, out.cstep, ctx);
  CHECK_MESSAGE(padding_untouched(out), "wrote into channel padding");
  return g.out_pack == 1 ? out : kestrel::convert_packing(out, 1);
}

// A 1x1 stride-1 convolution of an h x w map with bias (Clip from 0 to 6, LeakyReLU's
// slope 0.1).
inline kestrel::kernels::ConvGeometry pointwise(int in_c, int h, int w, int out_c, kestrel::fb::ActivationType act,
                                               bool bias = true) {
  kestrel::kernels::ConvGeometry g;
  g.in_c = in_c;
  g.out_c = out_c;
  g.in_h = g.out_h = h;
  g.in_w = g.out_w = w;
  g.bias = bias;
  g.act.type = act;
  g.act.alpha = act == kestrel::fb::ActivationType::Clip ? 0.f : 0.1f;
  g.act.beta = 6.f;
  return g;
}

// A geometry in one line, for INFO().
inline std::string describe_conv(const kestrel::kernels::ConvGeometry& g) {
  std::ostringstream o;
  o << g.in_c << "x" << g.in_h << "x" << g.in_w << " -> " << g.out_c << "x" << g.out_h << "x" << g.out_w << " k"
    << g.kh << "x" << g.kw << " s" << g.sh << " d" << g.dh << " pad " << g.pad_top << "," << g.pad_left << " act "
    << int(g.act.type) << " packs " << g.in_pack << ">" << g.out_pack;
  return o.str();
}

// The same shape and the same bits in every channel's values (padding not compared).
inline bool same_plane_values(const kestrel::Mat& a, const kestrel::Mat& b) {
  if (a.shape() != b.shape()) return false;
  const size_t plane = size_t(a.w) * a.h;
  for (int c = 0; c < a.c; ++c) {
    if (std::memcmp(a.channel(c), b.channel(c), plane * sizeof(float)) != 0) return false;
  }
  return true;
}

// A kernel that takes every layout of whole blocks of `lanes` (NEON's pack4 kernels) on
// g: on random operands its planar run against the reference, then every layout
// (claimed exactly where the channels are whole blocks) at each thread count, bit for
// bit against the planar run, the input's channel padding NaN. Returns the runs.
inline int check_every_layout(const kestrel::kernels::ConvKernel* k, const kestrel::kernels::ConvGeometry& g,
                              std::mt19937& rng, const std::vector<int>& thread_counts, int lanes = 4) {
  REQUIRE(k->supports(g));
  kestrel::Mat in;
  REQUIRE(in.create(kestrel::Shape::make3(g.in_w, g.in_h, g.in_c)));
  fill_random(in, rng);
  const std::vector<float> w = random_vector(size_t(g.out_c) * (g.in_c / g.group) * g.kh * g.kw, rng);
  const std::vector<float> b = random_vector(g.out_c, rng);
  const float* bias = g.bias ? b.data() : nullptr;
  kestrel::Mat packed;
  REQUIRE(packed.create(kestrel::Shape::make1(int(k->packed_floats(g)))));
  k->pack(g, w.data(), bias, packed.data);
  const kestrel::Mat want = run_conv_kernel(k, g, in, packed.data, 1, true);
  kestrel::Mat ref;
  REQUIRE(ref.create(kestrel::Shape::make3(g.out_w, g.out_h, g.out_c)));
  kestrel::kernels::conv_reference(g, w.data(), bias, in.data, in.cstep, ref.data, ref.cstep, 1);
  CHECK(relative_error(want, ref) <= k->tolerance);
  int runs = 0;
  for (int in_pack : {1, lanes}) {
    for (int out_pack : {1, lanes}) {
      kestrel::kernels::ConvGeometry gb = g;
      gb.in_pack = in_pack;
      gb.out_pack = out_pack;
      const bool whole = (in_pack == 1 || g.in_c % lanes == 0) && (out_pack == 1 || g.out_c % lanes == 0);
      INFO("packs " << in_pack << ">" << out_pack);
      REQUIRE(k->supports(gb) == whole);
      if (!whole) continue;
      for (int threads : thread_counts) {
        INFO("threads " << threads);
        CHECK(same_plane_values(run_conv_kernel(k, gb, in, packed.data, threads, true), want));
        ++runs;
      }
    }
  }
  return runs;
}

}  // namespace kt
