// kestrel-run: images in, answers out. Classifies images or detects objects with a .kst
// model, with the preprocessing taken from the model's metadata; runs raw tensors from
// and to .npy files.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kestrel/image.h"
#include "kestrel/net.h"
#include "kestrel/tasks.h"
#include "image_input.h"
#include "npy.h"
#include "precision_arg.h"
#include "source_tensors.h"
#include "task_report.h"

namespace {

const char* kUsage =
    "usage: kestrel-run MODEL.kst [IMAGE...] [--top K] [--threads N] [--labels FILE]\n"
    "                   [--size WxH] [--mean a,b,c] [--norm a,b,c] [--order rgb|bgr|gray]\n"
    "                   [--task classify|detect] [--threshold T] [--draw OUT.jpg]\n"
    "                   [--input NAME=FILE.npy ...] [--output NAME=FILE.npy ...] [--kernels fast|ref]\n"
    "                   [--json FILE] [--decode BLOB=FILE.npy ...] [--iou T]\n"
    "                   [--precision fp32|fp16|bf16|int8] [--layer-precision NAME=fp32|fp16|bf16|int8 ...]\n"
    "Each IMAGE (JPEG, PNG, BMP) is resized (bilinear) to the input size, converted to the\n"
    "channel order, and (x - mean) * norm is fed to the model's first input. Defaults come\n"
    "from the model's metadata: input_size (\"WxH\", else the model's input shape), mean,\n"
    "norm (\"a,b,c\" or one value), channel_order (rgb|bgr|gray, else bgr as Caffe),\n"
    "labels (one per line, or comma-separated on one line), task (classify|detect);\n"
    "--labels FILE (one label per line) and the flags override them.\n"
    "classify prints the top K (default 5) outputs as 'label  score'; detect (SSD\n"
    "DetectionOutput rows label,score,x0,y0,x1,y1) prints boxes with a score >= T\n"
    "(default 0.5) in image pixels, the first K of them when --top is given; --draw\n"
    "writes the image with the answer drawn.\n"
    "--input feeds inputs from .npy files (then an image is optional); --output writes a\n"
    "blob to .npy (one image at most); for a model converted from TF.js both are in the\n"
    "source's layout (NHWC) and its pre-processing folded into mean/norm is applied to an\n"
    "--input. --kernels ref runs the plain C++ reference kernels. --precision fp16 runs\n"
    "the layers that have an fp16 path on halves (Option::precision; int8 needs a model\n"
    "calibrated by kestrel-quantize), --layer-precision sets one layer's.\n"
    "A model whose metadata task is pose, face or objects (kestrel/tasks.h) prints\n"
    "keypoints, faces or objects in image pixels; --draw draws them, --json FILE writes\n"
    "them; with --input tensors instead of an image they are in input pixels, and\n"
    "--decode BLOB=FILE.npy ... decodes outputs computed elsewhere (the source's layout)\n"
    "without running the model; --threshold, --top and --iou T set the score threshold,\n"
    "the most results and the NMS overlap. Exit: 0 ok, 1 run-time error, 2 bad command line.\n";

struct Args {
  std::string model;
  std::vector<std::string> images;
  int top = 5;
  int threads = 1;
  std::string labels_file, draw, order, task;
  int size_w = 0, size_h = 0;
  std::vector<float> mean, norm;
  bool has_mean = false, has_norm = false, has_threshold = false, has_top = false;
  float threshold = 0.5f;
  std::vector<std::pair<std::string, std::string>> inputs, outputs, decode;
  kestrel::KernelSet kernels = kestrel::KernelSet::kFast;
  kestrel::Option precision;  // precision and layer_precision only
  std::string json;
  float iou = -1.f;  // task NMS; < 0: the task's default
};

int usage_error(const std::string& why) {
  std::fprintf(stderr, "kestrel-run: %s\n(kestrel-run --help for usage)\n", why.c_str());
  return 2;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "kestrel-run: %s\n", why.c_str());
  return 1;
}

bool parse_int(const std::string& v, int lo, int* out) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::atoi(v.c_str());
  return *out >= lo;
}

