// ONNX backend conformance: Kestrel's ONNX front end against ONNX's own test data
// (Debian's libonnx-testdata: node/, pytorch-converted/, pytorch-operator/ and simple/
// under /usr/share/libonnx-testdata/data, each test a model.onnx with
// test_data_set_*/input_*.pb and output_*.pb).
//
// Every model goes through what kestrel-convert does (import_onnx_bytes, optimize,
// to_builder) and Kestrel's own loader, runs on each data set, and its outputs are
// compared with ONNX's backend tolerance (|got - want| <= 1e-5 + 1e-3 * |want|
// elementwise), with the fast kernels and with the reference ones (1 thread). Inputs
// are fed in the shape the converted Net declares for them (the importer keeps an
// ONNX shape as it is, or drops a leading batch dim of 1 for the image layers), which
// must hold the data set's element count; output shapes must match ONNX's once the
// leading 1s of both are dropped. Each test is:
//   - pass;
//   - unsupported: an op not in supported_onnx_ops(), inputs or outputs Kestrel cannot
//     carry (not float32 tensors; inputs that are scalars, empty, or of rank > 5 or
//     rank 5 without a leading 1; empty outputs), or import_onnx saying kUnsupported
//     (its message must name the node);
//   - too large: a model over kMaxModelBytes or an input over kMaxInputElements;
//   - fail: anything else (a wrong result or shape, a load or run error, any other
//     import error on a model whose ops are all claimed, an exception).
// A test that comes out unsupported with more than one graph input is run again with
// the inputs after the first frozen into initializers holding the data set's values
// (ONNX's node tests feed weights as inputs; Kestrel's importer needs most constant), when
// every data set holds the same values for them; the retry's outcome is the test's,
// and the table says how many of the passes needed it.
// The table counts each test under each op type of its model (unsupported ones under
// the op that is not supported when it is known); the totals count tests. After it
// come the claimed ops without a passing test and, with its reason, every test of
// claimed ops that came out unsupported.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/optimize.h"
#include "kestrel/net.h"
#include "onnx/onnx_import.h"
#include "onnx_test_util.h"

namespace {

namespace fs = std::filesystem;
using kestrel::ErrorCode;
using kestrel::Status;

constexpr const char* kDataDir = "/usr/share/libonnx-testdata/data";
constexpr const char* kSubdirs[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
constexpr uintmax_t kMaxModelBytes = 4u << 20;
constexpr size_t kMaxInputElements = 1u << 20;

enum Outcome { kPass = 0, kUnsupported, kFail, kTooLarge, kOutcomes };

struct TestResult {
  std::string name;  // "node/test_relu"
  Outcome outcome = kFail;
  std::string reason;
  std::vector<std::string> ops;  // the op types the outcome is counted under
  // Run with every graph input after the first frozen into an initializer (see
  // run_frozen); the retry's outcome replaces the first attempt's.
  bool frozen = false;
  enum Retry { kNotRetried, kRetried, kRetryImpossible } retry = kNotRetried;
};

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The op type in import_onnx's "node 'NAME' (OpType, opset N): ..." message, or "".
std::string op_in_message(const std::string& msg) {
  const size_t n = msg.find("node '");
  if (n == std::string::npos) return "";
  const size_t open = msg.find("' (", n + 6);
  if (open == std::string::npos) return "";
  const size_t start = open + 3;
  const size_t end = msg.find_first_of(",)", start);
  return end == std::string::npos ? "" : msg.substr(start, end - start);
}

std::vector<fs::path> sorted_dirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) r.push_back(e.path());
  }
  std::sort(r.begin(), r.end());
  return r;
}

struct DataSet {
  std::string name;
  std::vector<ot::FloatTensor> inputs, outputs;  // with their full ONNX dims
};

