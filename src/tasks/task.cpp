// The task API (include/kestrel/tasks.h): metadata -> roles and pre-processing, an
// image -> the network input (stretched or letterboxed), the outputs -> a decoder
// (task_decoders.h), and the results mapped back to image pixels.
#include "kestrel/tasks.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "tasks/task_decoders.h"

namespace kestrel {

const char* const kPoseKeypointNames[17] = {
    "nose",       "left_eye",       "right_eye", "left_ear",   "right_ear", "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip",  "left_knee",      "right_knee", "left_ankle", "right_ankle"};

const int kPoseSkeleton[18][2] = {{0, 1},  {0, 2},   {1, 3},   {2, 4},   {5, 6},   {5, 7},
                                  {7, 9},  {6, 8},   {8, 10},  {5, 11},  {6, 12},  {11, 12},
                                  {11, 13}, {13, 15}, {12, 14}, {14, 16}, {0, 5},   {0, 6}};

namespace tasks {

double iou(const Box& a, const Box& b) {
  const double ax0 = std::min(a.x0, a.x1), ax1 = std::max(a.x0, a.x1), ay0 = std::min(a.y0, a.y1),
               ay1 = std::max(a.y0, a.y1);
  const double bx0 = std::min(b.x0, b.x1), bx1 = std::max(b.x0, b.x1), by0 = std::min(b.y0, b.y1),
               by1 = std::max(b.y0, b.y1);
  const double area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
  if (area_a <= 0 || area_b <= 0) return 0;
  const double iw = std::max(0.0, std::min(ax1, bx1) - std::max(ax0, bx0));
  const double ih = std::max(0.0, std::min(ay1, by1) - std::max(ay0, by0));
  const double inter = iw * ih;
  return inter / (area_a + area_b - inter);
}

std::vector<size_t> non_max_suppression(const std::vector<Box>& boxes, const std::vector<float>& scores,
                                        float score_threshold, float iou_threshold, size_t max_keep) {
  std::vector<size_t> order;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] > score_threshold) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::vector<size_t> kept;
  for (size_t i : order) {
    if (kept.size() >= max_keep) break;
    bool drop = false;
    for (size_t k : kept) {
      if (iou(boxes[i], boxes[k]) >= iou_threshold) {
        drop = true;
        break;
      }
    }
    if (!drop) kept.push_back(i);
  }
  return kept;
}

}  // namespace tasks

namespace {

Status bad(const std::string& what) { return Status(ErrorCode::kInvalidArgument, what); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool parse_floats(const std::string& s, std::vector<float>* out) {
  out->clear();
  for (const std::string& item : split(s, ',')) {
    char* end = nullptr;
    const float v = std::strtof(item.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v)) return false;
    out->push_back(v);
  }
  return true;
}

// The roles each task reads, in metadata as task.ROLE=BLOB.
const std::vector<std::string>& roles_of(const std::string& task) {
  static const std::vector<std::string> pose = {"center", "heatmap", "regress", "offset"};
  static const std::vector<std::string> objects = {"heatmap", "wh"};
  static const std::vector<std::string> none;
  return task == "pose" ? pose : task == "objects" ? objects : none;
}

// The decoders work on plain [C,H,W] Mats.
Mat unpacked(const Mat& m) { return m.elempack == 1 ? m : convert_packing(m, 1); }

}  // namespace

struct Task::Impl {
  const Net* net = nullptr;
  std::string task;
  std::map<std::string, std::string> roles;  // role -> output blob
  std::string input;
  int input_w = 0, input_h = 0, channels = 3;
  PixelType order = PixelType::kRGB;
  std::vector<float> mean, norm;
  Preprocess::Fit fit = Preprocess::Fit::kLetterbox;
  float pad_value = 0.f;
  std::vector<std::string> labels;
  tasks::DecodeParams params;

  Status preprocess(const Image& img, Mat* in, Preprocess* pre) const;
  Status finish(const tasks::Decoded& d, const Preprocess& pre, TaskResult* r) const;
};

Task::Task() = default;
Task::~Task() = default;
Task::Task(Task&&) noexcept = default;
Task& Task::operator=(Task&&) noexcept = default;

