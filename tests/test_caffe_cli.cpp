// kestrel-convert, the binary: options, agreement with the library, and bad input
// (clear errors, no output file).
#include "caffe_test_util.h"

using namespace ct;

TEST_SUITE("caffe") {
  TEST_CASE("kestrel-convert: options, and the same results as the library") {
    if (!cases_dir()) return;
    const std::vector<NetCase> nets = read_manifest();
    std::map<std::string, NetCase> by_name;
    for (const NetCase& nc : nets) by_name[nc.name] = nc;
    const std::string dir = work_dir("convert_tool");
    for (const char* name : {"ssd_mini", "v1_layers", "batchnorm_fold"}) {
      REQUIRE(by_name.count(name));
      const NetCase& nc = by_name[name];
      for (bool no_opt : {false, true}) {
        const std::string out = dir + name + (no_opt ? "_plain.kst" : ".kst");
        const RunResult r = run_convert("caffe " + quoted(nc.dir() + "net.prototxt") + " " +
                                            quoted(nc.dir() + "net.caffemodel") + " " + quoted(out) +
                                            " --meta task=test --meta labels=a,b" + (no_opt ? " --no-optimize" : ""),
                                        dir + name + ".log");
        CHECK_MESSAGE(r.rc == 0, name, ": kestrel-convert failed (", r.rc, "): ", r.log);
        if (r.rc != 0) continue;
        std::ifstream f(out, std::ios::binary);
        Converted cv;
        cv.bytes.assign(std::istreambuf_iterator<char>(f), {});
        // Intermediate names in the file are unknown here: compare the outputs only.
        NetStats st;
        NetCase outputs_only = nc;
        outputs_only.blobs.clear();
        run_and_compare(outputs_only, cv, no_opt ? "kestrel-convert --no-optimize" : "kestrel-convert", {1}, &st);
        kestrel::Net net;
        REQUIRE(net.load(out).ok());
        CHECK(net.metadata("task") == "test");
        CHECK(net.metadata("labels") == "a,b");
      }
    }
    // --input-shape: the network is prepared for the given size.
    REQUIRE(by_name.count("conv_variants"));
    const NetCase& nc = by_name["conv_variants"];
    const std::string out = dir + "conv_variants_20x24.kst";
    const RunResult r = run_convert("caffe " + quoted(nc.dir() + "net.prototxt") + " " +
                                        quoted(nc.dir() + "net.caffemodel") + " " + quoted(out) +
                                        " --input-shape data=1,3,20,24",
                                    dir + "input_shape.log");
    REQUIRE_MESSAGE(r.rc == 0, r.log);
    kestrel::Net net;
    net.option().kernels = kestrel::KernelSet::kReference;
    REQUIRE(net.load(out).ok());
    kestrel::Shape s;
    REQUIRE(net.input_shape("data", &s).ok());
    CHECK(s.dims == 3);
    CHECK(s.c == 3);
    CHECK(s.h == 20);
    CHECK(s.w == 24);
    kestrel::Extractor ex = net.create_extractor();
    const kestrel::Mat x = kt::random_mat(s, 7);
    REQUIRE(ex.input("data", x).ok());
    kestrel::Mat y;
    REQUIRE(ex.extract("conv_1x1", y).ok());
    CHECK(dims_of(y) == std::vector<int>{6, 5, 12});  // 20x24 -> stride 2 (h) -> stride 2
  }

  TEST_CASE("kestrel-convert: bad input gives a clear error and no output file") {
    if (!cases_dir()) return;
    const std::string dir = work_dir("bad_input");
    const std::string good_proto = dir + "small.prototxt";
    write_text(good_proto, kSmallNet);
    const std::string good_model = dir + "small.caffemodel";
    write_small_model(good_model, SmallModel());

    // The well-formed pair converts: the failures below are the files' fault.
    {
      const RunResult r = run_convert("caffe " + quoted(good_proto) + " " + quoted(good_model) + " " +
                                          quoted(dir + "good.kst"),
                                      dir + "good.log");
      REQUIRE_MESSAGE(r.rc == 0, r.log);
      kestrel::Net net;
      CHECK(net.load(dir + "good.kst").ok());
    }

    struct Bad {
      std::string what, proto, model;
      std::vector<std::string> must_name;  // in the message
    };
    std::vector<Bad> bad;
    {
      const std::string p = dir + "syntax.prototxt";
      std::string text = kSmallNet;
      text.replace(text.find("kernel_size: 3"), 14, "kernel_size: { 3");
      write_text(p, text);
      bad.push_back({"prototxt syntax error", p, good_model, {"syntax.prototxt"}});
    }
    {
      const std::string m = dir + "no_conv_blobs.caffemodel";
      SmallModel sm;
      sm.conv_blobs = false;
      write_small_model(m, sm);
      bad.push_back({"a layer without its blobs", good_proto, m, {"conv1", "Convolution"}});
    }
    {
      const std::string m = dir + "no_fc_layer.caffemodel";
      SmallModel sm;
      sm.fc_layer = false;
      write_small_model(m, sm);
      bad.push_back({"a layer missing from the caffemodel", good_proto, m, {"fc1", "InnerProduct"}});
    }
    {
      const std::string m = dir + "short_conv.caffemodel";
      SmallModel sm;
      sm.conv_w_count = 50;  // the shape says 54
      write_small_model(m, sm);
      bad.push_back({"a blob with fewer values than its shape", good_proto, m, {"conv1", "Convolution"}});
    }
    {
      const std::string m = dir + "wrong_conv_shape.caffemodel";
      SmallModel sm;
      sm.conv_w = {3, 2, 5, 5};  // kernel_size is 3
      write_small_model(m, sm);
      bad.push_back({"a convolution blob of the wrong shape", good_proto, m, {"conv1", "Convolution"}});
    }
    {
      const std::string m = dir + "wrong_fc_shape.caffemodel";
      SmallModel sm;
      sm.fc_w = {5, 40};  // the input has 3*4*4 = 48 values
      write_small_model(m, sm);
      bad.push_back({"an InnerProduct blob of the wrong size", good_proto, m, {"fc1", "InnerProduct"}});
    }
    {
      const std::string p = dir + "unsupported.prototxt";
      write_text(p, std::string(kSmallNet) +
                        "layer { name: \"tile1\" type: \"Tile\" bottom: \"fc1\" top: \"tile1\" }\n");
      bad.push_back({"an unsupported layer type", p, good_model, {"tile1", "Tile"}});
    }
    {
      const std::string p = dir + "unknown_bottom.prototxt";
      write_text(p, std::string(kSmallNet) +
                        "layer { name: \"prob\" type: \"Softmax\" bottom: \"fc9\" top: \"prob\" }\n");
      bad.push_back({"a bottom no layer produces", p, good_model, {"prob", "fc9"}});
    }
    {
      const std::string m = dir + "garbage.caffemodel";
      write_text(m, "this is not a protobuf message \xff\xff\xff\xff");
      bad.push_back({"a caffemodel that is not a NetParameter", good_proto, m, {"garbage.caffemodel"}});
    }
    bad.push_back({"a missing prototxt", dir + "absent.prototxt", good_model, {"absent.prototxt"}});
    bad.push_back({"a missing caffemodel", good_proto, dir + "absent.caffemodel", {"absent.caffemodel"}});

    int k = 0;
    for (const Bad& b : bad) {
      const std::string out = dir + "bad" + std::to_string(k) + ".kst";
      const RunResult r = run_convert("caffe " + quoted(b.proto) + " " + quoted(b.model) + " " + quoted(out),
                                      dir + "bad" + std::to_string(k) + ".log");
      ++k;
      CHECK_MESSAGE(r.rc != 0, b.what, ": kestrel-convert succeeded");
      CHECK_MESSAGE(!fs::exists(out), b.what, ": kestrel-convert left an output file");
      for (const std::string& name : b.must_name) {
        CHECK_MESSAGE(contains(r.log, name), b.what, ": the message does not name '", name, "': ", r.log);
      }
      // The library reports the same, as a Status.
      Graph g;
      const kestrel::Status s = kestrel::convert::import_caffe(b.proto, b.model, {}, &g);
      kestrel::Status s2 = s;
      if (s.ok()) {  // shape errors may surface only when the graph is checked
        kestrel::convert::OptimizeReport report;
        s2 = kestrel::convert::optimize(g, &report);
      }
      CHECK_MESSAGE(!s2.ok(), b.what, ": import_caffe + optimize succeeded");
      MESSAGE(b.what, " -> ", s2.ok() ? r.log : s2.message());
    }
  }
}  // TEST_SUITE