// Reads one data set; "" or why it cannot be run (*outcome says which kind).
std::string read_data_set(const fs::path& dir, const ot::ModelInfo& mi, DataSet* ds, Outcome* outcome) {
  ds->name = dir.filename().string();
  *outcome = kUnsupported;
  auto read = [&](const char* kind, size_t i, const std::string& tensor_name, ot::FloatTensor* t) -> std::string {
    const fs::path p = dir / (std::string(kind) + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) {
      *outcome = kFail;
      return ds->name + ": missing " + p.filename().string();
    }
    std::string why = ot::read_float_tensor(p.string(), t);
    // Inputs must fit a Kestrel blob; an output only must not be empty (a scalar
    // comes out as Kestrel's 1-D [1]).
    if (why.empty() && std::string(kind) == "input") why = ot::carry_problem(t->dims);
    if (why.empty() && t->values.empty()) why = "an empty tensor " + ot::dims_text(t->dims);
    if (!why.empty()) return std::string(kind) + " '" + tensor_name + "': " + why;
    return "";
  };
  ds->inputs.resize(mi.inputs.size());
  for (size_t i = 0; i < mi.inputs.size(); ++i) {
    const std::string why = read("input", i, mi.inputs[i].name, &ds->inputs[i]);
    if (!why.empty()) return why;
    if (ds->inputs[i].values.size() > kMaxInputElements) {
      *outcome = kTooLarge;
      return "input '" + mi.inputs[i].name + "' of " + std::to_string(ds->inputs[i].values.size()) + " elements";
    }
  }
  ds->outputs.resize(mi.outputs.size());
  for (size_t i = 0; i < mi.outputs.size(); ++i) {
    const std::string why = read("output", i, mi.outputs[i].name, &ds->outputs[i]);
    if (!why.empty()) return why;
  }
  return "";
}

// Runs the converted model on every data set; "" or the first difference.
std::string run_and_compare(const std::vector<uint8_t>& bytes, const ot::ModelInfo& mi,
                            const std::vector<DataSet>& sets, kestrel::KernelSet kernels) {
  kestrel::Net net;
  net.option().num_threads = 1;
  net.option().kernels = kernels;
  const Status ls = net.load(bytes.data(), bytes.size());
  if (!ls.ok()) return "Net::load: " + ls.message();
  const std::vector<std::string> in_names = net.input_names(), out_names = net.output_names();
  for (const ot::ValueInfo& v : mi.inputs) {
    if (std::find(in_names.begin(), in_names.end(), v.name) == in_names.end()) {
      return "the converted model has no input '" + v.name + "'";
    }
  }
  for (const DataSet& ds : sets) {
    std::vector<kestrel::Mat> mats(ds.inputs.size());
    kestrel::Extractor ex = net.create_extractor();
    ex.set_light_mode(false);
    for (size_t i = 0; i < ds.inputs.size(); ++i) {
      const std::string& name = mi.inputs[i].name;
      kestrel::Shape shape;
      const Status is = net.input_shape(name, &shape);
      if (!is.ok()) return "input '" + name + "': " + is.message();
      if (!ot::make_mat(shape, ds.inputs[i].values, &mats[i])) {
        return ds.name + ": input '" + name + "' " + ot::dims_text(ds.inputs[i].dims) + " does not fit the declared " +
               std::to_string(shape.dims) + "-D shape of " + std::to_string(shape.total()) + " values";
      }
      const Status s = ex.input(name, mats[i]);
      if (!s.ok()) return ds.name + ": input '" + name + "': " + s.message();
    }
    for (size_t i = 0; i < ds.outputs.size(); ++i) {
      const std::string& name = mi.outputs[i].name;
      kestrel::Mat out;
      const Status s = ex.extract(name, out);
      if (!s.ok()) return ds.name + ": extract '" + name + "': " + s.message();
      std::vector<int64_t> got;
      if (!out.empty()) {
        for (int d : ot::mat_dims(out)) got.push_back(d);
      }
      if (ot::without_leading_ones(got) != ot::without_leading_ones(ds.outputs[i].dims)) {
        return ds.name + ": output '" + name + "': shape " + ot::dims_text(got) + ", expected " +
               ot::dims_text(ds.outputs[i].dims) + " (leading 1s aside)";
      }
      const std::string diff = ot::compare_values(ot::mat_values(out), ds.outputs[i].values);
      if (!diff.empty()) return ds.name + ": output '" + name + "': " + diff;
    }
  }
  return "";
}

