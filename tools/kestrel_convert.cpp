// kestrel-convert: a source model -> Kestrel .kst.
//
//   kestrel-convert caffe NET.prototxt NET.caffemodel OUT.kst [options]
//     --input-shape NAME=1,C,H,W   override a declared input shape (batch must be 1)
//     --meta KEY=VALUE             store metadata in the model (repeatable)
//     --no-optimize                write the graph layer for layer, unoptimized
//     --weights fp16|fp32|source   weight storage (default source: F16 where the source
//                                  stored fp16, the TF.js models)
//   kestrel-convert onnx MODEL.onnx OUT.kst [options]   (same options; symbolic dims
//     need --input-shape)
//   kestrel-convert tfjs MODEL.json OUT.kst [options] [--outputs NAME,...]   (a TF.js
//     graph model; --input-shape takes the TF shape, 1,H,W,C; --outputs says where the
//     graph is cut, by default where only post-processing ops follow)
//   kestrel-convert kst MODEL.kst OUT.kst|OUT.h [--emit-c-array NAME] [--weights ...]
//     (verifies an existing model and writes it again, or as a header, with its
//     weights stored as --weights says)
//   --emit-c-array NAME (any format): OUT is a C/C++ header holding the model bytes as
//     a 64-byte aligned array NAME and its size NAME_size, for Net::load(ptr, size)
//     without a file system or a copy.
//
// Import -> optimize -> Kestrel's own loader checks the result -> OUT.kst.tmp ->
// rename to OUT.kst, so an error never leaves an output file behind. Exit codes: 0
// converted, 1 conversion failed (message on stderr), 2 usage error.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "caffe/caffe_import.h"
#include "graph/graph.h"
#include "graph/optimize.h"
#include "graph/shape_tracker.h"
#include "kestrel/net.h"
#include "onnx/onnx_import.h"
#include "tfjs/tfjs_import.h"

namespace {

using kestrel::ErrorCode;
using kestrel::Status;
namespace kc = kestrel::convert;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void print_usage(std::ostream& out) {
  out << "usage: kestrel-convert caffe NET.prototxt NET.caffemodel OUT.kst [options]\n"
         "       kestrel-convert onnx MODEL.onnx OUT.kst [options]\n"
         "       kestrel-convert tfjs MODEL.json OUT.kst [options] [--outputs NAME,...]\n"
         "       kestrel-convert kst MODEL.kst OUT.kst [--emit-c-array NAME] [--weights ...]\n"
         "options:\n"
         "  --emit-c-array NAME         write OUT as a C/C++ header: the model as a 64-byte\n"
         "                              aligned array NAME[] and its size NAME_size\n"
         "  --input-shape NAME=1,C,H,W  override a declared input shape (batch must be 1)\n"
         "  --meta KEY=VALUE            store metadata in the model (repeatable)\n"
         "  --weights fp16|fp32|source  store weights as IEEE halves (half the file and the\n"
         "                              resident weights), as fp32, or as the source did\n"
         "                              (default: fp16 where the source stored fp16, TF.js)\n"
         "  --no-optimize               skip the graph optimizer\n"
         "  --outputs NAME,...          tfjs: the tensors to cut the graph at\n";
}

struct Args {
  std::vector<std::string> files;
  std::vector<std::pair<std::string, std::vector<int>>> input_shapes;
  std::vector<std::pair<std::string, std::string>> metadata;
  bool optimize = true;
  std::string c_array;  // --emit-c-array NAME; empty: write a .kst
  std::vector<std::string> outputs;  // --outputs (tfjs)
  kc::WeightStorage weights = kc::WeightStorage::kSource;  // --weights
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

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Options may come anywhere after the format; the rest are the files. Returns false
// (after printing why) on a usage error.
bool parse_args(int argc, char** argv, Args* args) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value =
        a == "--input-shape" || a == "--meta" || a == "--emit-c-array" || a == "--outputs" || a == "--weights";
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
    } else if (a == "--emit-c-array") {
      args->c_array = argv[++i];
      if (!is_c_identifier(args->c_array)) {
        std::cerr << "kestrel-convert: --emit-c-array wants a C identifier, got '" << args->c_array << "'\n";
        return false;
      }
    } else if (a == "--outputs") {
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) {
        if (!name.empty()) args->outputs.push_back(name);
      }
      if (args->outputs.empty()) {
        std::cerr << "kestrel-convert: --outputs wants NAME[,NAME...]\n";
        return false;
      }
    } else if (a == "--weights") {
      const std::string v = argv[++i];
      if (v == "fp16") {
        args->weights = kc::WeightStorage::kFp16;
      } else if (v == "fp32") {
        args->weights = kc::WeightStorage::kFp32;
      } else if (v == "source") {
        args->weights = kc::WeightStorage::kSource;
      } else {
        std::cerr << "kestrel-convert: --weights wants fp16, fp32 or source, got '" << v << "'\n";
        return false;
      }
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

// The header --emit-c-array writes. The alignment lets Net::load(ptr, size) use the
// bytes in place; C11 and C++11 spell it differently, GNU C99 has the attribute. The
// array is static const so that the header compiles in C and C++ alike: include it in
// one source file.
std::string c_array_header(const std::string& name, const std::string& source, const std::string& bytes) {
  std::ostringstream h;
  h << "/* Generated by kestrel-convert --emit-c-array from " << source << ": " << bytes.size()
    << " bytes of Kestrel model.\n"
       "   Net::load(" << name << ", " << name << "_size) or kestrel_net_load_memory() uses them in place\n"
       "   (64-byte aligned). static const: include this header in one source file. */\n"
    << "#ifndef KESTREL_C_ARRAY_" << name << "_H_\n#define KESTREL_C_ARRAY_" << name << "_H_\n"
    << "#include <stddef.h>\n"
       "#ifndef KESTREL_ALIGN64\n"
       "#if defined(__cplusplus)\n#define KESTREL_ALIGN64 alignas(64)\n"
       "#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n#define KESTREL_ALIGN64 _Alignas(64)\n"
       "#else\n#define KESTREL_ALIGN64 __attribute__((aligned(64)))\n#endif\n#endif\n"
    << "KESTREL_ALIGN64 static const unsigned char " << name << "[" << bytes.size() << "] = {";
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < bytes.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(bytes[i]);
    h << (i % 16 == 0 ? "\n  " : " ") << "0x" << kHex[b >> 4] << kHex[b & 15] << ",";
  }
  h << "\n};\nstatic const size_t " << name << "_size = " << bytes.size() << ";\n#endif\n";
  return h.str();
}

