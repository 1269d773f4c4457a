// Kestrel's Caffe converter end to end against OpenCV DNN. tests/caffe/run_opencv.py
// (a ctest fixture) writes, for every project prototxt in tests/caffe and the real
// MobileNet v1 / MobileNet-SSD definitions from ../shared, a seeded random caffemodel,
// an input and OpenCV's outputs and intermediate blobs. Here each network is converted
// with the library (import_caffe, then optimize or not, then to_builder), run with the
// reference kernels (unoptimized on 1 thread, optimized on 1 and 2), and compared:
//   - outputs: max abs error <= 1e-4 * max(1, max|expected|), the same shape;
//   - intermediate blobs whose name survives conversion: the same tolerance;
//   - DetectionOutput: the same set of detections (label equal, score and box corners
//     within 1e-4; boxes are normalized, so that is 1e-4 of the image size);
//   - 2 threads: bit for bit the 1-thread result.
// The kestrel-convert binary is checked on a few networks (options included) and on
// bad input: clear errors naming the layer and type, and no output file.
#include "caffe_test_util.h"

using namespace ct;

TEST_SUITE("caffe") {
  TEST_CASE("converted Caffe networks match OpenCV DNN") {
    if (!cases_dir()) {
      MESSAGE("KESTREL_CAFFE_CASES is not set: run this suite through ctest, which generates the cases");
      return;
    }
    const std::vector<NetCase> nets = read_manifest();
    REQUIRE(!nets.empty());
    std::vector<NetStats> all;
    std::vector<std::string> notes;
    for (const NetCase& nc : nets) {
      NetStats st;
      st.name = nc.name;
      const std::string proto = nc.dir() + "net.prototxt", model = nc.dir() + "net.caffemodel";
      st.caffe_layers = count_prototxt_layers(proto);
      // As imported: every layer's own nodes, so every blob name can be compared.
      const Converted plain = convert(proto, model, false);
      const auto pending = kNotYetSupported.find(nc.name);
      if (pending != kNotYetSupported.end()) {
        if (!plain.status.ok()) {
          // Not converted yet: the failure must be a clear "unsupported" naming the layer.
          CHECK_MESSAGE(plain.status.code() == kestrel::ErrorCode::kUnsupported, nc.name, ": ",
                        plain.status.message());
          CHECK_MESSAGE(contains(plain.status.message(), "layer '"), nc.name, ": ", plain.status.message());
          notes.push_back(nc.name + " (" + pending->second + "): not converted: " + plain.status.message());
          st.detections = "not converted";
          all.push_back(st);
          continue;
        }
        notes.push_back(nc.name + " (" + pending->second + ") converts now: move it off kNotYetSupported");
      }
      CHECK_MESSAGE(plain.status.ok(), nc.name, ": import_caffe: ", plain.status.message());
      if (!plain.status.ok()) {
        st.ok = false;
        all.push_back(st);
        continue;
      }
      NetStats plain_st = st;
      const bool once = kSanitized && nc.origin == "shared";
      if (once) {
        notes.push_back(nc.name + ": sanitizer build, run once (optimized, 1 thread)");
      } else {
        run_and_compare(nc, plain, "unoptimized", {1}, &plain_st);
      }
      // As kestrel-convert writes it by default.
      const Converted opt = convert(proto, model, true);
      CHECK_MESSAGE(opt.status.ok(), nc.name, ": optimize: ", opt.status.message());
      if (!opt.status.ok()) {
        st.ok = false;
        all.push_back(st);
        continue;
      }
      run_and_compare(nc, opt, "optimized", once ? std::vector<int>{1} : std::vector<int>{1, 2}, &st);
      st.nodes_before = opt.nodes_before;
      st.nodes_after = opt.nodes_after;
      st.passes = passes_text(opt.applied);
      st.convert_ms = opt.ms;
      st.out_rel = std::max(st.out_rel, plain_st.out_rel);
      st.blob_rel = std::max(st.blob_rel, plain_st.blob_rel);
      if (!once) st.blobs_compared = plain_st.blobs_compared;  // most survive before optimization
      st.ok = st.ok && plain_st.ok;
      all.push_back(st);
    }
    std::ostringstream table;
    table << "\n| network | Caffe layers | nodes imported | after optimize | passes applied | largest output error"
             " | largest blob error (blobs compared) | detections | convert ms | run ms (1 thread) |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const NetStats& s : all) {
      table << "| " << s.name << (s.ok ? "" : " (FAILED)") << " | " << s.caffe_layers << " | " << s.nodes_before
            << " | " << s.nodes_after << " | " << s.passes << " | " << s.out_rel << " | " << s.blob_rel << " ("
            << s.blobs_compared << "/" << s.blobs_total << ") | " << (s.detections.empty() ? "-" : s.detections)
            << " | " << std::fixed;
      table.precision(1);
      table << s.convert_ms << " | " << s.run_ms << " |\n";
      table << std::defaultfloat;
      table.precision(6);
    }
    for (const std::string& n : notes) table << "\n" << n;
    MESSAGE(table.str());
    // The project's nets alone: a fixture that wrote none would pass vacuously.
    CHECK(nets.size() >= 15);
  }

}  // TEST_SUITE