void convert_and_run(const fs::path& dir, const std::string& bytes, const ot::ModelInfo& mi, TestResult* r);
void run_frozen(const fs::path& dir, const std::string& bytes, const ot::ModelInfo& mi, TestResult* r);

TestResult run_test(const fs::path& dir, const std::string& group, const std::set<std::string>& claimed) {
  TestResult r;
  r.name = group + "/" + dir.filename().string();
  const fs::path model = dir / "model.onnx";
  std::error_code ec;
  const uintmax_t size = fs::file_size(model, ec);
  if (ec) {
    r.reason = "no model.onnx";
    return r;
  }
  if (size > kMaxModelBytes) {
    r.outcome = kTooLarge;
    r.reason = "model.onnx of " + std::to_string(size) + " bytes";
    return r;
  }
  std::string bytes;
  ot::ModelInfo mi;
  if (!ot::read_bytes(model.string(), &bytes)) {
    r.reason = "cannot read model.onnx";
    return r;
  }
  const std::string bad_model = ot::read_model_info(bytes, &mi);
  if (!bad_model.empty()) {
    r.reason = bad_model;
    return r;
  }
  r.ops = mi.op_types;
  if (r.ops.empty()) r.ops = {"(no nodes)"};

  // Ops the front end does not claim: unsupported, counted under those ops. The
  // import still runs (it must fail cleanly or convert, never crash).
  std::vector<std::string> unclaimed;
  std::string unclaimed_text;
  for (const ot::NodeInfo& n : mi.nodes) {
    const std::string key =
        (n.domain.empty() || n.domain == "ai.onnx") ? n.op_type : n.domain + "." + n.op_type;
    if (claimed.count(key) || std::find(unclaimed.begin(), unclaimed.end(), key) != unclaimed.end()) continue;
    unclaimed.push_back(key);
    unclaimed_text += (unclaimed_text.empty() ? "" : ", ") + key + " (node '" + n.name + "')";
  }
  if (!unclaimed.empty()) {
    kestrel::convert::Graph g;
    const Status s = kestrel::convert::import_onnx_bytes(bytes.data(), bytes.size(), {}, &g);
    r.outcome = kUnsupported;
    r.ops = unclaimed;
    r.reason = "not in supported_onnx_ops(): " + unclaimed_text +
               (s.ok() ? " (import_onnx converted it anyway)" : "");
    return r;
  }

  convert_and_run(dir, bytes, mi, &r);
  if (r.outcome == kUnsupported && mi.inputs.size() > 1) run_frozen(dir, bytes, mi, &r);
  return r;
}