using kestrel_tools::parse_float;
using kestrel_tools::parse_floats;

// "WxH" (224x224); a single number N means NxN.
bool parse_size(const std::string& v, int* w, int* h) {
  const size_t x = v.find_first_of("xX");
  if (x == std::string::npos) return parse_int(v, 1, w) && parse_int(v, 1, h);
  return parse_int(v.substr(0, x), 1, w) && parse_int(v.substr(x + 1), 1, h);
}

bool parse_pair(const std::string& v, std::vector<std::pair<std::string, std::string>>* out) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) return false;
  out->emplace_back(v.substr(0, eq), v.substr(eq + 1));
  return true;
}

// Returns 0 when parsed, else the exit code (help: 0 after printing, errors: 2).
int parse(int argc, char** argv, Args* a, bool* help) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--help" || f == "-h") {
      *help = true;
      return 0;
    }
    if (f.size() < 2 || f[0] != '-') {
      (a->model.empty() ? a->model : a->images.emplace_back()) = f;
      continue;
    }
    static const char* kFlags[] = {"--top",   "--threads", "--labels", "--size", "--mean",  "--norm",
                                   "--order", "--task",    "--threshold", "--draw", "--input", "--output",
                                   "--kernels", "--json", "--decode", "--iou", "--precision", "--layer-precision"};
    if (std::find(std::begin(kFlags), std::end(kFlags), f) == std::end(kFlags)) {
      return usage_error("unknown option '" + f + "'");
    }
    if (i + 1 >= argc) return usage_error(f + " needs a value");
    const std::string v = argv[++i];
    bool ok = true;
    if (f == "--top") {
      ok = a->has_top = parse_int(v, 1, &a->top);
    } else if (f == "--threads") {
      ok = parse_int(v, 1, &a->threads);
    } else if (f == "--labels") {
      a->labels_file = v;
    } else if (f == "--size") {
      ok = parse_size(v, &a->size_w, &a->size_h);
    } else if (f == "--mean") {
      ok = a->has_mean = parse_floats(v, &a->mean);
    } else if (f == "--norm") {
      ok = a->has_norm = parse_floats(v, &a->norm);
    } else if (f == "--order") {
      ok = v == "rgb" || v == "bgr" || v == "gray";
      a->order = v;
    } else if (f == "--task") {
      ok = v == "classify" || v == "detect";
      a->task = v;
    } else if (f == "--threshold") {
      ok = a->has_threshold = parse_float(v, &a->threshold);
    } else if (f == "--draw") {
      a->draw = v;
    } else if (f == "--input") {
      ok = parse_pair(v, &a->inputs);
    } else if (f == "--iou") {
      ok = parse_float(v, &a->iou) && a->iou >= 0.f;
    } else if (f == "--json") {
      a->json = v;
    } else if (f == "--decode") {
      ok = parse_pair(v, &a->decode);
    } else if (f == "--kernels") {
      ok = v == "fast" || v == "ref";
      a->kernels = v == "ref" ? kestrel::KernelSet::kReference : kestrel::KernelSet::kFast;
    } else if (f == "--precision") {
      ok = kestrel_tools::parse_precision(v, &a->precision.precision);
    } else if (f == "--layer-precision") {
      ok = kestrel_tools::parse_layer_precision(v, &a->precision);
    } else {
      ok = parse_pair(v, &a->outputs);
    }
    if (!ok) return usage_error("bad value '" + v + "' for " + f);
  }
  if (a->model.empty()) return usage_error("no model given");
  if (a->images.empty() && a->inputs.empty() && a->decode.empty()) return usage_error("no image and no --input given");
  if (a->images.size() > 1 && (!a->outputs.empty() || !a->draw.empty())) {
    return usage_error("--output and --draw take one image, " + std::to_string(a->images.size()) + " given");
  }
  if (!a->draw.empty() && a->images.empty()) return usage_error("--draw needs an image");
  return 0;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  std::string t = s.substr(b, e - b + 1);
  // Label files written as Python string lists quote each line.
  if (t.size() >= 2 && (t[0] == '\'' || t[0] == '"') && t.back() == t[0]) t = t.substr(1, t.size() - 2);
  return t;
}

