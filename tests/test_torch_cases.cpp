// Every layer case written by tests/torch/gen_cases.py (expected outputs from PyTorch,
// or OpenCV DNN for the SSD layers) through Net::load and an Extractor, with each
// kernel set and with 1 and 2 threads. Tolerance: max abs error <= 1e-4 * max(1,
// max|expected|); the 2-thread result must equal the 1-thread result bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "mat_npy.h"
#include "test_util.h"

namespace {

using kt::dims_of;
using kt::dims_string;
using kt::to_mat;
using kt::values_of;

struct CaseInfo {
  std::string dir, layer, tag;
  int inputs = 0, outputs = 0;
};

// Detections are a set: order rows by (score desc, label, box) on both sides, since
// Caffe/OpenCV list them by class and Kestrel by score.
void canonical_detections(std::vector<float>* v) {
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i + 6 <= v->size(); i += 6) rows.emplace_back(v->begin() + i, v->begin() + i + 6);
  std::sort(rows.begin(), rows.end(), [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a[1] != b[1]) return a[1] > b[1];
    return a < b;
  });
  v->clear();
  for (const auto& r : rows) v->insert(v->end(), r.begin(), r.end());
}

struct Stats {
  int cases = 0;
  double max_rel = 0;
};

}  // namespace

TEST_SUITE("torch") {
  TEST_CASE("every layer case matches PyTorch / OpenCV") {
    const char* dir = std::getenv("KESTREL_TORCH_CASES");
    if (!dir) {
      MESSAGE("KESTREL_TORCH_CASES is not set: run this suite through ctest, which generates the cases");
      return;
    }
    std::ifstream manifest(std::string(dir) + "/manifest.txt");
    REQUIRE_MESSAGE(manifest.good(), "no manifest in ", dir);
    std::vector<CaseInfo> cases;
    for (std::string line; std::getline(manifest, line);) {
      if (line.empty()) continue;
      std::istringstream ss(line);
      CaseInfo c;
      ss >> c.dir >> c.layer >> c.inputs >> c.outputs >> c.tag;
      cases.push_back(c);
    }
    std::map<std::string, Stats> stats;
    for (const CaseInfo& c : cases) {
      const std::string base = std::string(dir) + "/" + c.dir + "/";
      std::vector<kestrel::Mat> inputs;
      std::vector<kt::NpyArray> expected(c.outputs);
      for (int i = 0; i < c.inputs; ++i) {
        kt::NpyArray a;
        const std::string err = kt::read_npy(base + "in" + std::to_string(i) + ".npy", &a);
        REQUIRE_MESSAGE(err.empty(), err);
        inputs.push_back(to_mat(a));
      }
      for (int i = 0; i < c.outputs; ++i) {
        const std::string err = kt::read_npy(base + "out" + std::to_string(i) + ".npy", &expected[i]);
        REQUIRE_MESSAGE(err.empty(), err);
      }
      Stats& st = stats[c.layer];
      ++st.cases;
      for (kestrel::KernelSet kernels : {kestrel::KernelSet::kReference, kestrel::KernelSet::kFast}) {
        kestrel::Net net;
        net.option().kernels = kernels;
        const kestrel::Status ls = net.load(base + "model.kst");
        CHECK_MESSAGE(ls.ok(), c.dir, " (", c.tag, "): ", ls.message());
        if (!ls.ok()) continue;
        std::vector<std::vector<float>> first(c.outputs);
        for (int threads : {1, 2}) {
          kestrel::Extractor ex = net.create_extractor();
          ex.set_num_threads(threads);
          for (int i = 0; i < c.inputs; ++i) REQUIRE(ex.input("in" + std::to_string(i), inputs[i]).ok());
          for (int i = 0; i < c.outputs; ++i) {
            kestrel::Mat out;
            const kestrel::Status s = ex.extract("out" + std::to_string(i), out);
            CHECK_MESSAGE(s.ok(), c.dir, " (", c.tag, "): ", s.message());
            if (!s.ok()) continue;
            std::vector<float> got = values_of(out);
            std::vector<float> want = expected[i].data;
            const bool shape_ok = dims_of(out) == expected[i].shape ||
                                  (want.empty() && got.empty());  // e.g. no detections
            CHECK_MESSAGE(shape_ok, c.dir, " (", c.tag, "): output ", i, " has the wrong shape: ", dims_string(dims_of(out)), " vs expected ", dims_string(expected[i].shape));
            if (!shape_ok) continue;
            if (c.layer == "DetectionOutput") {
              canonical_detections(&got);
              canonical_detections(&want);
            }
            double max_abs = 0, max_expected = 0;
            for (size_t k = 0; k < want.size(); ++k) {
              max_abs = std::max(max_abs, std::fabs(double(got[k]) - double(want[k])));
              if (std::isnan(got[k]) != std::isnan(want[k])) max_abs = INFINITY;
              max_expected = std::max(max_expected, std::fabs(double(want[k])));
            }
            const double scale = std::max(1.0, max_expected);
            st.max_rel = std::max(st.max_rel, max_abs / scale);
            CHECK_MESSAGE(max_abs <= 1e-4 * scale, c.dir, " (", c.tag, "): max abs error ", max_abs,
                          " over tolerance ", 1e-4 * scale);
            if (threads == 1) {
              first[i] = got;
            } else {
              CHECK_MESSAGE(got == first[i], c.dir, " (", c.tag, "): 2 threads differ from 1 thread");
            }
          }
        }
      }
    }
    std::ostringstream table;
    table << "\n| layer | cases | largest relative error |\n|---|---|---|\n";
    int total = 0;
    for (const auto& [layer, s] : stats) {
      table << "| " << layer << " | " << s.cases << " | " << s.max_rel << " |\n";
      total += s.cases;
    }
    table << "| all (" << stats.size() << " layers) | " << total << " | |\n";
    MESSAGE(table.str());
    CHECK(total >= 300);
  }
}
