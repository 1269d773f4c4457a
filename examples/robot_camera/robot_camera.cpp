// robot_camera: two networks at once on a stream of camera frames, as on a robot: an
// object detector (MobileNet-SSD) and a classifier (the Fashion-MNIST model), each on
// its own thread with its own thread count and CPU set, each printing the latency of
// every frame. The frames are image files, decoded once up front as a camera driver
// would hand them over.
//
//   robot_camera --detector SSD.kst --classifier CLS.kst [--frames N]
//                [--det-cpus LIST] [--det-threads N] [--cls-cpus LIST] [--cls-threads N]
//                IMAGE...
// LIST is the kernel's cpulist format ("0-3,6") or big|little|all; default: the
// detector on the big cores, the classifier on the little ones (on a machine without
// little cores: the detector on the first half of the CPUs, the classifier on the rest).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kestrel/cpu.h"
#include "kestrel/image.h"
#include "kestrel/net.h"

namespace {

std::mutex g_print;  // one line at a time from the two model threads

struct ModelJob {
  std::string name;
  std::string path;
  kestrel::CpuSet cpus;
  int threads = 1;
  std::vector<double> latency_ms;
  bool ok = true;
};

// "0-3,6", "big", "little" or "all"; false for anything else.
bool parse_cpus(const std::string& text, kestrel::CpuSet* out) {
  if (text == "big") return *out = kestrel::cpu_set(kestrel::PowerSave::kBig), true;
  if (text == "little") return *out = kestrel::cpu_set(kestrel::PowerSave::kLittle), true;
  if (text == "all") return *out = kestrel::cpu_set(kestrel::PowerSave::kAll), true;
  kestrel::CpuSet set;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    const size_t dash = item.find('-');
    char* stop = nullptr;
    const long lo = std::strtol(item.c_str(), &stop, 10);
    const long hi = dash == std::string::npos ? lo : std::strtol(item.c_str() + dash + 1, &stop, 10);
    if (item.empty() || *stop != '\0' || lo < 0 || hi < lo) return false;
    for (long c = lo; c <= hi; ++c) set.enable(static_cast<int>(c));
    pos = end + 1;
  }
  *out = set;
  return !set.empty();
}

// Planar float input for a network from a frame, with the model's own preprocessing
// metadata ("mean"/"norm", one value per channel).
kestrel::Status preprocess(const kestrel::Net& net, const kestrel::Image& frame, kestrel::Mat* in) {
  kestrel::Shape shape;
  kestrel::Status s = net.input_shape("data", &shape);
  if (!s.ok()) return s;
  const int c = shape.c * shape.elempack;
  const kestrel::PixelType type = c == 1 ? kestrel::PixelType::kGray : kestrel::PixelType::kBGR;
  if (!(s = kestrel::from_image_resize(frame, type, shape.w, shape.h, in)).ok()) return s;
  float mean[3] = {0, 0, 0}, norm[3] = {1, 1, 1};
  const std::string m = net.metadata("mean"), n = net.metadata("norm");
  std::sscanf(m.c_str(), "%f,%f,%f", &mean[0], &mean[1], &mean[2]);
  std::sscanf(n.c_str(), "%f,%f,%f", &norm[0], &norm[1], &norm[2]);
  kestrel::substract_mean_normalize(*in, mean, norm);
  return kestrel::Status::Ok();
}

// What one output says, for the log line.
std::string summarize(const std::string& model, const kestrel::Mat& out) {
  char buf[96];
  if (model == "detector") {
    // Rows of (label, score, x0, y0, x1, y1); random weights give arbitrary boxes.
    const int rows = out.dims == 2 ? out.h : 0;
    std::snprintf(buf, sizeof buf, "%d box%s", rows, rows == 1 ? "" : "es");
    return buf;
  }
  int best = 0;
  for (int i = 1; i < out.w; ++i) best = out[i] > out[best] ? i : best;
  std::snprintf(buf, sizeof buf, "class %d (%.3f)", best, out.w > 0 ? out[best] : 0.f);
  return buf;
}