// One label per line; text without a newline is taken as comma-separated.
std::vector<std::string> split_labels(const std::string& text) {
  std::vector<std::string> labels;
  const char sep = text.find('\n') != std::string::npos ? '\n' : ',';
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) labels.push_back(trim(item));
  while (!labels.empty() && labels.back().empty()) labels.pop_back();
  return labels;
}

std::string label_of(const std::vector<std::string>& labels, int i) {
  if (i >= 0 && static_cast<size_t>(i) < labels.size() && !labels[i].empty()) {
    return std::to_string(i) + " " + labels[i];
  }
  return std::to_string(i);
}

// The values of `m` in [c][d][h][w] order without channel padding or packing, and
// its shape (real channels), which may hold a 0: a detector that found nothing gives
// 0 rows.
std::vector<float> flatten(const kestrel::Mat& m, std::vector<int>* shape) {
  const int c = m.channels();
  switch (m.dims) {
    case 1: *shape = {m.w}; break;
    case 2: *shape = {m.h, m.w}; break;
    case 3: *shape = {c, m.h, m.w}; break;
    default: *shape = {c, m.d, m.h, m.w}; break;
  }
  std::vector<float> v;
  if (m.empty()) return v;
  const kestrel::Mat planar = m.elempack == 1 ? m : kestrel::convert_packing(m, 1);
  const size_t plane = static_cast<size_t>(planar.w) * planar.h * planar.d;
  for (int q = 0; q < planar.c; ++q) v.insert(v.end(), planar.channel(q), planar.channel(q) + plane);
  return v;
}

std::string shape_text(const std::vector<int>& shape) {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? "," : "") + std::to_string(shape[i]);
  return t + "]";
}

class Runner {
 public:
  explicit Runner(const Args& a) : a_(a) {}

  int setup();
  int run(const std::string& image);  // "" = inputs from .npy only

 private:
  int configure_preprocessing();
  int classify(const std::vector<float>& out, kestrel::Image* img);
  int run_task(const std::string& image);
  int write_outputs(kestrel::Extractor& ex);
  int read_decode_inputs(std::map<std::string, kestrel::Mat>* by_role);
  int detect(const kestrel::Mat& out, int img_w, int img_h, kestrel::Image* img);

  Args a_;
  kestrel::Net net_;
  std::optional<kestrel::Extractor> ex_;  // one for all images: later runs are warm
  std::string input_;  // the input an image feeds
  kestrel::Shape shape_;
  int width_ = 0, height_ = 0;
  kestrel_tools::ImageInput pre_;  // an image's pre-processing (tools/image_input.h)
  std::string task_;
  std::vector<std::string> labels_;
  std::optional<kestrel::Task> task_api_;  // a pose / face / objects model
  std::map<std::string, kestrel::Mat> npy_inputs_;
  std::vector<std::vector<float>> npy_data_;
};

