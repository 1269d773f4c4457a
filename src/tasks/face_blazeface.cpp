// BlazeFace decoding (MediaPipe's face detector, as @vladmandic/human decodes the
// TF.js model): one anchor per row of the score and regressor outputs, the grids in
// order (the 16x16 grid with 2 anchors per cell, then 8x8 with 6, for 256x256). An
// anchor sits at a cell centre, (stride * (gx + 0.5), stride * (gy + 0.5)) in input
// pixels; the regressors are the box centre's offset from it, the box size, and six
// landmarks as offsets from the anchor, all in input pixels. Scores are sigmoids of the
// logits; hard NMS keeps the best boxes.
#include <cmath>

#include "tasks/task_decoders.h"

namespace kestrel::tasks {
namespace {

constexpr int kRegressors = 16;
constexpr int kLandmarks = 6;

}  // namespace

Status decode_blazeface(const Outputs& out, const DecodeParams& p, Decoded* d) {
  std::vector<Box> boxes;
  std::vector<float> scores;
  std::vector<std::vector<Keypoint>> marks;
  for (size_t g = 0; g < p.anchors_per_cell.size(); ++g) {
    const auto s_it = out.find("scores." + std::to_string(g)), b_it = out.find("boxes." + std::to_string(g));
    if (s_it == out.end() || b_it == out.end()) {
      return Status(ErrorCode::kInvalidArgument, "BlazeFace grid " + std::to_string(g) + " has no scores or boxes output");
    }
    const Mat& sc = s_it->second;
    const Mat& bx = b_it->second;
    const int rows = bx.dims == 2 ? bx.h : 0;
    const int per_cell = p.anchors_per_cell[g];
    const int cells = per_cell > 0 ? rows / per_cell : 0;
    const int grid = static_cast<int>(std::lround(std::sqrt(static_cast<double>(cells))));
    if (bx.dims != 2 || bx.w != kRegressors || sc.total() != static_cast<size_t>(rows) || rows < 1 ||
        grid * grid * per_cell != rows) {
      return Status(ErrorCode::kInvalidArgument,
                    "BlazeFace grid " + std::to_string(g) + ": boxes must be [n,16] and scores [n,1] with n = grid^2 * " +
                        std::to_string(per_cell) + " anchors");
    }
    const float stride_x = static_cast<float>(p.input_w) / static_cast<float>(grid);
    const float stride_y = static_cast<float>(p.input_h) / static_cast<float>(grid);
    for (int i = 0; i < rows; ++i) {
      const int cell = i / per_cell;
      const float ax = stride_x * (static_cast<float>(cell % grid) + 0.5f);
      const float ay = stride_y * (static_cast<float>(cell / grid) + 0.5f);
      const float* r = bx.row(i);
      const float cx = r[0] + ax, cy = r[1] + ay;
      boxes.push_back(Box{cx - r[2] / 2, cy - r[3] / 2, cx + r[2] / 2, cy + r[3] / 2});
      scores.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(sc[static_cast<size_t>(i)])))));
      std::vector<Keypoint> lm(kLandmarks);
      for (int k = 0; k < kLandmarks; ++k) lm[static_cast<size_t>(k)] = Keypoint{r[4 + 2 * k] + ax, r[5 + 2 * k] + ay, 0.f};
      marks.push_back(std::move(lm));
    }
  }
  for (size_t i : non_max_suppression(boxes, scores, p.score_threshold, p.iou_threshold,
                                      static_cast<size_t>(p.max_results))) {
    Face f;
    f.box = boxes[i];
    f.score = scores[i];
    f.landmarks = marks[i];
    for (Keypoint& k : f.landmarks) k.score = f.score;
    d->faces.push_back(std::move(f));
  }
  return Status::Ok();
}

}  // namespace kestrel::tasks
