// MoveNet single-pose decoding: the arithmetic of the post-processing inside MoveNet's
// own TF graph (StatefulPartitionedCall/... in the TF.js model), step for step:
//   1. the person centre: the first maximum of the centre heatmap, which the graph
//      already weighted towards the image centre (truediv_2);
//   2. each keypoint's regressed position: centre + regress[2k] (y), [2k+1] (x);
//   3. each keypoint's cell: the first maximum of heatmap_k / (distance to the
//      regressed position + 1.8);
//   4. position = (cell + offset) / grid, score = heatmap_k at the cell.
// The graph stores its constants as fp16: 1/48 is 0.0208282470703125 and 1.8 is
// 1.7998046875; the same rounding is applied here so that results agree to the bit.
#include <cmath>

#include "core/half.h"
#include "tasks/task_decoders.h"

namespace kestrel::tasks {
namespace {

constexpr int kKeypoints = 17;
constexpr float kDistanceBias = 1.8f;

float fp16(float v) { return half_to_float(float_to_half(v)); }

}  // namespace

Status decode_movenet(const Outputs& out, const DecodeParams& p, Decoded* d) {
  const Mat& center = out.at("center");
  const Mat& heat = out.at("heatmap");
  const Mat& reg = out.at("regress");
  const Mat& off = out.at("offset");
  const int H = heat.h, W = heat.w;
  if (heat.dims != 3 || heat.c != kKeypoints || center.dims != 3 || center.c != 1 || center.h != H ||
      center.w != W || reg.dims != 3 || reg.c != 2 * kKeypoints || reg.h != H || reg.w != W || off.dims != 3 ||
      off.c != 2 * kKeypoints || off.h != H || off.w != W || H < 1 || W < 1) {
    return Status(ErrorCode::kInvalidArgument,
                  "MoveNet outputs must be center [1,h,w], heatmap [17,h,w], regress and offset [34,h,w] of one grid");
  }
  // 1. Centre: the first maximum in row-major order.
  const float* c = center.channel(0);
  int best = 0;
  for (int i = 1; i < H * W; ++i) {
    if (c[i] > c[best]) best = i;
  }
  const int cy = best / W, cx = best % W;
  const float bias = fp16(kDistanceBias);
  const float scale_y = fp16(1.f / static_cast<float>(H)), scale_x = fp16(1.f / static_cast<float>(W));
  Pose pose;
  pose.keypoints.resize(kKeypoints);
  float total = 0.f;
  for (int k = 0; k < kKeypoints; ++k) {
    // 2. Regressed position, in cells.
    const float ry = static_cast<float>(cy) + reg.channel(2 * k)[best];
    const float rx = static_cast<float>(cx) + reg.channel(2 * k + 1)[best];
    // 3. Distance-weighted heatmap maximum. The graph's SquaredDifference rounds once
    // from double (TF.js computes it in double); so does this.
    const float* hk = heat.channel(k);
    int kbest = 0;
    float kval = -INFINITY;
    for (int y = 0; y < H; ++y) {
      const double dy = static_cast<double>(y) - static_cast<double>(ry);
      const float dy2 = static_cast<float>(dy * dy);
      for (int x = 0; x < W; ++x) {
        const double dx = static_cast<double>(x) - static_cast<double>(rx);
        const float dist = std::sqrt(dy2 + static_cast<float>(dx * dx));
        const float v = hk[y * W + x] / (dist + bias);
        if (v > kval) kval = v, kbest = y * W + x;
      }
    }
    const int ky = kbest / W, kx = kbest % W;
    // 4. Offset refinement and the grid's scale; the score is the plain heatmap.
    const float Y = (static_cast<float>(ky) + off.channel(2 * k)[kbest]) * scale_y;
    const float X = (static_cast<float>(kx) + off.channel(2 * k + 1)[kbest]) * scale_x;
    Keypoint& kp = pose.keypoints[static_cast<size_t>(k)];
    kp.x = X * static_cast<float>(p.input_w);
    kp.y = Y * static_cast<float>(p.input_h);
    kp.score = hk[kbest];
    total += kp.score;
  }
  pose.score = total / kKeypoints;
  d->poses.push_back(std::move(pose));
  return Status::Ok();
}

}  // namespace kestrel::tasks
