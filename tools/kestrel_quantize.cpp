// kestrel-quantize: int8 calibration of a .kst model (issue 27).
//
//   kestrel-quantize MODEL.kst CALIB_IMAGE... -o OUT.kst [--method kl|minmax|percentile]
//                    [--percentile P] [--keep-fp32 LAYER,...] [--sensitivity] [--keep-below DB]
//                    [--threads N] [--equalize] [--weights int8|fp32] [--no-bias-correction]
//
// Runs the model in fp32 over the calibration images, pre-processed as its metadata says
// (a task model as kestrel::Task does; any other as kestrel-run does by default:
// tools/image_input.h), and writes OUT.kst with each int8 layer's activation scales
// (converter/quantize/calibrate_model.h), its int8 layers' biases corrected for the mean
// error int8 leaves (converter/quantize/bias_correction.h), and their weights as int8
// (converter/quantize/int8_weights.h; --weights fp32 keeps them fp32). An error writes
// nothing.
// Exit: 0 ok, 1 error, 2 bad command line.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kestrel/image.h"
#include "kestrel/net.h"
#include "kestrel/tasks.h"
#include "kestrel_generated.h"
#include "image_input.h"
#include "quantize/calibrate_model.h"
#include "quantize/bias_correction.h"
#include "quantize/equalize.h"
#include "quantize/int8_weights.h"

