// libFuzzer target: caffemodel bytes (binary NetParameter) through the Caffe front
// end, paired with one of the test networks' prototxts (tests/caffe): the first byte
// of the input picks the prototxt, the rest is the caffemodel. Then optimize, load
// and run. seed_corpus.py writes the seeds in the same layout.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "caffe/caffe_import.h"
#include "fuzz_convert.h"

namespace {

// Fixed, so that a kept input keeps meaning the same pairing; seed_corpus.py has
// the same list (CAFFEMODEL_NETS).
const char* const kNets[] = {
    "activations",      "batchnorm_fold", "batchnorm_standalone", "concat_slice_split",
    "conv_variants",    "crop",           "deconv",               "eltwise",
    "flatten_axis",     "innerproduct_dropout", "lrn",            "normalize",
    "pooling",          "power",          "reshape_permute_softmax", "scale_two_bottoms",
    "ssd_mini",         "ssd_unshared",   "ssd_variants",         "v1_layers",
};
constexpr size_t kNetCount = sizeof(kNets) / sizeof(kNets[0]);

const std::vector<std::string>& prototxts() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> t;
    for (const char* name : kNets) {
      const std::string path = std::string(KESTREL_CAFFE_TEST_DIR) + "/" + name + ".prototxt";
      std::ifstream f(path);
      if (!f) {
        // A build without the test networks cannot mean anything here.
        std::fprintf(stderr, "fuzz_caffemodel: cannot read %s\n", path.c_str());
        std::abort();
      }
      std::stringstream s;
      s << f.rdbuf();
      t.push_back(s.str());
    }
    return t;
  }();
  return texts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string& prototxt = prototxts()[data[0] % kNetCount];
  kestrel::convert::Graph g;
  if (!kestrel::convert::import_caffe_bytes(prototxt, data + 1, size - 1, {}, &g).ok()) return 0;
  kestrel_fuzz::optimize_and_run(g, static_cast<uint32_t>(size));
  return 0;
}