void run_model(ModelJob* job, const std::vector<kestrel::Image>* frames, const std::vector<std::string>* names,
               int num_frames) {
  kestrel::Net net;
  kestrel::Status s = net.load(job->path);
  kestrel::Extractor ex = net.create_extractor();
  ex.set_num_threads(job->threads);
  if (s.ok()) s = ex.set_cpu_set(job->cpus);
  const std::string output = net.output_names().empty() ? "" : net.output_names()[0];
  for (int f = 0; s.ok() && f < num_frames; ++f) {
    const size_t i = static_cast<size_t>(f) % frames->size();
    const auto t0 = std::chrono::steady_clock::now();
    kestrel::Mat in, out;
    s = preprocess(net, (*frames)[i], &in);
    if (s.ok()) s = ex.input("data", in);
    if (s.ok()) s = ex.extract(output, out);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) break;
    job->latency_ms.push_back(ms);
    std::lock_guard<std::mutex> lock(g_print);
    std::printf("[%-10s cpus %-5s x%d] frame %3d %-24s %8.2f ms  %s\n", job->name.c_str(),
                job->cpus.to_string().c_str(), job->threads, f, (*names)[i].c_str(), ms,
                summarize(job->name, out).c_str());
  }
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(g_print);
    std::fprintf(stderr, "%s: %s\n", job->name.c_str(), s.message().c_str());
    job->ok = false;
  }
}

void print_summary(const ModelJob& job) {
  std::vector<double> v = job.latency_ms;
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  std::printf("%-10s %3zu frames  mean %8.2f ms  median %8.2f ms  max %8.2f ms  (first frame %.2f ms)\n",
              job.name.c_str(), v.size(), sum / v.size(), v[v.size() / 2], v.back(), job.latency_ms.front());
}

int usage() {
  std::fprintf(stderr,
               "usage: robot_camera --detector SSD.kst --classifier CLS.kst [--frames N]\n"
               "                    [--det-cpus LIST] [--det-threads N] [--cls-cpus LIST] [--cls-threads N] IMAGE...\n"
               "LIST: cpulist (\"0-3,6\") or big|little|all\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ModelJob det, cls;
  det.name = "detector";
  cls.name = "classifier";
  int num_frames = 0;
  std::string det_cpus, cls_cpus;
  std::vector<std::string> images;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--detector" && has_value) {
      det.path = argv[++i];
    } else if (a == "--classifier" && has_value) {
      cls.path = argv[++i];
    } else if (a == "--frames" && has_value) {
      num_frames = std::atoi(argv[++i]);
    } else if (a == "--det-cpus" && has_value) {
      det_cpus = argv[++i];
    } else if (a == "--cls-cpus" && has_value) {
      cls_cpus = argv[++i];
    } else if (a == "--det-threads" && has_value) {
      det.threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--cls-threads" && has_value) {
      cls.threads = std::max(1, std::atoi(argv[++i]));
    } else if (!a.empty() && a[0] == '-') {
      return usage();
    } else {
      images.push_back(a);
    }
  }
  if (det.path.empty() || cls.path.empty() || images.empty()) return usage();
  if (num_frames <= 0) num_frames = static_cast<int>(images.size());

  std::printf("CPUs: %d online, %d big, %d little; OpenMP wait policy: %s\n", kestrel::cpu_count(),
              kestrel::big_cpu_count(), kestrel::little_cpu_count(),
              kestrel::openmp_wait_policy() == kestrel::WaitPolicy::kPassive  ? "passive"
              : kestrel::openmp_wait_policy() == kestrel::WaitPolicy::kActive ? "active"
                                                                               : "default (OMP_WAIT_POLICY unset)");
  // Defaults: split the machine so the two models do not compete for cores.
  if (kestrel::little_cpu_count() > 0) {
    det.cpus = kestrel::cpu_set(kestrel::PowerSave::kBig);
    cls.cpus = kestrel::cpu_set(kestrel::PowerSave::kLittle);
  } else {
    const int n = kestrel::cpu_count(), half = std::max(1, n / 2);
    for (int c = 0; c < n; ++c) (c < half ? det.cpus : cls.cpus).enable(c);
    if (cls.cpus.empty()) cls.cpus = det.cpus;
  }
  if ((!det_cpus.empty() && !parse_cpus(det_cpus, &det.cpus)) || (!cls_cpus.empty() && !parse_cpus(cls_cpus, &cls.cpus))) {
    std::fprintf(stderr, "robot_camera: bad CPU list\n");
    return 2;
  }

  // The "camera": frames decoded before the loop starts.
  std::vector<kestrel::Image> frames(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const kestrel::Status s = kestrel::load_image(images[i], &frames[i]);
    if (!s.ok()) {
      std::fprintf(stderr, "robot_camera: %s\n", s.message().c_str());
      return 1;
    }
    const size_t slash = images[i].find_last_of('/');
    images[i] = slash == std::string::npos ? images[i] : images[i].substr(slash + 1);
  }

  std::thread t1(run_model, &det, &frames, &images, num_frames);
  std::thread t2(run_model, &cls, &frames, &images, num_frames);
  t1.join();
  t2.join();
  print_summary(det);
  print_summary(cls);
  return det.ok && cls.ok ? 0 : 1;
}
