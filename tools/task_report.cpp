#include "task_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kt {
namespace {

const kestrel::Color kColors[] = {{230, 25, 75}, {60, 180, 75}, {255, 225, 25}, {0, 130, 200},
                                  {245, 130, 48}, {145, 30, 180}, {70, 240, 240}, {240, 50, 230}};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string box_json(const kestrel::Box& b) {
  return "[" + num(b.x0) + "," + num(b.y0) + "," + num(b.x1) + "," + num(b.y1) + "]";
}

std::string points_json(const std::vector<kestrel::Keypoint>& pts) {
  std::string s = "[";
  for (size_t i = 0; i < pts.size(); ++i) {
    s += (i ? "," : "") + std::string("[") + num(pts[i].x) + "," + num(pts[i].y) + "," + num(pts[i].score) + "]";
  }
  return s + "]";
}

std::string quoted(const std::string& t) {
  std::string s = "\"";
  for (char c : t) {
    if (c == '"' || c == '\\') s += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) s += c;
  }
  return s + "\"";
}

}  // namespace

void draw_label(kestrel::Image& img, int x, int y, const std::string& text, kestrel::Color color) {
  const int scale = std::max(1, std::min(img.w, img.h) / 250);
  int tw = 0, th = 0;
  kestrel::text_size(text, scale, &tw, &th);
  if (y - th - scale >= 0) y -= th + scale;
  kestrel::draw_rectangle(img, x, y, x + tw + 2 * scale, y + th + scale, kestrel::Color{0, 0, 0}, 0);
  kestrel::draw_text(img, x + scale, y + scale, text, color, scale);
}

namespace {

int round_px(float v) { return static_cast<int>(std::lround(std::clamp(v, -1e6f, 1e6f))); }

}  // namespace

void print_task_result(const kestrel::TaskResult& r) {
  const kestrel::Preprocess& p = r.preprocess;
  std::printf("task     %s: image %dx%d -> input %dx%d (%s, scale %.4g x %.4g, pad %.4g,%.4g)\n", r.task.c_str(),
              p.image_w, p.image_h, p.input_w, p.input_h,
              p.fit == kestrel::Preprocess::Fit::kLetterbox ? "letterbox" : "stretch", p.scale_x, p.scale_y, p.pad_x,
              p.pad_y);
  for (size_t i = 0; i < r.poses.size(); ++i) {
    std::printf("pose %zu  score %.3f (x, y, score in image pixels)\n", i, r.poses[i].score);
    for (size_t k = 0; k < r.poses[i].keypoints.size(); ++k) {
      const kestrel::Keypoint& kp = r.poses[i].keypoints[k];
      std::printf("  %-15s %8.1f %8.1f  %.3f\n", k < 17 ? kestrel::kPoseKeypointNames[k] : "?", kp.x, kp.y, kp.score);
    }
  }
  for (size_t i = 0; i < r.faces.size(); ++i) {
    const kestrel::Face& f = r.faces[i];
    std::printf("face %zu  %.3f  box %.1f %.1f %.1f %.1f  landmarks", i, f.score, f.box.x0, f.box.y0, f.box.x1, f.box.y1);
    for (const kestrel::Keypoint& k : f.landmarks) std::printf(" (%.1f, %.1f)", k.x, k.y);
    std::printf("\n");
  }
  for (const kestrel::Detection& o : r.objects) {
    std::printf("  %3d %-14s %.3f  box %.1f %.1f %.1f %.1f\n", o.label, o.name.empty() ? "-" : o.name.c_str(), o.score,
                o.box.x0, o.box.y0, o.box.x1, o.box.y1);
  }
  if (r.task == "face" || r.task == "objects") {
    std::printf("%zu %s\n", r.task == "face" ? r.faces.size() : r.objects.size(),
                r.task == "face" ? "faces" : "objects");
  }
}