int Runner::setup() {
  net_.option().num_threads = a_.threads;
  net_.option().kernels = a_.kernels;
  net_.option().precision = a_.precision.precision;
  net_.option().layer_precision = a_.precision.layer_precision;
  kestrel::Status s = net_.load(a_.model);
  if (!s.ok()) return fail(s.message());
  const std::string meta_task = net_.metadata("task");
  if (meta_task == "pose" || meta_task == "face" || meta_task == "objects") {
    kestrel::TaskOptions opts;
    if (a_.has_threshold) opts.score_threshold = a_.threshold;
    if (a_.has_top) opts.max_results = a_.top;
    opts.iou_threshold = a_.iou;
    task_api_.emplace();
    if (!(s = task_api_->init(net_, opts)).ok()) return fail(s.message());
  } else if (!a_.decode.empty()) {
    return fail("--decode needs a model whose metadata task is pose, face or objects");
  }
  for (const auto& [name, path] : a_.inputs) {
    kestrel::Shape shape;
    s = net_.input_shape(name, &shape);
    if (!s.ok()) return fail("--input " + name + ": " + s.message());
    kt::NpyArray arr;
    const std::string why = kt::read_npy(path, &arr);
    if (!why.empty()) return fail("--input " + name + ": " + why);
    if (arr.data.size() != shape.total()) {
      return fail("--input " + name + ": " + path + " holds " + std::to_string(arr.data.size()) +
                  " values, the input takes " + std::to_string(shape.total()));
    }
    kt::SourceTensor src;
    if (kt::parse_source_tensor(net_.metadata("tf_input." + name), &src)) {
      // The source's layout (NHWC) and, when it was folded, its own pre-processing.
      arr.data = kt::reorder(src, arr.data, true);
      if (net_.metadata("folded_preprocess") == name) {
        std::vector<float> mean, norm;
        if (!parse_floats(net_.metadata("mean"), &mean) || !parse_floats(net_.metadata("norm"), &norm) ||
            mean.size() != norm.size() || mean.empty()) {
          return fail("model metadata mean/norm of the folded pre-processing are malformed");
        }
        const size_t plane = shape.total() / static_cast<size_t>(shape.c);
        for (size_t i = 0; i < arr.data.size(); ++i) {
          const size_t c = mean.size() == 1 ? 0 : std::min(i / plane, mean.size() - 1);
          arr.data[i] = (arr.data[i] - mean[c]) * norm[c];
        }
      }
    }
    kestrel::Mat m;
    if (!m.create(shape)) return fail("out of memory for input " + name);
    const size_t plane = static_cast<size_t>(m.w) * m.h * m.d;
    for (int q = 0; q < m.c; ++q) std::copy_n(arr.data.data() + q * plane, plane, m.channel(q));
    npy_inputs_[name] = m;
  }
  for (const std::string& name : net_.input_names()) {
    if (!npy_inputs_.count(name) && input_.empty()) input_ = name;
  }
  if (a_.images.empty() && a_.decode.empty() && !input_.empty()) return fail("input '" + input_ + "' is not given (--input or an image)");
  if (!a_.images.empty() && input_.empty()) return fail("every input is given by --input; no input left for the image");
  if (!a_.labels_file.empty()) {
    std::ifstream f(a_.labels_file);
    std::stringstream text;
    if (f.is_open()) text << f.rdbuf();
    if (!f.is_open() || f.bad()) return fail("cannot read the labels file '" + a_.labels_file + "'");
    labels_ = split_labels(text.str());
  } else {
    labels_ = split_labels(net_.metadata("labels"));
  }
  return configure_preprocessing();
}

int Runner::configure_preprocessing() {
  task_ = a_.task;
  if (task_.empty()) {
    const std::string t = net_.metadata("task");
    const std::vector<std::string> outs = net_.output_names();
    // Without metadata, a net whose output comes from DetectionOutput is a detector.
    const bool detector = t.empty() && !outs.empty() && net_.producer_type(outs[0]) == "DetectionOutput";
    task_ = t == "detection" || t == "detect" || detector ? "detect" : "classify";
  }
  if (input_.empty()) return 0;
  kestrel::Status s = net_.input_shape(input_, &shape_);
  if (!s.ok()) return fail(s.message());
  width_ = a_.size_w;
  height_ = a_.size_h;
  const std::string meta_size = net_.metadata("input_size");
  if (width_ == 0 && !meta_size.empty() && !parse_size(meta_size, &width_, &height_)) {
    return fail("model metadata input_size='" + meta_size + "' is not WxH");
  }
  if (width_ == 0) {
    width_ = shape_.w;
    height_ = shape_.h;
  }
  if (shape_.dims != 3 || (shape_.c != 1 && shape_.c != 3)) {
    return fail("input '" + input_ + "' is not an image input of 1 or 3 channels; use --input NAME=FILE.npy");
  }
  if (width_ != shape_.w || height_ != shape_.h) {
    net_.set_input_shape(input_, kestrel::Shape::make3(width_, height_, shape_.c));
    s = net_.load(a_.model);
    if (!s.ok()) return fail("input size " + std::to_string(width_) + "x" + std::to_string(height_) + ": " + s.message());
    shape_ = kestrel::Shape::make3(width_, height_, shape_.c);
  }
  kestrel_tools::ImageInputFlags flags;
  flags.order = a_.order;
  flags.has_mean = a_.has_mean;
  flags.has_norm = a_.has_norm;
  flags.mean = a_.mean;
  flags.norm = a_.norm;
  const std::string why = kestrel_tools::image_input(net_, width_, height_, shape_.c, flags, &pre_);
  if (!why.empty()) return fail("input '" + input_ + "': " + why);
  return 0;
}

