// Internal to the task API: the decoders, one file per model family, each a pure
// function of the network's outputs (unpacked [C,H,W] / [N,K] Mats) in network-input
// pixels, and the helpers they share.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kestrel/tasks.h"

namespace kestrel::tasks {

// The decoded results in network-input pixels (before Preprocess maps them back).
struct Decoded {
  std::vector<Pose> poses;
  std::vector<Face> faces;
  std::vector<Detection> objects;
};

struct DecodeParams {
  int input_w = 0, input_h = 0;
  float score_threshold = 0.f, iou_threshold = 0.f;
  int max_results = 0;
  std::vector<int> anchors_per_cell;  // face: per grid
};

// role -> unpacked output.
using Outputs = std::map<std::string, Mat>;

// MoveNet (pose_movenet.cpp): roles center [1,h,w], heatmap [17,h,w], regress and
// offset [34,h,w].
Status decode_movenet(const Outputs& out, const DecodeParams& p, Decoded* d);
// BlazeFace (face_blazeface.cpp): roles scores.0, scores.1, ... ([n,1]) and boxes.0,
// boxes.1, ... ([n,16]), one pair per anchor grid.
Status decode_blazeface(const Outputs& out, const DecodeParams& p, Decoded* d);
// CenterNet (objects_centernet.cpp): roles heatmap [classes,h,w], wh [4,h,w].
Status decode_centernet(const Outputs& out, const DecodeParams& p, Decoded* d);

// Intersection over union of two boxes (0 when either is empty), in double.
double iou(const Box& a, const Box& b);
// Hard NMS as TF's non_max_suppression: candidates with score > score_threshold by
// descending score (ties: lower index first); one is dropped when its IoU with a kept
// box is >= iou_threshold; at most max_keep kept. Returns indices in selection order.
std::vector<size_t> non_max_suppression(const std::vector<Box>& boxes, const std::vector<float>& scores,
                                        float score_threshold, float iou_threshold, size_t max_keep);

}  // namespace kestrel::tasks
