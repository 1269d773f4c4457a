#include "kernels/isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace kestrel::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kNeon: return "neon";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    default: return "ref";
  }
}

Isa host_isa() {
  static const Isa isa = detail::detect_host_isa();
  return isa;
}

bool host_has_in_order_cores() {
  static const bool in_order = detail::detect_in_order_cores();
  return in_order;
}

namespace {

Isa read_active() {
  const Isa host = host_isa();
  const char* env = std::getenv("KESTREL_ISA");
  if (!env || !*env) return host;
  for (Isa want : {Isa::kRef, Isa::kNeon, Isa::kAvx2, Isa::kAvx512}) {
    if (std::strcmp(env, isa_name(want)) != 0) continue;
    if (want == Isa::kRef || isa_allows(host, want)) return want;
    std::fprintf(stderr, "kestrel: KESTREL_ISA=%s is not available on this CPU (it has %s); using %s\n", env,
                 isa_name(host), isa_name(host));
    return host;
  }
  std::fprintf(stderr, "kestrel: unknown KESTREL_ISA=%s (ref, neon, avx2, avx512); using %s\n", env, isa_name(host));
  return host;
}

}  // namespace

Isa active_isa() {
  static const Isa isa = read_active();
  return isa;
}

const char* feature_name(Feature f) {
  switch (f) {
    case Feature::kFp16Arith: return "fp16";
    case Feature::kBf16: return "bf16";
    case Feature::kDot8: return "dot8";
    default: return "vbmi";
  }
}

namespace {

constexpr Feature kFeatures[] = {Feature::kFp16Arith, Feature::kBf16, Feature::kDot8, Feature::kVbmi};
constexpr int kFeatureCount = sizeof(kFeatures) / sizeof(kFeatures[0]);

constexpr Isa kLevels[] = {Isa::kRef, Isa::kNeon, Isa::kAvx2, Isa::kAvx512};
constexpr int kLevelCount = sizeof(kLevels) / sizeof(kLevels[0]);

struct FeatureSet {
  bool host[kFeatureCount] = {};
  bool active[kLevelCount][kFeatureCount] = {};  // by level
  char text[32] = {};
};

// Each name of KESTREL_DISABLE, a comma-separated list, checked against the known ones.
bool listed(const char* list, const char* name) {
  for (const char* p = list; *p;) {
    const char* end = std::strchr(p, ',');
    const size_t n = end ? static_cast<size_t>(end - p) : std::strlen(p);
    if (n == std::strlen(name) && std::strncmp(p, name, n) == 0) return true;
    p += n + (end ? 1 : 0);
  }
  return false;
}

const FeatureSet& features() {
  static const FeatureSet set = [] {
    FeatureSet s;
    const char* off = std::getenv("KESTREL_DISABLE");
    const int active_level = static_cast<int>(active_isa());
    for (Feature f : kFeatures) {
      const int i = static_cast<int>(f);
      s.host[i] = host_isa() != Isa::kRef && detail::detect_feature(f, host_isa());
      const bool disabled = off && listed(off, feature_name(f));
      for (Isa level : kLevels) {
        const int l = static_cast<int>(level);
        s.active[l][i] = level != Isa::kRef && isa_allows(active_isa(), level) && !disabled &&
                         detail::detect_feature(f, level);
      }
      if (!s.active[active_level][i]) continue;
      if (s.text[0]) std::strncat(s.text, ",", sizeof s.text - std::strlen(s.text) - 1);
      std::strncat(s.text, feature_name(f), sizeof s.text - std::strlen(s.text) - 1);
    }
    return s;
  }();
  return set;
}

}  // namespace

bool host_has(Feature f) { return features().host[static_cast<int>(f)]; }
bool active_has(Feature f, Isa level) { return features().active[static_cast<int>(level)][static_cast<int>(f)]; }
bool active_has(Feature f) { return active_has(f, active_isa()); }
const char* active_features() { return features().text; }

bool isa_allows(Isa active, Isa kernel) {
  if (kernel == Isa::kRef) return true;
  // NEON and the x86 levels never mix: one binary holds one architecture's kernels.
  if (kernel == Isa::kNeon) return active == Isa::kNeon;
  if (active == Isa::kNeon) return false;
  return static_cast<int>(active) >= static_cast<int>(kernel);
}

}  // namespace kestrel::kernels