std::string joined(const std::vector<float>& v) {
  std::string s;
  char buf[32];
  for (float f : v) {
    std::snprintf(buf, sizeof buf, "%s%g", s.empty() ? "" : ",", f);
    s += buf;
  }
  return s;
}

int Runner::run(const std::string& path) {
  if (task_api_) return run_task(path);
  if (!ex_) ex_.emplace(net_.create_extractor());
  kestrel::Extractor& ex = *ex_;
  kestrel::Image img;
  kestrel::Mat in;
  if (!path.empty()) {
    kestrel::Status s = kestrel::load_image(path, &img);
    if (!s.ok()) return fail(s.message());
    s = kestrel_tools::make_image_input(pre_, img, &in);
    if (!s.ok()) return fail(path + ": " + s.message());
    std::printf("image    %s (%dx%d, %d channel%s) -> %s %dx%d %s, mean %s, norm %s\n", path.c_str(), img.w, img.h,
                img.channels, img.channels == 1 ? "" : "s", input_.c_str(), width_, height_, pre_.order.c_str(),
                joined(pre_.mean).c_str(), joined(pre_.norm).c_str());
  }
  const std::vector<std::string> out_names = net_.output_names();
  if (out_names.empty()) return fail("the model declares no output");
  kestrel::Mat out;
  const auto t0 = std::chrono::steady_clock::now();
  kestrel::Status s;
  for (const auto& [name, m] : npy_inputs_) {
    if (s.ok()) s = ex.input(name, m);
  }
  if (s.ok() && !in.empty()) s = ex.input(input_, in);
  if (s.ok()) s = ex.extract(out_names[0], out);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!s.ok()) return fail(s.message());
  if (int rc = write_outputs(ex)) return rc;
  std::printf("latency  %.2f ms (%s, %d thread%s)\n", ms, out_names[0].c_str(), a_.threads,
              a_.threads == 1 ? "" : "s");
  kestrel::Image* canvas = a_.draw.empty() ? nullptr : &img;
  int rc = 0;
  if (task_ == "detect") {
    rc = detect(out, path.empty() ? width_ : img.w, path.empty() ? height_ : img.h, canvas);
  } else {
    std::vector<int> shape;
    const std::vector<float> values = flatten(out, &shape);
    if (values.empty()) {
      std::printf("  output '%s' holds no values (shape %s): nothing to classify\n", out_names[0].c_str(),
                  shape_text(shape).c_str());
    } else {
      rc = classify(values, canvas);
    }
  }
  if (rc == 0 && canvas) {
    s = kestrel::save_image(a_.draw, *canvas);
    if (!s.ok()) return fail(s.message());
    std::printf("drawn    %s\n", a_.draw.c_str());
  }
  return rc;
}

// --output: blobs to .npy, in the source's layout when the model records one.
int Runner::write_outputs(kestrel::Extractor& ex) {
  for (const auto& [name, file] : a_.outputs) {
    kestrel::Mat m;
    kestrel::Status s = ex.extract(name, m);
    if (!s.ok()) return fail("--output " + name + ": " + s.message());
    std::vector<int> shape;
    std::vector<float> v = flatten(m, &shape);
    size_t count = 1;
    for (int d : shape) count *= static_cast<size_t>(d);
    if (shape.empty() || v.size() != count) return fail("--output " + name + ": out of memory for its values");
    kt::SourceTensor src;
    if (kt::parse_source_tensor(net_.metadata("tf_output." + name), &src)) {
      v = kt::reorder(src, v, false);
      shape = src.dims;
    }
    const std::string why = kt::write_npy(file, shape, v.data());
    if (!why.empty()) return fail("--output " + name + ": " + why);
    std::printf("output   %s -> %s\n", name.c_str(), file.c_str());
  }
  return 0;
}

