// CenterNet decoding, the arithmetic of the post-processing in the TF.js CenterNet
// graph (tower_0/...): a heatmap cell is a peak when it equals the maximum of its 3x3
// neighbourhood (cells outside the map ignored); peaks are ranked by score, ties by
// their index (y * w + x) * classes + class; a peak's box extends from the cell's
// input position (x * stride, y * stride) by the wh output's left, top, right and bottom
// distances (input pixels). Class-agnostic NMS then keeps the best boxes.
#include <algorithm>

#include "tasks/task_decoders.h"

namespace kestrel::tasks {

Status decode_centernet(const Outputs& out, const DecodeParams& p, Decoded* d) {
  const Mat& heat = out.at("heatmap");
  const Mat& wh = out.at("wh");
  const int C = heat.c, H = heat.h, W = heat.w;
  if (heat.dims != 3 || wh.dims != 3 || wh.c != 4 || wh.h != H || wh.w != W || C < 1 || H < 1 || W < 1) {
    return Status(ErrorCode::kInvalidArgument, "CenterNet outputs must be heatmap [classes,h,w] and wh [4,h,w]");
  }
  const float stride_x = static_cast<float>(p.input_w) / static_cast<float>(W);
  const float stride_y = static_cast<float>(p.input_h) / static_cast<float>(H);
  struct Peak {
    float score;
    size_t index;  // the graph's flat index (y * W + x) * C + c
  };
  std::vector<Peak> peaks;
  for (int c = 0; c < C; ++c) {
    const float* m = heat.channel(c);
    for (int y = 0; y < H; ++y) {
      for (int x = 0; x < W; ++x) {
        const float v = m[y * W + x];
        if (!(v > p.score_threshold)) continue;
        bool peak = true;
        for (int yy = std::max(y - 1, 0); yy <= std::min(y + 1, H - 1) && peak; ++yy) {
          for (int xx = std::max(x - 1, 0); xx <= std::min(x + 1, W - 1); ++xx) {
            if (m[yy * W + xx] > v) peak = false;
          }
        }
        if (peak) peaks.push_back(Peak{v, (static_cast<size_t>(y) * W + x) * C + c});
      }
    }
  }
  std::sort(peaks.begin(), peaks.end(),
            [](const Peak& a, const Peak& b) { return a.score > b.score || (a.score == b.score && a.index < b.index); });
  std::vector<Box> boxes;
  std::vector<float> scores;
  std::vector<int> labels;
  for (const Peak& pk : peaks) {
    const int c = static_cast<int>(pk.index % C);
    const int cell = static_cast<int>(pk.index / C);
    const int y = cell / W, x = cell % W;
    const float X = static_cast<float>(x) * stride_x, Y = static_cast<float>(y) * stride_y;
    boxes.push_back(Box{X - wh.channel(0)[cell], Y - wh.channel(1)[cell], X + wh.channel(2)[cell],
                        Y + wh.channel(3)[cell]});
    scores.push_back(pk.score);
    labels.push_back(c);
  }
  for (size_t i : non_max_suppression(boxes, scores, p.score_threshold, p.iou_threshold,
                                      static_cast<size_t>(p.max_results))) {
    Detection det;
    det.box = boxes[i];
    det.score = scores[i];
    det.label = labels[i];
    d->objects.push_back(std::move(det));
  }
  return Status::Ok();
}

}  // namespace kestrel::tasks