Status Task::init(const Net& net, const TaskOptions& options) {
  impl_.reset();
  auto im = std::make_unique<Impl>();
  im->net = &net;
  im->task = net.metadata("task");
  if (im->task != "pose" && im->task != "face" && im->task != "objects") {
    return bad("model metadata task='" + im->task + "' is not pose, face or objects (kestrel-convert --meta task=...)");
  }
  const std::vector<std::string> outputs = net.output_names();
  auto check_output = [&](const std::string& key, const std::string& blob) {
    if (blob.empty()) return bad("model metadata " + key + " is missing (the output that plays this role)");
    if (std::find(outputs.begin(), outputs.end(), blob) == outputs.end()) {
      return bad("model metadata " + key + "='" + blob + "' is not an output of the model");
    }
    return Status::Ok();
  };
  for (const std::string& role : roles_of(im->task)) {
    const std::string blob = net.metadata("task." + role);
    Status s = check_output("task." + role, blob);
    if (!s.ok()) return s;
    im->roles[role] = blob;
  }
  if (im->task == "face") {
    const std::vector<std::string> scores = split(net.metadata("task.scores"), ',');
    const std::vector<std::string> boxes = split(net.metadata("task.boxes"), ',');
    std::vector<float> anchors;
    const std::string anchor_meta = net.metadata("task.anchors");
    if (!parse_floats(anchor_meta.empty() ? "2,6" : anchor_meta, &anchors)) {
      return bad("model metadata task.anchors='" + anchor_meta + "' is not a list of anchors per cell");
    }
    if (scores.empty() || scores.size() != boxes.size() || scores.size() != anchors.size()) {
      return bad("model metadata task.scores, task.boxes and task.anchors must list one entry per anchor grid");
    }
    for (size_t g = 0; g < scores.size(); ++g) {
      Status s = check_output("task.scores", scores[g]);
      if (s.ok()) s = check_output("task.boxes", boxes[g]);
      if (!s.ok()) return s;
      im->roles["scores." + std::to_string(g)] = scores[g];
      im->roles["boxes." + std::to_string(g)] = boxes[g];
      if (anchors[g] < 1 || anchors[g] > 64) return bad("model metadata task.anchors has an invalid count");
      im->params.anchors_per_cell.push_back(static_cast<int>(anchors[g]));
    }
  }
  // Pre-processing, as kestrel-run reads it.
  const std::vector<std::string> inputs = net.input_names();
  if (inputs.size() != 1) return bad("a task model takes one image input, this one has " + std::to_string(inputs.size()));
  im->input = inputs[0];
  Shape shape;
  Status s = net.input_shape(im->input, &shape);
  if (!s.ok()) return s;
  if (shape.dims != 3 || (shape.c != 1 && shape.c != 3)) return bad("the input is not a [1 or 3, h, w] image");
  im->input_w = shape.w, im->input_h = shape.h, im->channels = shape.c;
  const std::string order = net.metadata("channel_order");
  if (shape.c == 1) {
    im->order = PixelType::kGray;
  } else if (order == "bgr") {
    im->order = PixelType::kBGR;
  } else if (order.empty() || order == "rgb") {
    im->order = PixelType::kRGB;
  } else {
    return bad("model metadata channel_order='" + order + "' is not rgb or bgr for a 3-channel input");
  }
  for (const char* key : {"mean", "norm"}) {
    std::vector<float>& v = key[0] == 'm' ? im->mean : im->norm;
    if (!parse_floats(net.metadata(key), &v) || (v.size() != 1 && v.size() != static_cast<size_t>(shape.c) && !v.empty())) {
      return bad(std::string("model metadata ") + key + "='" + net.metadata(key) + "' is not 1 or " +
                 std::to_string(shape.c) + " numbers");
    }
    if (v.size() == 1) v.assign(static_cast<size_t>(shape.c), v[0]);
  }
  const std::string fit = net.metadata("fit");
  if (fit == "stretch") {
    im->fit = Preprocess::Fit::kStretch;
  } else if (!fit.empty() && fit != "letterbox") {
    return bad("model metadata fit='" + fit + "' is not stretch or letterbox");
  }
  im->labels = split(net.metadata("labels"), ',');
  // Thresholds: the options, else the task's defaults.
  const bool face = im->task == "face";
  im->params.score_threshold = options.score_threshold >= 0 ? options.score_threshold : face ? 0.5f : 0.2f;
  im->params.iou_threshold = options.iou_threshold >= 0 ? options.iou_threshold : face ? 0.3f : 0.4f;
  im->params.max_results = options.max_results > 0 ? options.max_results : face ? 10 : 100;
  im->params.input_w = im->input_w, im->params.input_h = im->input_h;
  impl_ = std::move(im);
  return Status::Ok();
}