// --decode BLOB=FILE.npy: a role's tensor from a file in the source's layout.
int Runner::read_decode_inputs(std::map<std::string, kestrel::Mat>* by_role) {
  for (const auto& [role, blob] : task_api_->roles()) {
    // A named copy: C++17 lambdas cannot capture a structured binding (clang refuses).
    const std::string& name = blob;
    const auto given = std::find_if(a_.decode.begin(), a_.decode.end(), [&](const auto& p) { return p.first == name; });
    if (given == a_.decode.end()) return fail("--decode: no file for output '" + blob + "' (role " + role + ")");
    kt::NpyArray arr;
    const std::string why = kt::read_npy(given->second, &arr);
    if (!why.empty()) return fail("--decode " + blob + ": " + why);
    kt::SourceTensor src;
    std::vector<int> dims = arr.shape;
    if (kt::parse_source_tensor(net_.metadata("tf_output." + blob), &src)) {
      if (src.dims != arr.shape) return fail("--decode " + blob + ": " + given->second + " is not the output's shape");
      arr.data = kt::reorder(src, arr.data, true);
      const size_t r = dims.size();
      if (src.nhwc) dims = {dims[r - 1], dims[r - 3], dims[r - 2]};
    }
    while (dims.size() > 1 && dims[0] == 1) dims.erase(dims.begin());
    if (dims.size() > 3) return fail("--decode " + blob + ": more than 3 dims");
    const kestrel::Shape shape = dims.size() == 1   ? kestrel::Shape::make1(dims[0])
                                 : dims.size() == 2 ? kestrel::Shape::make2(dims[1], dims[0])
                                                    : kestrel::Shape::make3(dims[2], dims[1], dims[0]);
    kestrel::Mat m;
    if (!m.create(shape)) return fail("out of memory for --decode " + blob);
    const size_t plane = static_cast<size_t>(m.w) * m.h;
    for (int q = 0; q < m.c; ++q) std::copy_n(arr.data.data() + q * plane, plane, m.channel(q));
    (*by_role)[role] = m;
  }
  return 0;
}

// A pose / face / objects model: the task API does the pre-processing (from an image)
// and the decoding; from tensors (--input, --decode) results are in input pixels.
int Runner::run_task(const std::string& path) {
  if (!ex_) ex_.emplace(net_.create_extractor());
  kestrel::Extractor& ex = *ex_;
  const kestrel::Task& task = *task_api_;
  kestrel::TaskResult r;
  kestrel::Image img;
  kestrel::Preprocess input_pixels;
  kestrel::Shape in_shape;
  if (!net_.input_shape(net_.input_names()[0], &in_shape).ok()) return fail("the model has no input shape");
  input_pixels.image_w = input_pixels.input_w = in_shape.w;
  input_pixels.image_h = input_pixels.input_h = in_shape.h;
  kestrel::Status s;
  const auto t0 = std::chrono::steady_clock::now();
  if (!a_.decode.empty()) {
    std::map<std::string, kestrel::Mat> by_role;
    if (int rc = read_decode_inputs(&by_role)) return rc;
    s = task.decode(by_role, input_pixels, &r);
  } else if (!path.empty()) {
    if (!(s = kestrel::load_image(path, &img)).ok()) return fail(s.message());
    s = task.run(ex, img, &r);
  } else {
    std::map<std::string, kestrel::Mat> by_role;
    for (const auto& [name, m] : npy_inputs_) {
      if (s.ok()) s = ex.input(name, m);
    }
    for (const auto& [role, blob] : task.roles()) {
      if (s.ok()) s = ex.extract(blob, by_role[role]);
    }
    if (s.ok()) s = task.decode(by_role, input_pixels, &r);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!s.ok()) return fail(s.message());
  if (a_.decode.empty()) {
    if (int rc = write_outputs(ex)) return rc;
    std::printf("latency  %.2f ms (pre-processing, inference and decoding; %d thread%s)\n", ms, a_.threads,
                a_.threads == 1 ? "" : "s");
  }
  kt::print_task_result(r);
  if (!a_.json.empty()) {
    std::ofstream f(a_.json, std::ios::binary | std::ios::trunc);
    f << kt::task_result_json(r, path, ms);
    if (!f.flush()) return fail("cannot write " + a_.json);
    std::printf("json     %s\n", a_.json.c_str());
  }
  if (!a_.draw.empty()) {
    kt::draw_task_result(img, r, 0.3f);
    if (!(s = kestrel::save_image(a_.draw, img)).ok()) return fail(s.message());
    std::printf("drawn    %s\n", a_.draw.c_str());
  }
  return 0;
}

