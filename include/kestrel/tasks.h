// Kestrel tasks: answers instead of tensors. A Task reads a loaded Net's metadata (which
// task, which outputs play which role, how an image becomes the input), then turns an
// image into people (17 keypoints each), faces (box and 6 landmarks) or objects (box and
// label), in the image's own pixel coordinates.
//
//   kestrel::Net net;            // e.g. MoveNet converted with --meta task=pose ...
//   net.load("movenet.kst");
//   kestrel::Task task;
//   if (!task.init(net).ok()) ...             // names the metadata that is missing
//   kestrel::TaskResult r;
//   kestrel::Status s = task.run(image, &r);  // r.poses[0].keypoints[0] = the nose
//
// Tasks and the metadata they read (kestrel-convert --meta KEY=VALUE):
//   task=pose     MoveNet single-person pose: task.center, task.heatmap, task.regress,
//                 task.offset name the centre heatmap [1,h,w], keypoint heatmaps [17,h,w],
//                 regression [34,h,w] and offsets [34,h,w] (y then x per keypoint). The
//                 decoding is the arithmetic of MoveNet's own graph post-processing.
//   task=face     BlazeFace: task.scores and task.boxes name the logit and regressor
//                 outputs, one per anchor grid ([n,1] and [n,16]), in anchor order;
//                 task.strides and task.anchors give the grids (default 16,32 and 2,6 for
//                 the 256x256 model). Sigmoid scores, anchor decoding, NMS.
//   task=objects  CenterNet: task.heatmap [classes,h,w] (after sigmoid) and task.wh
//                 [4,h,w]; 3x3 peak picking, top-k, boxes from the wh regression;
//                 `labels` names the classes.
// Pre-processing: input_size (else the input's shape), mean, norm, channel_order (as
// kestrel-run), and `fit` = stretch (resize to the input) or letterbox (scale to fit,
// centre, pad with `pad_value`).
//
// Thread safety: a Task is read-only after init(); run() creates its own Extractor, so
// several threads may share one Task (and its Net). The Net must outlive the Task.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/image.h"
#include "kestrel/mat.h"
#include "kestrel/net.h"
#include "kestrel/status.h"

namespace kestrel {

// How the image was fitted to the network input; results are mapped back through it.
struct Preprocess {
  enum class Fit { kStretch, kLetterbox };
  Fit fit = Fit::kStretch;
  int image_w = 0, image_h = 0;  // the whole original image
  int input_w = 0, input_h = 0;  // the network input
  float scale_x = 1.f, scale_y = 1.f;  // input pixels per image pixel
  float pad_x = 0.f, pad_y = 0.f;      // left/top border in input pixels (letterbox)
  float crop_x = 0.f, crop_y = 0.f;    // the region's top-left in the image (run with a roi)

  // The image position of an input position (input pixels, x right, y down).
  float image_x(float input_x) const { return (input_x - pad_x) / scale_x + crop_x; }
  float image_y(float input_y) const { return (input_y - pad_y) / scale_y + crop_y; }
};

struct Keypoint {
  float x = 0.f, y = 0.f;  // image pixels
  float score = 0.f;
};

struct Box {
  float x0 = 0.f, y0 = 0.f, x1 = 0.f, y1 = 0.f;  // image pixels, x0 <= x1, y0 <= y1
};

// MoveNet's 17 COCO keypoints, in COCO order (kPoseKeypointNames).
struct Pose {
  std::vector<Keypoint> keypoints;
  float score = 0.f;  // the mean keypoint score
};

// BlazeFace: right eye, left eye, nose tip, mouth centre, right ear tragion, left ear
// tragion (the subject's right and left).
struct Face {
  Box box;
  float score = 0.f;
  std::vector<Keypoint> landmarks;  // score: the face's score
};

struct Detection {
  Box box;
  float score = 0.f;
  int label = 0;
  std::string name;  // from the model's labels, else ""
};

struct TaskResult {
  std::string task;  // "pose", "face" or "objects"
  Preprocess preprocess;
  std::vector<Pose> poses;
  std::vector<Face> faces;
  std::vector<Detection> objects;
};

struct TaskOptions {
  float score_threshold = -1.f;  // < 0: the task's default (face 0.5, objects 0.2)
  float iou_threshold = -1.f;    // NMS (face): < 0 means 0.3
  int max_results = 0;           // <= 0: the task's default (face 10, objects 100)
};

extern const char* const kPoseKeypointNames[17];
// The bones drawn between keypoints (index pairs into kPoseKeypointNames).
extern const int kPoseSkeleton[18][2];

class Task {
 public:
  Task();
  ~Task();
  Task(Task&&) noexcept;
  Task& operator=(Task&&) noexcept;

  // Reads the task and its roles from net's metadata and checks them against the net's
  // outputs and shapes. InvalidArgument naming the key or output when something is
  // missing or does not fit; the Task is then unusable (run() fails).
  Status init(const Net& net, const TaskOptions& options = {});
  const std::string& name() const;

  // Pre-processes `image` as the metadata says, runs the net (its own Extractor), and
  // decodes. Errors: the image's (from_image_resize), the extractor's, or a decoding
  // error naming the output.
  Status run(const Image& image, TaskResult* result) const;
  // The same on an Extractor the caller owns (reuses its memory between frames).
  Status run(Extractor& ex, const Image& image, TaskResult* result) const;
  // On a region of the image only (a person box from a detector, for the single-person
  // pose model); results are still in whole-image pixels. The region is clipped to the
  // image; InvalidArgument when nothing of it is left.
  Status run(Extractor& ex, const Image& image, const Box& roi, TaskResult* result) const;

  // Decodes outputs that were computed elsewhere (another engine, a saved run): role
  // ("center", "heatmap", ...; see above) -> tensor in the net's output layout, and the
  // pre-processing that made the input.
  Status decode(const std::map<std::string, Mat>& outputs, const Preprocess& pre, TaskResult* result) const;
  // The output blob that plays each role.
  const std::map<std::string, std::string>& roles() const;
  // The network input run() would feed for `image` (the model's pre-processing:
  // input size, fit, channel order, mean and norm), and how it was fitted; for tools
  // that feed the net themselves (kestrel-quantize's calibration). The net's input is
  // named input_name(). InvalidArgument when the task is not initialized or the image
  // is empty.
  Status preprocess(const Image& image, Mat* input, Preprocess* pre) const;
  const std::string& input_name() const;

  struct Impl;

 private:
  Status run_region(Extractor& ex, const Image& image, float crop_x, float crop_y, int full_w, int full_h,
                    TaskResult* result) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kestrel