// Checks the model's inputs and outputs, reads the data sets, imports, optimizes,
// runs and compares: sets r->outcome and r->reason (r->ops when the import names
// the op it does not support).
void convert_and_run(const fs::path& dir, const std::string& bytes, const ot::ModelInfo& mi, TestResult* rp) {
  TestResult& r = *rp;
  r.outcome = kFail;
  r.reason.clear();
  // Inputs and outputs Kestrel can carry: float32 tensors (their shapes are checked
  // with the data sets).
  for (const ot::ValueInfo& v : mi.inputs) {
    if (!v.is_tensor || v.elem_type != onnx::TensorProto::FLOAT) {
      r.outcome = kUnsupported;
      r.reason = "input types/shapes: input '" + v.name + "' is " + v.type_text();
      return;
    }
  }
  for (const ot::ValueInfo& v : mi.outputs) {
    if (!v.is_tensor || v.elem_type != onnx::TensorProto::FLOAT) {
      r.outcome = kUnsupported;
      r.reason = "input types/shapes: output '" + v.name + "' is " + v.type_text();
      return;
    }
  }
  std::vector<DataSet> sets;
  for (const fs::path& d : sorted_dirs(dir, "test_data_set_")) {
    DataSet ds;
    Outcome o;
    const std::string why = read_data_set(d, mi, &ds, &o);
    if (!why.empty()) {
      r.outcome = o;
      r.reason = (o == kUnsupported ? "input types/shapes: " : "") + why;
      return;
    }
    sets.push_back(std::move(ds));
  }
  if (sets.empty()) {
    r.reason = "no test_data_set_*";
    return;
  }

  // Symbolic or missing input dims: the first data set's shapes.
  kestrel::convert::OnnxImportOptions options;
  for (size_t i = 0; i < mi.inputs.size(); ++i) {
    const std::vector<int64_t>& d = sets[0].inputs[i].dims;
    if (!mi.inputs[i].fixed()) {
      options.input_shapes.emplace_back(mi.inputs[i].name, std::vector<int>(d.begin(), d.end()));
    }
  }
  kestrel::convert::Graph g;
  const Status is = kestrel::convert::import_onnx_bytes(bytes.data(), bytes.size(), options, &g);
  if (!is.ok()) {
    if (is.code() != ErrorCode::kUnsupported) {
      r.reason = std::string("import_onnx: ") + kestrel::error_code_name(is.code()) + ": " + is.message();
      return;
    }
    if (!contains(is.message(), "node '")) {
      r.reason = "import_onnx: kUnsupported without naming the node: " + is.message();
      return;
    }
    r.outcome = kUnsupported;
    r.reason = "import_onnx: " + is.message();
    const std::string op = op_in_message(is.message());
    if (std::find(mi.op_types.begin(), mi.op_types.end(), op) != mi.op_types.end()) r.ops = {op};
    return;
  }
  kestrel::convert::OptimizeReport report;
  const Status os = kestrel::convert::optimize(g, &report);
  if (!os.ok()) {
    r.reason = "optimize: " + os.message();
    return;
  }
  const std::vector<uint8_t> kst = kestrel::convert::to_builder(g).serialize();
  // The fast kernels (what users get) and the reference ones (the oracle).
  r.reason = run_and_compare(kst, mi, sets, kestrel::KernelSet::kFast);
  if (r.reason.empty()) {
    r.reason = run_and_compare(kst, mi, sets, kestrel::KernelSet::kReference);
    if (!r.reason.empty()) r.reason = "reference kernels: " + r.reason;
  }
  r.outcome = r.reason.empty() ? kPass : kFail;
}