// Moves a finished tmp file to out_path; on failure the tmp file is removed.
Status rename_into_place(const std::string& tmp, const std::string& out_path) {
  if (std::rename(tmp.c_str(), out_path.c_str()) == 0) return Status::Ok();
  std::remove(tmp.c_str());
  return Status(ErrorCode::kIoError, "cannot rename " + tmp + " to " + out_path);
}

// Writes `contents` to out_path through a .tmp and a rename (no partial output).
Status write_atomically(const std::string& out_path, const std::string& contents) {
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!f.flush()) {
      std::remove(tmp.c_str());
      return Status(ErrorCode::kIoError, "cannot write " + tmp);
    }
  }
  return rename_into_place(tmp, out_path);
}

Status read_file(const std::string& path, std::string* bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(ErrorCode::kNotFound, "cannot open " + path);
  bytes->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (f.bad()) return Status(ErrorCode::kIoError, "cannot read " + path);
  return Status::Ok();
}

// The model bytes in `tmp` (already verified) become out_path: renamed as they are,
// or turned into a header.
Status finish_output(const std::string& tmp, const std::string& out_path, const Args& args, const std::string& source) {
  if (args.c_array.empty()) return rename_into_place(tmp, out_path);
  std::string bytes;
  Status s = read_file(tmp, &bytes);
  std::remove(tmp.c_str());
  if (!s.ok()) return s;
  return write_atomically(out_path, c_array_header(args.c_array, source, bytes));
}