namespace {

namespace q = kestrel::quantize;

const char* kUsage =
    "usage: kestrel-quantize MODEL.kst CALIB_IMAGE... -o OUT.kst [--method kl|minmax|percentile]\n"
    "                        [--percentile P] [--keep-fp32 LAYER,...] [--sensitivity] [--keep-below DB]\n"
    "                        [--threads N] [--equalize] [--weights int8|fp32] [--no-bias-correction]\n"
    "--sensitivity prints, for each layer that runs int8, the signal-to-quantization-noise\n"
    "ratio of the network's outputs (dB, over the calibration images) with that layer alone\n"
    "in int8; --keep-below DB keeps every layer under DB in fp32 and calibrates again, and\n"
    "keeps the residual adds (BinaryOp or Eltwise of two maps) in fp32 too where int8 adds cost the\n"
    "whole network more than kAddsDb dB.\n"
    "--equalize first evens out the channel ranges of the maps depthwise layers read\n"
    "(scaling the producer's channels up and the depthwise layer's down: the same network).\n"
    "--weights int8 (the default) stores the int8 layers' weights as int8 with a scale per\n"
    "output channel (a quarter of their fp32 bytes; int8 inference is the same, an fp32 run\n"
    "of OUT.kst reads them dequantized); --weights fp32 keeps them as they are.\n"
    "Last, each int8 layer's bias takes off the mean error int8 leaves in its output channels\n"
    "on the calibration images, layer after layer, where that brings the network's outputs\n"
    "nearer fp32 (an fp32 run of OUT.kst computes with those biases too);\n"
    "--no-bias-correction leaves the biases as they are.\n";

// What int8 residual adds may cost the whole network's SQNR before --keep-below keeps
// them in fp32: a clipped residual stream stays clipped block after block (BlazeFace: 3 dB).
constexpr double kAddsDb = 1.0;

// The model's residual adds: BinaryOp and Eltwise layers of two inputs not kept already.
std::vector<std::string> residual_adds(const std::string& bytes, const std::vector<std::string>& kept) {
  std::vector<std::string> out;
  for (const kestrel::fb::Layer* l : *kestrel::fb::GetModel(bytes.data())->layers()) {
    const std::string name = l->name()->str();
    const std::string type = l->type()->str();
    if ((type == "BinaryOp" || type == "Eltwise") && l->bottoms() && l->bottoms()->size() == 2 &&
        std::find(kept.begin(), kept.end(), name) == kept.end()) {
      out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A model without task metadata: its input stretched as kestrel-run does by default.
kestrel::Status stretch_input(const kestrel::Net& net, const kestrel::Image& img, kestrel::Mat* in) {
  const std::string name = net.input_names()[0];
  kestrel::Shape shape;
  kestrel::Status s = net.input_shape(name, &shape);
  if (!s.ok()) return s;
  if (shape.dims != 3 || (shape.c != 1 && shape.c != 3)) {
    return kestrel::Status(kestrel::ErrorCode::kInvalidArgument, "input '" + name + "' is not an image input");
  }
  kestrel_tools::ImageInput pre;
  const std::string why = kestrel_tools::image_input(net, shape.w, shape.h, shape.c, {}, &pre);
  if (!why.empty()) return kestrel::Status(kestrel::ErrorCode::kInvalidArgument, "input '" + name + "': " + why);
  return kestrel_tools::make_image_input(pre, img, in);
}

int fail(const std::string& what) {
  std::fprintf(stderr, "kestrel-quantize: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::string out;
  q::CalibrationOptions opt;
  bool sensitivity = false;
  bool equalize = false;
  bool bias_correction = true;
  bool int8_weights = true;
  double keep_below_db = 0.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "-o") {
      if (!value(&out)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--method") {
      if (!value(&v) || !q::parse_method(v, &opt.method)) {
        std::fprintf(stderr, "kestrel-quantize: --method wants kl, minmax or percentile\n");
        return 2;
      }
    } else if (a == "--percentile") {
      if (!value(&v)) return std::fputs(kUsage, stderr), 2;
      opt.percentile = std::strtod(v.c_str(), nullptr);
      if (!(opt.percentile > 0.0 && opt.percentile <= 100.0)) {
        std::fprintf(stderr, "kestrel-quantize: --percentile wants a value in (0, 100]\n");
        return 2;
      }
    } else if (a == "--keep-fp32") {
      if (!value(&v)) return std::fputs(kUsage, stderr), 2;
      for (const std::string& name : split(v)) opt.keep_fp32.push_back(name);
    } else if (a == "--weights") {
      if (!value(&v) || (v != "int8" && v != "fp32")) {
        std::fprintf(stderr, "kestrel-quantize: --weights wants int8 or fp32\n");
        return 2;
      }
      int8_weights = v == "int8";
    } else if (a == "--equalize") {
      equalize = true;
    } else if (a == "--no-bias-correction") {
      bias_correction = false;
    } else if (a == "--sensitivity") {
      sensitivity = true;
    } else if (a == "--keep-below") {
      if (!value(&v)) return std::fputs(kUsage, stderr), 2;
      keep_below_db = std::strtod(v.c_str(), nullptr);
      if (!(keep_below_db > 0.0 && keep_below_db < q::kExactSqnrDb)) {
        std::fprintf(stderr, "kestrel-quantize: --keep-below wants a positive SQNR in dB\n");
        return 2;
      }
    } else if (a == "--threads") {
      if (!value(&v)) return std::fputs(kUsage, stderr), 2;
      opt.threads = std::max(1, std::atoi(v.c_str()));
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "kestrel-quantize: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.size() < 2 || out.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::ifstream f(files[0], std::ios::binary);
  if (!f) return fail("cannot open model '" + files[0] + "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  kestrel::Net net;
  kestrel::Status s = net.load(bytes.data(), bytes.size());
  if (!s.ok()) return fail(files[0] + ": " + s.message());
  kestrel::Task task;
  const std::string task_name = net.metadata("task");
  const bool has_task = task_name == "pose" || task_name == "face" || task_name == "objects";
  if (has_task && !(s = task.init(net)).ok()) return fail(files[0] + ": " + s.message());
  const std::vector<std::string> images(files.begin() + 1, files.end());
  const size_t kept_by_hand = opt.keep_fp32.size();
  const q::InputSource source = [&](size_t i, std::map<std::string, kestrel::Mat>* inputs) {
    kestrel::Image img;
    kestrel::Status st = kestrel::load_image(images[i], &img);
    if (!st.ok()) return st.with_context("calibration image");
    kestrel::Mat in;
    kestrel::Preprocess pre;
    st = has_task ? task.preprocess(img, &in, &pre) : stretch_input(net, img, &in);
    if (!st.ok()) return st.with_context("calibration image '" + images[i] + "'");
    (*inputs)[has_task ? task.input_name() : net.input_names()[0]] = in;
    return kestrel::Status::Ok();
  };
  if (equalize) {
    std::vector<q::EqualizedPair> pairs;
    std::string equalized;
    if (!(s = q::equalize_depthwise_inputs(bytes, images.size(), source, opt.threads, &equalized, &pairs)).ok()) {
      return fail(s.message());
    }
    std::printf("%-40s %-40s %8s %9s %s\n", "equalized: producer", "depthwise consumer", "channels", "max s",
                "channel range spread (max/min) before -> after");
    for (const q::EqualizedPair& p : pairs) {
      std::printf("%-40s %-40s %8d %9.3g %.3g -> %.3g\n", p.producer.c_str(), p.consumer.c_str(), p.channels, p.max_scale,
                  p.spread_before, p.spread_after);
    }
    bytes = std::move(equalized);
  }
  std::string quantized;
  std::vector<q::BlobReport> report;
  s = q::calibrate(bytes, images.size(), source, opt, &quantized, &report);
  if (!s.ok()) return fail(s.message());
  std::printf("%-48s %12s %12s %12s %s\n", "blob", "max |x|", "threshold", "scale", "method");
  for (const q::BlobReport& r : report) {
    std::printf("%-48s %12.5g %12.5g %12.5g %s\n", r.blob.c_str(), r.max_abs, r.threshold, r.scale,
                q::method_name(r.method));
  }
  if (sensitivity || keep_below_db > 0.0) {
    std::vector<q::LayerSensitivity> layers;
    double whole = 0.0;
    if (!(s = q::sensitivity(quantized, images.size(), source, opt.threads, &layers, &whole)).ok()) {
      return fail(s.message());
    }
    std::vector<q::LayerSensitivity> sorted = layers;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.sqnr_db < b.sqnr_db; });
    std::printf("\nsensitivity: output SQNR in dB with one layer in int8 (higher is better), worst first\n");
    for (const q::LayerSensitivity& l : sorted) {
      const bool keep = l.sqnr_db < keep_below_db;
      std::printf("%-56s %8.2f%s\n", l.layer.c_str(), l.sqnr_db, keep ? "  -> kept fp32" : "");
      if (keep) opt.keep_fp32.push_back(l.layer);
    }
    std::printf("whole network in int8: %.2f dB\n", whole);
    if (opt.keep_fp32.size() > kept_by_hand) {
      if (!(s = q::calibrate(bytes, images.size(), source, opt, &quantized, &report)).ok()) return fail(s.message());
      if (!(s = q::sensitivity(quantized, images.size(), source, opt.threads, nullptr, &whole)).ok()) {
        return fail(s.message());
      }
      std::printf("with %zu layers kept in fp32: %.2f dB\n", opt.keep_fp32.size() - kept_by_hand, whole);
    }
    const std::vector<std::string> adds = residual_adds(bytes, opt.keep_fp32);
    if (keep_below_db > 0.0 && !adds.empty()) {
      q::CalibrationOptions with_adds = opt;
      with_adds.keep_fp32.insert(with_adds.keep_fp32.end(), adds.begin(), adds.end());
      std::string kept_adds;
      std::vector<q::BlobReport> report_adds;
      double whole_adds = 0.0;
      if (!(s = q::calibrate(bytes, images.size(), source, with_adds, &kept_adds, &report_adds)).ok() ||
          !(s = q::sensitivity(kept_adds, images.size(), source, opt.threads, nullptr, &whole_adds)).ok()) {
        return fail(s.message());
      }
      const bool keep = whole_adds > whole + kAddsDb;
      std::printf("with the %zu residual adds in fp32 too: %.2f dB%s\n", adds.size(), whole_adds,
                  keep ? "  -> kept fp32" : "");
      if (keep) {
        opt = with_adds;
        quantized = std::move(kept_adds);
        report = std::move(report_adds);
      }
    }
  }
  if (bias_correction) {
    std::vector<q::BiasCorrection> corrections;
    std::string corrected;
    if (!(s = q::correct_biases(quantized, images.size(), source, opt.threads, &corrected, &corrections)).ok()) {
      return fail(s.message());
    }
    std::printf("\n%-56s %8s %10s %10s %10s %10s %8s\n", "bias correction: layer", "channels", "max shift",
                "rms shift", "rms output", "int8 step", "SQNR dB");
    for (const q::BiasCorrection& c : corrections) {
      if (c.skipped) {
        std::printf("%-56s %8s\n", c.layer.c_str(), "skipped (no linear part)");
      } else {
        std::printf("%-56s %8d %10.4g %10.4g %10.4g %10.4g %8.2f%s\n", c.layer.c_str(), c.channels, c.max_shift,
                    c.rms_shift, c.rms_output, c.step, c.sqnr_db, c.kept ? "" : "  (not kept)");
      }
    }
    double before = 0.0, after = 0.0;
    if (!(s = q::int8_sqnr(quantized, quantized, images.size(), source, opt.threads, &before)).ok() ||
        !(s = q::int8_sqnr(quantized, corrected, images.size(), source, opt.threads, &after)).ok()) {
      return fail(s.message());
    }
    std::printf("whole network in int8: %.2f dB, bias-corrected %.2f dB\n", before, after);
    quantized = std::move(corrected);
  }
  size_t int8_layers = 0;
  if (int8_weights) {
    std::vector<std::string> converted;
    std::string with_int8;
    if (!(s = q::store_int8_weights(quantized, &with_int8, &converted)).ok()) return fail(s.message());
    std::printf("int8 weights: %zu layers, model %.2f -> %.2f MiB\n", converted.size(), quantized.size() / 1048576.0,
                with_int8.size() / 1048576.0);
    int8_layers = converted.size();
    quantized = std::move(with_int8);
  }
  const std::string tmp = out + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary);
    o.write(quantized.data(), static_cast<std::streamsize>(quantized.size()));
    if (!o) return std::remove(tmp.c_str()), fail("cannot write '" + out + "'");
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) return std::remove(tmp.c_str()), fail("cannot write '" + out + "'");
  std::printf("wrote %s: %zu blob scales by %s over %zu images, %zu layers' weights int8\n", out.c_str(),
              report.size(), q::method_name(opt.method), images.size(), int8_layers);
  return 0;
}
