// kestrel-people: the task API (kestrel/tasks.h) end to end on one photo: objects from a
// detector, then a single-person pose model on each person the detector found (the
// person's box as the region of interest), and faces on the whole image; printed,
// drawn into one picture and written as JSON.
//
//   kestrel-people IMAGE [--objects CENTERNET.kst] [--pose MOVENET.kst] [--faces BLAZEFACE.kst]
//                  [--people N] [--threads N] [--loops N] [--draw OUT.jpg] [--json OUT.json]
//
// --people: poses for at most N persons (default 4, the most confident); without
// --objects the pose model runs on the whole image. --loops: runs each model N times
// (default 5) and reports the median latency per run. Exit 0 ok, 1 error, 2 usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kestrel/net.h"
#include "kestrel/tasks.h"
#include "task_report.h"

namespace {

struct Args {
  std::string image, objects, pose, faces, draw, json;
  int people = 4, threads = 1, loops = 5;
};

int usage(const std::string& why) {
  std::fprintf(stderr,
               "kestrel-people: %s\nusage: kestrel-people IMAGE [--objects M.kst] [--pose M.kst] [--faces M.kst]\n"
               "                      [--people N] [--threads N] [--loops N] [--draw OUT.jpg] [--json OUT.json]\n",
               why.c_str());
  return 2;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "kestrel-people: %s\n", why.c_str());
  return 1;
}

bool parse(int argc, char** argv, Args* a, std::string* why) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f.empty() || f[0] != '-') {
      if (!a->image.empty()) return *why = "two images given", false;
      a->image = f;
      continue;
    }
    if (i + 1 >= argc) return *why = f + " needs a value", false;
    const std::string v = argv[++i];
    auto number = [&](int lo, int* out) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < lo || n > 1000) return false;
      *out = static_cast<int>(n);
      return true;
    };
    bool ok = true;
    if (f == "--objects") a->objects = v;
    else if (f == "--pose") a->pose = v;
    else if (f == "--faces") a->faces = v;
    else if (f == "--draw") a->draw = v;
    else if (f == "--json") a->json = v;
    else if (f == "--people") ok = number(0, &a->people);
    else if (f == "--threads") ok = number(1, &a->threads);
    else if (f == "--loops") ok = number(1, &a->loops);
    else return *why = "unknown option '" + f + "'", false;
    if (!ok) return *why = "bad value '" + v + "' for " + f, false;
  }
  if (a->image.empty()) return *why = "no image given", false;
  if (a->objects.empty() && a->pose.empty() && a->faces.empty()) return *why = "no model given", false;
  return true;
}

// A loaded model and its task, with the extractor that runs it.
struct Model {
  kestrel::Net net;
  kestrel::Task task;
  std::optional<kestrel::Extractor> ex;
};

kestrel::Status load(const std::string& path, int threads, Model* m) {
  m->net.option().num_threads = threads;
  kestrel::Status s = m->net.load(path);
  if (s.ok()) s = m->task.init(m->net);
  if (!s.ok()) return s.with_context(path);
  m->ex.emplace(m->net.create_extractor());
  return s;
}

// Runs `fn` loops times; the median wall time in ms.
template <class Fn>
double median_ms(int loops, Fn&& fn, kestrel::Status* s) {
  std::vector<double> ms;
  for (int i = 0; i < loops && s->ok(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    *s = fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

// The person box grown by 10% on each side (arms and feet poke out of detector boxes).
kestrel::Box person_roi(const kestrel::Box& b) {
  const float dx = 0.1f * (b.x1 - b.x0), dy = 0.1f * (b.y1 - b.y0);
  return kestrel::Box{b.x0 - dx, b.y0 - dy, b.x1 + dx, b.y1 + dy};
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string why;
  if (!parse(argc, argv, &a, &why)) return usage(why);
  kestrel::Image img;
  kestrel::Status s = kestrel::load_image(a.image, &img);
  if (!s.ok()) return fail(s.message());
  Model objects, pose, faces;
  for (auto [path, m] : {std::pair{&a.objects, &objects}, {&a.pose, &pose}, {&a.faces, &faces}}) {
    if (!path->empty() && !(s = load(*path, a.threads, m)).ok()) return fail(s.message());
  }
  std::printf("image    %s (%dx%d), %d thread%s, latency = median of %d runs\n", a.image.c_str(), img.w, img.h,
              a.threads, a.threads == 1 ? "" : "s", a.loops);
  kestrel::TaskResult all;
  std::string json = "{\"image\":\"" + a.image + "\"";
  std::vector<kestrel::Box> rois;
  if (!a.objects.empty()) {
    kestrel::TaskResult r;
    const double ms = median_ms(a.loops, [&] { return objects.task.run(*objects.ex, img, &r); }, &s);
    if (!s.ok()) return fail(s.message());
    std::printf("== objects (%s): %.2f ms\n", a.objects.c_str(), ms);
    kt::print_task_result(r);
    all.objects = r.objects;
    json += ",\"objects\":" + kt::task_result_json(r, a.image, ms);
    for (const kestrel::Detection& d : r.objects) {
      if (d.name == "person" && d.score >= 0.3f && static_cast<int>(rois.size()) < a.people) rois.push_back(d.box);
    }
  }
  if (!a.pose.empty()) {
    if (a.objects.empty()) rois.push_back(kestrel::Box{0.f, 0.f, static_cast<float>(img.w), static_cast<float>(img.h)});
    json += ",\"poses\":[";
    for (size_t i = 0; i < rois.size(); ++i) {
      kestrel::TaskResult r;
      const kestrel::Box roi = a.objects.empty() ? rois[i] : person_roi(rois[i]);
      const double ms = median_ms(a.loops, [&] { return pose.task.run(*pose.ex, img, roi, &r); }, &s);
      if (!s.ok()) return fail(s.message());
      std::printf("== pose of person %zu (%s, box %.0f %.0f %.0f %.0f): %.2f ms\n", i, a.pose.c_str(), roi.x0, roi.y0,
                  roi.x1, roi.y1, ms);
      kt::print_task_result(r);
      all.poses.insert(all.poses.end(), r.poses.begin(), r.poses.end());
      json += (i ? "," : "") + kt::task_result_json(r, a.image, ms);
    }
    json += "]";
  }
  if (!a.faces.empty()) {
    kestrel::TaskResult r;
    const double ms = median_ms(a.loops, [&] { return faces.task.run(*faces.ex, img, &r); }, &s);
    if (!s.ok()) return fail(s.message());
    std::printf("== faces (%s): %.2f ms\n", a.faces.c_str(), ms);
    kt::print_task_result(r);
    all.faces = r.faces;
    json += ",\"faces\":" + kt::task_result_json(r, a.image, ms);
  }
  json += "}\n";
  if (!a.json.empty()) {
    std::ofstream f(a.json, std::ios::binary | std::ios::trunc);
    f << json;
    if (!f.flush()) return fail("cannot write " + a.json);
    std::printf("json     %s\n", a.json.c_str());
  }
  if (!a.draw.empty()) {
    kt::draw_task_result(img, all, 0.3f);
    if (!(s = kestrel::save_image(a.draw, img)).ok()) return fail(s.message());
    std::printf("drawn    %s\n", a.draw.c_str());
  }
  return 0;
}