const kestrel::Color kBoxColors[] = {{230, 25, 75}, {60, 180, 75}, {255, 225, 25}, {0, 130, 200},
                                     {245, 130, 48}, {145, 30, 180}, {70, 240, 240}, {240, 50, 230}};

int Runner::classify(const std::vector<float>& out, kestrel::Image* img) {
  std::vector<int> idx(out.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  const size_t k = std::min(idx.size(), static_cast<size_t>(a_.top));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int x, int y) {
    return out[x] > out[y] || (out[x] == out[y] && x < y);
  });
  for (size_t i = 0; i < k; ++i) std::printf("  %-48s %.6f\n", label_of(labels_, idx[i]).c_str(), out[idx[i]]);
  if (img && k > 0) {
    char score[32];
    std::snprintf(score, sizeof score, " %.3f", out[idx[0]]);
    kt::draw_label(*img, 0, 0, label_of(labels_, idx[0]) + score, kestrel::Color{255, 255, 255});
  }
  return 0;
}

int Runner::detect(const kestrel::Mat& out, int img_w, int img_h, kestrel::Image* img) {
  if (out.dims != 2 || out.w != 6 || out.elempack != 1) {
    return fail("--task detect expects rows of 6 values (label, score, x0, y0, x1, y1) from output '" +
                net_.output_names()[0] + "'");
  }
  int shown = 0, passed = 0;
  for (int i = 0; i < out.h; ++i) {
    const float* r = out.row(i);
    if (r[1] < a_.threshold) continue;
    ++passed;
    // DetectionOutput sorts rows by score: the first K shown are the K best.
    if (a_.has_top && shown >= a_.top) continue;
    const auto px = [](float v, int size) {
      return static_cast<int>(std::lround(std::min(std::max(v, 0.f), 1.f) * static_cast<float>(size - 1)));
    };
    const int label = static_cast<int>(r[0]);
    const int x0 = px(r[2], img_w), y0 = px(r[3], img_h), x1 = px(r[4], img_w), y1 = px(r[5], img_h);
    std::printf("  %-32s %.6f  box %d %d %d %d\n", label_of(labels_, label).c_str(), r[1], x0, y0, x1, y1);
    ++shown;
    if (img) {
      const kestrel::Color c = kBoxColors[static_cast<unsigned>(label) % 8];
      kestrel::draw_rectangle(*img, x0, y0, x1, y1, c, std::max(2, std::min(img->w, img->h) / 150));
      char score[32];
      std::snprintf(score, sizeof score, " %.2f", r[1]);
      kt::draw_label(*img, x0, y0, label_of(labels_, label) + score, c);
    }
  }
  std::printf("  %d detection%s with score >= %g (of %d rows)", passed, passed == 1 ? "" : "s", a_.threshold, out.h);
  if (shown < passed) std::printf(", the best %d shown", shown);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  bool help = false;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (int rc = parse(argc, argv, &a, &help)) return rc;
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Runner r(a);
  if (int rc = r.setup()) return rc;
  int rc = 0;
  for (const std::string& image : a.images) rc = std::max(rc, r.run(image));
  if (a.images.empty()) rc = r.run("");
  return rc;
}