// ONNX's node tests feed weights (Conv W and B, Gemm B and C, BatchNormalization's
// statistics, Pad's pads, Reshape's shape, ...) as graph inputs, where Kestrel's
// importer needs constants. A test that came out unsupported with more than one graph
// input is run again with every input after the first (the network's real input, X
// in the node tests) frozen into an initializer holding the data set's values; only
// when every data set holds the same values for them. The retry's outcome replaces
// the first attempt's (a pass counts as a pass, with r->frozen set).
void run_frozen(const fs::path& dir, const std::string& bytes, const ot::ModelInfo& mi, TestResult* r) {
  const std::vector<fs::path> set_dirs = sorted_dirs(dir, "test_data_set_");
  if (set_dirs.empty()) return;
  std::vector<onnx::TensorProto> values;
  for (size_t i = 1; i < mi.inputs.size(); ++i) {
    onnx::TensorProto first;
    for (size_t k = 0; k < set_dirs.size(); ++k) {
      const fs::path p = set_dirs[k] / ("input_" + std::to_string(i) + ".pb");
      onnx::TensorProto t;
      const std::string why = fs::exists(p) ? ot::read_tensor_proto(p.string(), &t) : "missing " + p.string();
      if (!why.empty()) {
        r->retry = TestResult::kRetryImpossible;
        r->reason += " [no frozen-input retry: " + why + "]";
        return;
      }
      t.set_name(mi.inputs[i].name);
      if (k == 0) {
        first = t;
      } else if (t.SerializeAsString() != first.SerializeAsString()) {
        r->retry = TestResult::kRetryImpossible;
        r->reason += " [no frozen-input retry: the data sets differ in input '" + mi.inputs[i].name + "']";
        return;
      }
    }
    values.push_back(std::move(first));
  }
  std::string frozen_bytes;
  ot::ModelInfo frozen_mi;
  std::string why = ot::freeze_inputs(bytes, values, &frozen_bytes);
  if (why.empty()) why = ot::read_model_info(frozen_bytes, &frozen_mi);
  if (why.empty() && frozen_mi.inputs.size() != 1) why = "the frozen model has other than one input";
  if (!why.empty()) {
    r->retry = TestResult::kRetryImpossible;
    r->reason += " [no frozen-input retry: " + why + "]";
    return;
  }
  TestResult f;
  f.name = r->name;
  f.ops = mi.op_types.empty() ? std::vector<std::string>{"(no nodes)"} : mi.op_types;
  convert_and_run(dir, frozen_bytes, frozen_mi, &f);
  f.retry = TestResult::kRetried;
  f.frozen = f.outcome == kPass;
  std::string frozen_names;
  for (size_t i = 1; i < mi.inputs.size(); ++i) frozen_names += (i > 1 ? ", " : "") + mi.inputs[i].name;
  if (f.outcome != kPass) f.reason += " [inputs " + frozen_names + " frozen from the data set]";
  *r = std::move(f);
}

}  // namespace

