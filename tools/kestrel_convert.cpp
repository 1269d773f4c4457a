// kestrel-convert: a source model -> Kestrel .kst.
//
//   kestrel-convert caffe NET.prototxt NET.caffemodel OUT.kst [options]
//     --input-shape NAME=1,C,H,W   override a declared input shape (batch must be 1)
//     --meta KEY=VALUE             store metadata in the model (repeatable)
//     --no-optimize                write the graph layer for layer, unoptimized
//   kestrel-convert onnx MODEL.onnx OUT.kst [options]   (same options; symbolic dims
//     need --input-shape)
//
// Import -> optimize -> Kestrel's own loader checks the result -> OUT.kst.tmp ->
// rename to OUT.kst, so an error never leaves an output file behind. Exit codes: 0
// converted, 1 conversion failed (message on stderr), 2 usage error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "caffe/caffe_import.h"
#include "graph/graph.h"
#include "graph/optimize.h"
#include "onnx/onnx_import.h"

namespace {

using kestrel::ErrorCode;
using kestrel::Status;
namespace kc = kestrel::convert;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void print_usage(std::ostream& out) {
  out << "usage: kestrel-convert caffe NET.prototxt NET.caffemodel OUT.kst [options]\n"
         "       kestrel-convert onnx MODEL.onnx OUT.kst [options]\n"
         "options:\n"
         "  --input-shape NAME=1,C,H,W  override a declared input shape (batch must be 1)\n"
         "  --meta KEY=VALUE            store metadata in the model (repeatable)\n"
         "  --no-optimize               skip the graph optimizer\n";
}

struct Args {
  std::vector<std::string> files;
  std::vector<std::pair<std::string, std::vector<int>>> input_shapes;
  std::vector<std::pair<std::string, std::string>> metadata;
  bool optimize = true;
};

// "NAME=1,3,224,224"; false when malformed.
bool parse_input_shape(const std::string& text, std::pair<std::string, std::vector<int>>* out) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return false;
  out->first = text.substr(0, eq);
  out->second.clear();
  size_t pos = eq + 1;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0 || v > 0x7fffffffL) return false;
    out->second.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return true;
}

// Options may come anywhere after the format; the rest are the files. Returns false
// (after printing why) on a usage error.
bool parse_args(int argc, char** argv, Args* args) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value = a == "--input-shape" || a == "--meta";
    if (takes_value && i + 1 >= argc) {
      std::cerr << "kestrel-convert: " << a << " needs a value\n";
      return false;
    }
    if (a == "--input-shape") {
      std::pair<std::string, std::vector<int>> shape;
      if (!parse_input_shape(argv[++i], &shape)) {
        std::cerr << "kestrel-convert: --input-shape wants NAME=N,C,H,W with positive integers, got '" << argv[i]
                  << "'\n";
        return false;
      }
      args->input_shapes.push_back(shape);
    } else if (a == "--meta") {
      const std::string kv = argv[++i];
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "kestrel-convert: --meta wants KEY=VALUE, got '" << kv << "'\n";
        return false;
      }
      args->metadata.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--no-optimize") {
      args->optimize = false;
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "kestrel-convert: unknown option '" << a << "'\n";
      return false;
    } else {
      args->files.push_back(a);
    }
  }
  return true;
}

int fail(const Status& s) {
  std::cerr << "kestrel-convert: error (" << kestrel::error_code_name(s.code()) << "): " << s.message() << "\n";
  return kExitFailed;
}

// Everything after the import is shared by the source formats.
int optimize_and_write(kc::Graph& g, const Args& args, const std::string& out_path, const std::string& source,
                       std::chrono::steady_clock::time_point start) {
  const size_t imported = g.nodes.size();
  for (const auto& kv : args.metadata) g.metadata.push_back(kv);
  kc::OptimizeReport report;
  Status s;
  if (args.optimize && !(s = kc::optimize(g, &report)).ok()) return fail(s);
  std::map<std::string, kestrel::Shape> shapes;
  if (!(s = kc::infer_shapes(g, &shapes)).ok()) return fail(s.with_context("the converted model does not load"));

  const std::string tmp = out_path + ".tmp";
  if (!(s = kc::to_builder(g).save(tmp)).ok()) {
    std::remove(tmp.c_str());
    return fail(s);
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail(Status(ErrorCode::kIoError, "cannot rename " + tmp + " to " + out_path));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("converted %s -> %s\n", source.c_str(), out_path.c_str());
  std::printf("  layers:  %zu imported, %zu written\n", imported, g.nodes.size());
  if (!args.optimize) std::printf("  optimizer: skipped (--no-optimize)\n");
  for (const auto& [pass, count] : report.applied) std::printf("  %-40s %d\n", pass.c_str(), count);
  const size_t bytes = g.weight_bytes();
  std::printf("  weights: %.2f MiB (%zu bytes)\n", static_cast<double>(bytes) / (1024.0 * 1024.0), bytes);
  std::printf("  time:    %.3f s\n", seconds);
  return 0;
}

int convert_caffe(const Args& args) {
  if (args.files.size() != 3) {
    std::cerr << "kestrel-convert caffe: expected NET.prototxt NET.caffemodel OUT.kst, got " << args.files.size()
              << " file argument(s)\n";
    print_usage(std::cerr);
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string& out = args.files[2];
  std::remove((out + ".tmp").c_str());  // a stale one from an interrupted run
  kc::CaffeImportOptions options;
  options.input_shapes = args.input_shapes;
  kc::Graph g;
  const Status s = kc::import_caffe(args.files[0], args.files[1], options, &g);
  if (!s.ok()) return fail(s);
  return optimize_and_write(g, args, out, args.files[0] + " + " + args.files[1], start);
}

int convert_onnx(const Args& args) {
  if (args.files.size() != 2) {
    std::cerr << "kestrel-convert onnx: expected MODEL.onnx OUT.kst, got " << args.files.size()
              << " file argument(s)\n";
    print_usage(std::cerr);
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string& out = args.files[1];
  std::remove((out + ".tmp").c_str());
  kc::OnnxImportOptions options;
  options.input_shapes = args.input_shapes;
  kc::Graph g;
  const Status s = kc::import_onnx(args.files[0], options, &g);
  if (!s.ok()) return fail(s);
  return optimize_and_write(g, args, out, args.files[0], start);
}

struct Format {
  const char* name;
  int (*convert)(const Args& args);
};

// One entry per source format.
constexpr Format kFormats[] = {
    {"caffe", convert_caffe},
    {"onnx", convert_onnx},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return kExitUsage;
  }
  const std::string format = argv[1];
  if (format == "-h" || format == "--help") {
    print_usage(std::cout);
    return 0;
  }
  for (const Format& f : kFormats) {
    if (format != f.name) continue;
    Args args;
    if (!parse_args(argc, argv, &args)) return kExitUsage;
    return f.convert(args);
  }
  std::cerr << "kestrel-convert: unknown source format '" << format << "'\n";
  print_usage(std::cerr);
  return kExitUsage;
}