void draw_task_result(kestrel::Image& img, const kestrel::TaskResult& r, float min_score) {
  const int t = std::max(2, std::min(img.w, img.h) / 200);
  for (const kestrel::Pose& p : r.poses) {
    for (const auto& bone : kestrel::kPoseSkeleton) {
      const kestrel::Keypoint& a = p.keypoints[static_cast<size_t>(bone[0])];
      const kestrel::Keypoint& b = p.keypoints[static_cast<size_t>(bone[1])];
      if (a.score < min_score || b.score < min_score) continue;
      kestrel::draw_line(img, round_px(a.x), round_px(a.y), round_px(b.x), round_px(b.y), kestrel::Color{0, 255, 255}, t);
    }
    for (const kestrel::Keypoint& k : p.keypoints) {
      if (k.score >= min_score) kestrel::draw_circle(img, round_px(k.x), round_px(k.y), t + 2, kestrel::Color{255, 0, 80});
    }
  }
  for (size_t i = 0; i < r.faces.size(); ++i) {
    const kestrel::Face& f = r.faces[i];
    const kestrel::Color c = kColors[i % 8];
    kestrel::draw_rectangle(img, round_px(f.box.x0), round_px(f.box.y0), round_px(f.box.x1), round_px(f.box.y1), c, t);
    for (const kestrel::Keypoint& k : f.landmarks) kestrel::draw_circle(img, round_px(k.x), round_px(k.y), t + 1, c);
    draw_label(img, round_px(f.box.x0), round_px(f.box.y0), "face " + num(std::round(f.score * 100) / 100), c);
  }
  for (const kestrel::Detection& o : r.objects) {
    const kestrel::Color c = kColors[static_cast<size_t>(std::max(o.label, 0)) % 8];
    kestrel::draw_rectangle(img, round_px(o.box.x0), round_px(o.box.y0), round_px(o.box.x1), round_px(o.box.y1), c, t);
    draw_label(img, round_px(o.box.x0), round_px(o.box.y0),
          (o.name.empty() ? std::to_string(o.label) : o.name) + " " + num(std::round(o.score * 100) / 100), c);
  }
}

std::string task_result_json(const kestrel::TaskResult& r, const std::string& image, double latency_ms) {
  const kestrel::Preprocess& p = r.preprocess;
  std::string s = "{\"task\":" + quoted(r.task) + ",\"image\":" + quoted(image) + ",\"latency_ms\":" + num(latency_ms);
  s += ",\"preprocess\":{\"fit\":" + quoted(p.fit == kestrel::Preprocess::Fit::kLetterbox ? "letterbox" : "stretch") +
       ",\"image_size\":[" + num(p.image_w) + "," + num(p.image_h) + "],\"input_size\":[" + num(p.input_w) + "," +
       num(p.input_h) + "],\"scale\":[" + num(p.scale_x) + "," + num(p.scale_y) + "],\"pad\":[" + num(p.pad_x) + "," +
       num(p.pad_y) + "]}";
  if (r.task == "pose") {
    s += ",\"keypoint_names\":[";
    for (int k = 0; k < 17; ++k) s += (k ? "," : "") + quoted(kestrel::kPoseKeypointNames[k]);
    s += "],\"poses\":[";
    for (size_t i = 0; i < r.poses.size(); ++i) {
      s += (i ? "," : "") + std::string("{\"score\":") + num(r.poses[i].score) +
           ",\"keypoints\":" + points_json(r.poses[i].keypoints) + "}";
    }
    s += "]";
  } else if (r.task == "face") {
    s += ",\"faces\":[";
    for (size_t i = 0; i < r.faces.size(); ++i) {
      s += (i ? "," : "") + std::string("{\"score\":") + num(r.faces[i].score) + ",\"box\":" + box_json(r.faces[i].box) +
           ",\"landmarks\":" + points_json(r.faces[i].landmarks) + "}";
    }
    s += "]";
  } else {
    s += ",\"objects\":[";
    for (size_t i = 0; i < r.objects.size(); ++i) {
      const kestrel::Detection& o = r.objects[i];
      s += (i ? "," : "") + std::string("{\"label\":") + num(o.label) + ",\"name\":" + quoted(o.name) +
           ",\"score\":" + num(o.score) + ",\"box\":" + box_json(o.box) + "}";
    }
    s += "]";
  }
  return s + "}\n";
}

}  // namespace kt