const std::string& Task::name() const {
  static const std::string kNone;
  return impl_ ? impl_->task : kNone;
}

const std::map<std::string, std::string>& Task::roles() const {
  static const std::map<std::string, std::string> kNone;
  return impl_ ? impl_->roles : kNone;
}

Status Task::Impl::preprocess(const Image& img, Mat* in, Preprocess* pre) const {
  if (img.w < 1 || img.h < 1) return bad("the image is empty");
  pre->image_w = img.w, pre->image_h = img.h;
  pre->input_w = input_w, pre->input_h = input_h;
  pre->fit = fit;
  int w = input_w, h = input_h;
  if (fit == Preprocess::Fit::kLetterbox) {
    const float scale = std::min(static_cast<float>(input_w) / img.w, static_cast<float>(input_h) / img.h);
    w = std::clamp(static_cast<int>(std::lround(img.w * scale)), 1, input_w);
    h = std::clamp(static_cast<int>(std::lround(img.h * scale)), 1, input_h);
  }
  Mat resized;
  Status s = from_image_resize(img, order, w, h, &resized);
  if (!s.ok()) return s;
  pre->scale_x = static_cast<float>(w) / static_cast<float>(img.w);
  pre->scale_y = static_cast<float>(h) / static_cast<float>(img.h);
  const int left = (input_w - w) / 2, top = (input_h - h) / 2;
  pre->pad_x = static_cast<float>(left), pre->pad_y = static_cast<float>(top);
  if (w == input_w && h == input_h) {
    *in = resized;
  } else {
    if (!in->create(Shape::make3(input_w, input_h, channels))) return Status(ErrorCode::kOutOfMemory, "out of memory for the input");
    for (int q = 0; q < channels; ++q) {
      float* dst = in->channel(q);
      std::fill(dst, dst + static_cast<size_t>(input_w) * input_h, pad_value);
      for (int y = 0; y < h; ++y) {
        std::copy_n(resized.channel(q) + static_cast<size_t>(y) * w, w, dst + static_cast<size_t>(y + top) * input_w + left);
      }
    }
  }
  substract_mean_normalize(*in, mean.empty() ? nullptr : mean.data(), norm.empty() ? nullptr : norm.data());
  return Status::Ok();
}

Status Task::Impl::finish(const tasks::Decoded& d, const Preprocess& pre, TaskResult* r) const {
  TaskResult out;
  out.task = task;
  out.preprocess = pre;
  auto point = [&](Keypoint k) {
    k.x = pre.image_x(k.x), k.y = pre.image_y(k.y);
    return k;
  };
  auto box = [&](const Box& b) {
    return Box{pre.image_x(std::min(b.x0, b.x1)), pre.image_y(std::min(b.y0, b.y1)), pre.image_x(std::max(b.x0, b.x1)),
               pre.image_y(std::max(b.y0, b.y1))};
  };
  for (Pose p : d.poses) {
    for (Keypoint& k : p.keypoints) k = point(k);
    out.poses.push_back(std::move(p));
  }
  for (Face f : d.faces) {
    f.box = box(f.box);
    for (Keypoint& k : f.landmarks) k = point(k);
    out.faces.push_back(std::move(f));
  }
  for (Detection o : d.objects) {
    o.box = box(o.box);
    if (o.label >= 0 && static_cast<size_t>(o.label) < labels.size()) o.name = labels[static_cast<size_t>(o.label)];
    out.objects.push_back(std::move(o));
  }
  *r = std::move(out);
  return Status::Ok();
}