TEST_SUITE("onnx_conformance") {
  TEST_CASE("ONNX backend test data: import, optimize, run, compare") {
    if (!fs::is_directory(kDataDir)) {
      MESSAGE(kDataDir, " is absent (Debian's libonnx-testdata): nothing to run");
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<std::string> claimed_list = kestrel::convert::supported_onnx_ops();
    const std::set<std::string> claimed(claimed_list.begin(), claimed_list.end());
    CHECK_MESSAGE(!claimed.empty(), "supported_onnx_ops() is empty");

    std::vector<TestResult> results;
    std::map<std::string, std::array<int, kOutcomes>> group_totals;
    std::map<std::string, int> group_frozen;  // passes with frozen inputs
    for (const char* sub : kSubdirs) {
      for (const fs::path& dir : sorted_dirs(fs::path(kDataDir) / sub, "test_")) {
        TestResult r;
        try {
          r = run_test(dir, sub, claimed);
        } catch (const std::exception& e) {
          r.name = std::string(sub) + "/" + dir.filename().string();
          r.outcome = kFail;
          r.reason = std::string("exception: ") + e.what();
        }
        group_totals[sub][r.outcome]++;
        if (r.frozen) group_frozen[sub]++;
        results.push_back(std::move(r));
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::map<std::string, std::array<int, kOutcomes>> per_op;
    std::map<std::string, int> per_op_frozen;
    std::array<int, kOutcomes> total{};
    int total_frozen = 0;
    std::set<std::string> passing_ops;
    for (const TestResult& r : results) {
      total[r.outcome]++;
      if (r.frozen) ++total_frozen;
      for (const std::string& op : r.ops) {
        per_op[op][r.outcome]++;
        if (r.frozen) per_op_frozen[op]++;
        if (r.outcome == kPass) passing_ops.insert(op);
      }
    }
    std::ostringstream table;
    table << "\nONNX conformance (" << results.size() << " tests, " << secs << " s)\n\n"
          << "| op | pass | of which with frozen inputs | unsupported | fail | too large |\n"
          << "|---|---|---|---|---|---|\n";
    for (const auto& [op, c] : per_op) {
      table << "| " << op << (claimed.count(op) ? "" : " (not claimed)") << " | " << c[kPass] << " | "
            << per_op_frozen[op] << " | " << c[kUnsupported] << " | " << c[kFail] << " | " << c[kTooLarge] << " |\n";
    }
    for (const auto& [group, c] : group_totals) {
      table << "| **" << group << "** | " << c[kPass] << " | " << group_frozen[group] << " | " << c[kUnsupported]
            << " | " << c[kFail] << " | " << c[kTooLarge] << " |\n";
    }
    table << "| **total (tests)** | " << total[kPass] << " | " << total_frozen << " | " << total[kUnsupported]
          << " | " << total[kFail] << " | " << total[kTooLarge] << " |\n";
    int not_claimed = 0, io = 0, by_import = 0;
    for (const TestResult& r : results) {
      if (r.outcome != kUnsupported) continue;
      if (r.reason.rfind("not in supported_onnx_ops()", 0) == 0) ++not_claimed;
      else if (r.reason.rfind("import_onnx: ", 0) == 0) ++by_import;
      else ++io;
    }
    table << "\nUnsupported: " << not_claimed << " with ops not in supported_onnx_ops(), " << io
          << " with input types/shapes Kestrel cannot carry (not float32, scalar or empty inputs, rank > 5), "
          << by_import << " refused by import_onnx (kUnsupported)\n";
    std::array<int, kOutcomes> retried{};
    int retry_impossible = 0;
    for (const TestResult& r : results) {
      if (r.retry == TestResult::kRetried) retried[r.outcome]++;
      if (r.retry == TestResult::kRetryImpossible) ++retry_impossible;
    }
    table << "\nRetried with the inputs after the first frozen: " << retried[kPass] << " pass, "
          << retried[kUnsupported] << " still unsupported, " << retried[kFail] << " fail, " << retried[kTooLarge]
          << " too large; " << retry_impossible << " not retried (data sets differ or unreadable)\n";
    std::string never;
    for (const std::string& op : claimed_list) {
      if (!passing_ops.count(op)) never += (never.empty() ? "" : ", ") + op;
    }
    table << "\nClaimed ops with no passing test here: " << (never.empty() ? "none" : never) << "\n";
    // Why tests whose ops are all claimed did not pass: refused by the import, or with
    // inputs/outputs Kestrel cannot carry.
    std::string import_unsupported, io_unsupported;
    for (const TestResult& r : results) {
      if (r.outcome != kUnsupported || r.reason.rfind("not in supported_onnx_ops()", 0) == 0) continue;
      const bool by_import = r.reason.rfind("import_onnx: ", 0) == 0;
      (by_import ? import_unsupported : io_unsupported) += "\n  " + r.name + ": " + r.reason.substr(by_import ? 13 : 0);
    }
    if (!import_unsupported.empty()) table << "\nUnsupported by import_onnx:" << import_unsupported << "\n";
    if (!io_unsupported.empty()) {
      table << "\nClaimed ops, inputs or outputs Kestrel cannot carry:" << io_unsupported << "\n";
    }
    std::string too_large;
    for (const TestResult& r : results) {
      if (r.outcome == kTooLarge) too_large += "\n  " + r.name + ": " + r.reason;
    }
    if (!too_large.empty()) table << "\nToo large:" << too_large << "\n";
    MESSAGE(table.str());

    std::string failures;
    for (const TestResult& r : results) {
      if (r.outcome == kFail) {
        std::string ops;
        for (const std::string& op : r.ops) ops += (ops.empty() ? "" : ",") + op;
        failures += "\n  " + r.name + " [" + ops + "]" + (r.retry == TestResult::kRetried ? " (frozen inputs)" : "") +
                    ": " + r.reason;
      }
    }
    CHECK_MESSAGE(total[kFail] == 0, total[kFail], " failing tests:", failures);
    // The data set holds over a thousand tests: a walk that found few read nothing.
    CHECK(results.size() >= 1000);
  }
}  // TEST_SUITE