// Everything after the import is shared by the source formats.
int optimize_and_write(kc::Graph& g, const Args& args, const std::string& out_path, const std::string& source,
                       std::chrono::steady_clock::time_point start) {
  const size_t imported = g.nodes.size();
  for (const auto& kv : args.metadata) g.metadata.push_back(kv);
  kc::OptimizeReport report;
  Status s;
  if (args.optimize && !(s = kc::optimize(g, &report)).ok()) return fail(s);
  if (!(s = kc::set_weight_storage(g, args.weights)).ok()) return fail(s);
  std::map<std::string, kestrel::Shape> shapes;
  if (!(s = kc::infer_shapes(g, &shapes)).ok()) return fail(s.with_context("the converted model does not load"));

  const std::string tmp = out_path + ".tmp";
  if (!(s = kc::to_builder(g).save(tmp)).ok()) {
    std::remove(tmp.c_str());
    return fail(s);
  }
  if (!(s = finish_output(tmp, out_path, args, source)).ok()) return fail(s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("converted %s -> %s\n", source.c_str(), out_path.c_str());
  std::printf("  layers:  %zu imported, %zu written\n", imported, g.nodes.size());
  auto shape_text = [&](const std::string& blob) {
    std::string t;
    for (int e : kc::extents(shapes.at(blob))) t += (t.empty() ? "" : ",") + std::to_string(e);
    return "[" + t + "]";
  };
  for (const kc::GraphInput& in : g.inputs) std::printf("  input:   %s %s\n", in.name.c_str(), shape_text(in.name).c_str());
  for (const std::string& o : g.outputs) std::printf("  output:  %s %s\n", o.c_str(), shape_text(o).c_str());
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

// One model file in (ONNX, TF.js): import with `import`, then optimize and write.
template <class Import>
int convert_one_file(const Args& args, const char* format, const char* model, Import&& import) {
  if (args.files.size() != 2) {
    std::cerr << "kestrel-convert " << format << ": expected " << model << " OUT.kst, got " << args.files.size()
              << " file argument(s)\n";
    print_usage(std::cerr);
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string& out = args.files[1];
  std::remove((out + ".tmp").c_str());  // a stale one from an interrupted run
  kc::Graph g;
  const Status s = import(args.files[0], &g);
  if (!s.ok()) return fail(s);
  return optimize_and_write(g, args, out, args.files[0], start);
}

int convert_onnx(const Args& args) {
  kc::OnnxImportOptions options;
  options.input_shapes = args.input_shapes;
  return convert_one_file(args, "onnx", "MODEL.onnx",
                          [&](const std::string& path, kc::Graph* g) { return kc::import_onnx(path, options, g); });
}

int convert_tfjs(const Args& args) {
  kc::TfjsImportOptions options;
  options.input_shapes = args.input_shapes;
  options.outputs = args.outputs;
  return convert_one_file(args, "tfjs", "MODEL.json",
                          [&](const std::string& path, kc::Graph* g) { return kc::import_tfjs(path, options, g); });
}

// An existing .kst: Kestrel's own loader checks it (verifier, semantic checks, layer
// preparation) before it is written again.
int convert_kst(const Args& args) {
  if (args.files.size() != 2) {
    std::cerr << "kestrel-convert kst: expected MODEL.kst OUT, got " << args.files.size() << " file argument(s)\n";
    print_usage(std::cerr);
    return kExitUsage;
  }
  if (!args.input_shapes.empty() || !args.metadata.empty() || !args.optimize || !args.outputs.empty()) {
    std::cerr << "kestrel-convert kst: --input-shape, --meta, --no-optimize and --outputs apply to imports only\n";
    return kExitUsage;
  }
  const std::string& in = args.files[0];
  const std::string& out = args.files[1];
  std::string bytes;
  Status s = read_file(in, &bytes);
  if (!s.ok()) return fail(s);
  kestrel::Net net;
  if (!(s = net.load(bytes.data(), bytes.size())).ok()) return fail(s.with_context(in));
  if (args.weights != kc::WeightStorage::kSource) {
    std::string stored;
    if (!(s = kc::set_weight_storage(bytes, args.weights, &stored)).ok()) return fail(s.with_context(in));
    if (!(s = net.load(stored.data(), stored.size())).ok()) return fail(s.with_context("the rewritten model"));
    bytes = std::move(stored);
  }
  s = args.c_array.empty() ? write_atomically(out, bytes) : write_atomically(out, c_array_header(args.c_array, in, bytes));
  if (!s.ok()) return fail(s);
  std::printf("wrote %s (%zu bytes of model%s)\n", out.c_str(), bytes.size(),
              args.c_array.empty() ? "" : (", array " + args.c_array).c_str());
  return 0;
}

struct Format {
  const char* name;
  int (*convert)(const Args& args);
};

// One entry per source format.
constexpr Format kFormats[] = {
    {"caffe", convert_caffe},
    {"onnx", convert_onnx},
    {"tfjs", convert_tfjs},
    {"kst", convert_kst},
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