Status Task::decode(const std::map<std::string, Mat>& outputs, const Preprocess& pre, TaskResult* result) const {
  if (!impl_) return Status(ErrorCode::kInvalidArgument, "the task is not initialized (Task::init failed or was not called)");
  tasks::Outputs by_role;
  for (const auto& [role, blob] : impl_->roles) {
    const auto it = outputs.find(role);
    if (it == outputs.end() || it->second.empty()) return bad("no tensor for the role '" + role + "' (output '" + blob + "')");
    by_role[role] = unpacked(it->second);
    if (by_role[role].empty()) return Status(ErrorCode::kOutOfMemory, "out of memory unpacking '" + blob + "'");
  }
  tasks::Decoded d;
  const std::string& t = impl_->task;
  Status s = t == "pose" ? tasks::decode_movenet(by_role, impl_->params, &d)
             : t == "face" ? tasks::decode_blazeface(by_role, impl_->params, &d)
                           : tasks::decode_centernet(by_role, impl_->params, &d);
  if (!s.ok()) return s;
  return impl_->finish(d, pre, result);
}

Status Task::run(Extractor& ex, const Image& image, const Box& roi, TaskResult* result) const {
  if (image.w < 1 || image.h < 1 || image.channels < 1 ||
      image.pixels.size() != static_cast<size_t>(image.w) * image.h * image.channels) {
    return bad("the image is empty or inconsistent");
  }
  const auto clip = [](float v, int hi) { return std::clamp(static_cast<int>(std::floor(v)), 0, hi); };
  const int x0 = clip(std::min(roi.x0, roi.x1), image.w), x1 = clip(std::ceil(std::max(roi.x0, roi.x1)), image.w);
  const int y0 = clip(std::min(roi.y0, roi.y1), image.h), y1 = clip(std::ceil(std::max(roi.y0, roi.y1)), image.h);
  if (x1 <= x0 || y1 <= y0) return bad("the region of interest lies outside the image");
  Image crop;
  crop.w = x1 - x0, crop.h = y1 - y0, crop.channels = image.channels;
  crop.pixels.resize(static_cast<size_t>(crop.w) * crop.h * crop.channels);
  const size_t row = static_cast<size_t>(crop.w) * crop.channels;
  for (int y = 0; y < crop.h; ++y) {
    const uint8_t* src = image.pixels.data() + (static_cast<size_t>(y0 + y) * image.w + x0) * image.channels;
    std::copy_n(src, row, crop.pixels.data() + static_cast<size_t>(y) * row);
  }
  return run_region(ex, crop, static_cast<float>(x0), static_cast<float>(y0), image.w, image.h, result);
}

Status Task::preprocess(const Image& image, Mat* input, Preprocess* pre) const {
  if (!impl_) return Status(ErrorCode::kInvalidArgument, "the task is not initialized (Task::init failed or was not called)");
  return impl_->preprocess(image, input, pre);
}

const std::string& Task::input_name() const {
  static const std::string kNone;
  return impl_ ? impl_->input : kNone;
}

Status Task::run(Extractor& ex, const Image& image, TaskResult* result) const {
  return run_region(ex, image, 0.f, 0.f, image.w, image.h, result);
}

Status Task::run_region(Extractor& ex, const Image& image, float crop_x, float crop_y, int full_w, int full_h,
                        TaskResult* result) const {
  if (!impl_) return Status(ErrorCode::kInvalidArgument, "the task is not initialized (Task::init failed or was not called)");
  Mat in;
  Preprocess pre;
  Status s = impl_->preprocess(image, &in, &pre);
  pre.crop_x = crop_x, pre.crop_y = crop_y;
  pre.image_w = full_w, pre.image_h = full_h;
  if (s.ok()) s = ex.input(impl_->input, in);
  std::map<std::string, Mat> outputs;
  for (const auto& [role, blob] : impl_->roles) {
    if (!s.ok()) break;
    s = ex.extract(blob, outputs[role]);
  }
  if (!s.ok()) return s;
  return decode(outputs, pre, result);
}

Status Task::run(const Image& image, TaskResult* result) const {
  if (!impl_) return Status(ErrorCode::kInvalidArgument, "the task is not initialized (Task::init failed or was not called)");
  Extractor ex = impl_->net->create_extractor();
  return run(ex, image, result);
}

}  // namespace kestrel
