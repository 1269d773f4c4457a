// The task API (kestrel/tasks.h): each decoder on hand-made outputs whose answer is
// known, the NMS and peak rules (ties, thresholds), the mapping back to image pixels
// (letterbox, region of interest), and Task::init's messages for missing or wrong
// metadata. The decoders' agreement with the real models' own post-processing in
// TF.js is tests/tfjs/compare_tfjs.py's.
#include <cmath>

#include "kestrel/tasks.h"
#include "tasks/task_decoders.h"
#include "test_util.h"

namespace {

using kestrel::Box;
using kestrel::Mat;
using kestrel::Shape;

Mat zeros(int c, int h, int w) {
  Mat m;
  REQUIRE(m.create(c == 0 ? Shape::make2(w, h) : Shape::make3(w, h, c)));
  std::fill(m.data, m.data + m.total(), 0.f);
  return m;
}

// A net whose outputs have the shapes a task reads (convolutions of the input), with
// the task's metadata; `skip` leaves one metadata key out.
kestrel::ModelBuilder pose_net(const std::string& skip = "") {
  kestrel::ModelBuilder b;
  b.add_input("x", {3, 12, 12});
  kt::add_conv(b, "center", "x", 3, 1);
  kt::add_conv(b, "heat", "x", 3, 17);
  kt::add_conv(b, "reg", "x", 3, 34);
  kt::add_conv(b, "off", "x", 3, 34);
  for (const char* o : {"center", "heat", "reg", "off"}) b.add_output(o);
  const std::pair<const char*, const char*> meta[] = {{"task", "pose"},       {"task.center", "center"},
                                                      {"task.heatmap", "heat"}, {"task.regress", "reg"},
                                                      {"task.offset", "off"},  {"channel_order", "rgb"}};
  for (const auto& [k, v] : meta) {
    if (skip != k) b.set_metadata(k, v);
  }
  return b;
}

void expect_error(const kestrel::Status& s, kestrel::ErrorCode code, const std::string& words) {
  CHECK(s.code() == code);
  CHECK_MESSAGE(s.message().find(words) != std::string::npos, "message: " << s.message());
}

kestrel::Image gradient_image(int w, int h) {
  kestrel::Image img;
  img.w = w, img.h = h, img.channels = 3;
  img.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i * 7 % 251);
  return img;
}

}  // namespace

TEST_SUITE("tasks") {
  TEST_CASE("non_max_suppression: score order, lower index first on ties, IoU >= threshold drops") {
    const std::vector<Box> boxes = {{0, 0, 10, 10}, {1, 1, 11, 11}, {0, 0, 10, 10}, {50, 50, 60, 60}, {0, 0, 4, 4}};
    const std::vector<float> scores = {0.8f, 0.9f, 0.8f, 0.5f, 0.5f};
    using kestrel::tasks::non_max_suppression;
    // 1 wins; 0 and 2 overlap it (IoU 0.68); 3 is apart; 4 overlaps 1 by 0.09.
    CHECK(non_max_suppression(boxes, scores, 0.f, 0.5f, 10) == std::vector<size_t>{1, 3, 4});
    CHECK(non_max_suppression(boxes, scores, 0.f, 1.1f, 10) == std::vector<size_t>{1, 0, 2, 3, 4});
    CHECK(non_max_suppression(boxes, scores, 0.5f, 1.1f, 10) == std::vector<size_t>{1, 0, 2});  // > threshold
    CHECK(non_max_suppression(boxes, scores, 0.f, 1.1f, 2) == std::vector<size_t>{1, 0});
    // Identical boxes have IoU 1, which a threshold of 1 drops.
    CHECK(non_max_suppression({{0, 0, 2, 2}, {0, 0, 2, 2}}, {0.5f, 0.5f}, 0.f, 1.f, 10) == std::vector<size_t>{0});
    CHECK(kestrel::tasks::iou({0, 0, 0, 5}, {0, 0, 0, 5}) == 0.0);  // empty boxes never overlap
  }

  TEST_CASE("CenterNet: 3x3 peaks (plateaus kept, borders included), ranked by score then index") {
    Mat heat = zeros(2, 6, 8), wh = zeros(4, 6, 8);
    heat.channel(0)[1 * 8 + 2] = 0.9f;  // a peak
    heat.channel(0)[1 * 8 + 3] = 0.5f;  // its neighbour: no peak
    heat.channel(1)[5 * 8 + 7] = 0.7f;  // a peak in the corner
    heat.channel(1)[0 * 8 + 0] = 0.7f;  // a peak of the same score at a lower index
    heat.channel(0)[4 * 8 + 4] = heat.channel(0)[4 * 8 + 5] = 0.6f;  // a plateau: both kept
    for (int k = 0; k < 4; ++k) std::fill(wh.channel(k), wh.channel(k) + 48, 1.f + static_cast<float>(k));
    // The plateau's boxes reach further, so that they overlap.
    for (int k = 0; k < 4; ++k) wh.channel(k)[4 * 8 + 4] = wh.channel(k)[4 * 8 + 5] = 4.f;
    kestrel::tasks::DecodeParams p;
    p.input_w = 32, p.input_h = 24;  // stride 4
    p.score_threshold = 0.1f, p.iou_threshold = 2.f, p.max_results = 100;
    kestrel::tasks::Decoded d;
    REQUIRE(kestrel::tasks::decode_centernet({{"heatmap", heat}, {"wh", wh}}, p, &d).ok());
    REQUIRE(d.objects.size() == 5);
    CHECK(d.objects[0].score == 0.9f);
    CHECK(d.objects[0].label == 0);
    CHECK(d.objects[0].box.x0 == 2 * 4 - 1.f);
    CHECK(d.objects[0].box.y0 == 1 * 4 - 2.f);
    CHECK(d.objects[0].box.x1 == 2 * 4 + 3.f);
    CHECK(d.objects[0].box.y1 == 1 * 4 + 4.f);
    CHECK(d.objects[1].label == 1);  // (0,0): index 1 comes before (5,7)'s
    CHECK(d.objects[1].box.x0 == -1.f);
    CHECK(d.objects[2].label == 1);
    CHECK(d.objects[2].box.x0 == 7 * 4 - 1.f);
    CHECK(d.objects[3].score == 0.6f);
    CHECK(d.objects[4].score == 0.6f);
    CHECK(d.objects[3].box.x0 < d.objects[4].box.x0);
    // NMS at IoU 0.2 drops the plateau's second box (IoU 0.33 with the first, its
    // neighbour); at 0 every box but the best (an IoU of 0 is >= 0).
    p.iou_threshold = 0.2f;
    kestrel::tasks::Decoded nms;
    REQUIRE(kestrel::tasks::decode_centernet({{"heatmap", heat}, {"wh", wh}}, p, &nms).ok());
    CHECK(nms.objects.size() == 4);
    p.iou_threshold = 0.f;
    kestrel::tasks::Decoded best;  // (decoders append)
    REQUIRE(kestrel::tasks::decode_centernet({{"heatmap", heat}, {"wh", wh}}, p, &best).ok());
    CHECK(best.objects.size() == 1);
    p.iou_threshold = 2.f;
    // Shapes that do not fit are an error, not a crash.
    CHECK_FALSE(kestrel::tasks::decode_centernet({{"heatmap", heat}, {"wh", zeros(3, 6, 8)}}, p, &d).ok());
  }

  TEST_CASE("MoveNet: centre, regression, distance-weighted peak, offsets") {
    const int H = 8, W = 8;
    Mat center = zeros(1, H, W), heat = zeros(17, H, W), reg = zeros(34, H, W), off = zeros(34, H, W);
    center.channel(0)[3 * W + 4] = 0.9f;
    for (int k = 0; k < 17; ++k) {
      // The regression points at (3 + 2, 4 - 1); two equal heatmap peaks: the one
      // nearer the regressed point wins.
      reg.channel(2 * k)[3 * W + 4] = 2.f;
      reg.channel(2 * k + 1)[3 * W + 4] = -1.f;
      heat.channel(k)[5 * W + 3] = 0.8f;
      heat.channel(k)[0 * W + 7] = 0.8f;
      off.channel(2 * k)[5 * W + 3] = 0.25f;
      off.channel(2 * k + 1)[5 * W + 3] = -0.5f;
    }
    kestrel::tasks::DecodeParams p;
    p.input_w = p.input_h = 32;
    kestrel::tasks::Decoded d;
    REQUIRE(kestrel::tasks::decode_movenet({{"center", center}, {"heatmap", heat}, {"regress", reg}, {"offset", off}},
                                           p, &d).ok());
    REQUIRE(d.poses.size() == 1);
    REQUIRE(d.poses[0].keypoints.size() == 17);
    // (cell + offset) * fp16(1/8) * 32: 1/8 is exact in fp16.
    CHECK(d.poses[0].keypoints[5].y == doctest::Approx((5 + 0.25) / 8 * 32));
    CHECK(d.poses[0].keypoints[5].x == doctest::Approx((3 - 0.5) / 8 * 32));
    CHECK(d.poses[0].keypoints[5].score == 0.8f);
    CHECK(d.poses[0].score == doctest::Approx(0.8f));
  }

  TEST_CASE("BlazeFace: anchors per grid, box and landmarks from the anchor centre, sigmoid scores") {
    // Two grids for a 32x32 input: 4x4 cells x 2 anchors (stride 8), 2x2 x 6 (stride 16).
    Mat s0 = zeros(0, 32, 1), b0 = zeros(0, 32, 16), s1 = zeros(0, 24, 1), b1 = zeros(0, 24, 16);
    std::fill(s0.data, s0.data + 32, -10.f);
    std::fill(s1.data, s1.data + 24, -10.f);
    const int row = (2 * 4 + 1) * 2 + 1;  // cell (gy 2, gx 1), anchor 1 -> centre (12, 20)
    s0[row] = 2.f;
    float* r = b0.row(row);
    r[0] = 1.f, r[1] = -2.f, r[2] = 6.f, r[3] = 4.f;  // centre (13, 18), 6 x 4
    r[4] = 0.5f, r[5] = 0.25f;                        // landmark 0 at (12.5, 20.25)
    kestrel::tasks::DecodeParams p;
    p.input_w = p.input_h = 32;
    p.anchors_per_cell = {2, 6};
    p.score_threshold = 0.5f, p.iou_threshold = 0.3f, p.max_results = 10;
    kestrel::tasks::Decoded d;
    REQUIRE(kestrel::tasks::decode_blazeface({{"scores.0", s0}, {"boxes.0", b0}, {"scores.1", s1}, {"boxes.1", b1}}, p,
                                             &d).ok());
    REQUIRE(d.faces.size() == 1);
    CHECK(d.faces[0].score == doctest::Approx(1 / (1 + std::exp(-2.0))));
    CHECK(d.faces[0].box.x0 == 10.f);
    CHECK(d.faces[0].box.y0 == 16.f);
    CHECK(d.faces[0].box.x1 == 16.f);
    CHECK(d.faces[0].box.y1 == 20.f);
    REQUIRE(d.faces[0].landmarks.size() == 6);
    CHECK(d.faces[0].landmarks[0].x == 12.5f);
    CHECK(d.faces[0].landmarks[0].y == 20.25f);
    // A grid whose rows do not make square cells of the anchors is an error.
    CHECK_FALSE(kestrel::tasks::decode_blazeface({{"scores.0", s0}, {"boxes.0", b0}, {"scores.1", zeros(0, 20, 1)},
                                                  {"boxes.1", zeros(0, 20, 16)}},
                                                 p, &d).ok());
  }

  TEST_CASE("Task::init names the metadata that is missing or wrong") {
    const std::pair<const char*, const char*> cases[] = {
        {"task", "task=''"}, {"task.center", "task.center is missing"}, {"task.offset", "task.offset is missing"}};
    for (const auto& c : cases) {
      const char* skip = c.first;
      const char* words = c.second;
      CAPTURE(skip);
      kestrel::Net net;
      REQUIRE(kt::load(net, pose_net(skip)).ok());
      kestrel::Task task;
      expect_error(task.init(net), kestrel::ErrorCode::kInvalidArgument, words);
      kestrel::TaskResult r;
      CHECK_FALSE(task.run(gradient_image(9, 7), &r).ok());  // unusable, not a crash
    }
    kestrel::ModelBuilder b = pose_net();
    b.set_metadata("task.heatmap", "x");
    kestrel::Net net;
    REQUIRE(kt::load(net, b).ok());
    kestrel::Task task;
    expect_error(task.init(net), kestrel::ErrorCode::kInvalidArgument, "'x' is not an output");
    b = pose_net();
    b.set_metadata("fit", "crop");
    REQUIRE(kt::load(net, b).ok());
    expect_error(task.init(net), kestrel::ErrorCode::kInvalidArgument, "fit='crop'");
  }

  TEST_CASE("Task::run maps results back through the letterbox and a region of interest") {
    kestrel::Net net;
    REQUIRE(kt::load(net, pose_net()).ok());
    kestrel::Task task;
    REQUIRE(task.init(net).ok());
    CHECK(task.name() == "pose");
    const kestrel::Image img = gradient_image(40, 20);
    kestrel::Extractor ex = net.create_extractor();
    kestrel::TaskResult whole, part;
    REQUIRE(task.run(ex, img, &whole).ok());
    const kestrel::Preprocess& p = whole.preprocess;
    CHECK(p.fit == kestrel::Preprocess::Fit::kLetterbox);
    CHECK(p.scale_x == doctest::Approx(12.f / 40));
    CHECK(p.pad_y == 3.f);  // 40x20 -> 12x6, centred in 12x12
    REQUIRE(whole.poses.size() == 1);
    // A region: the crop (clipped to whole pixels) is what the net sees.
    REQUIRE(task.run(ex, img, Box{10.5f, 4.f, 30.f, 14.f}, &part).ok());
    CHECK(part.preprocess.crop_x == 10.f);
    CHECK(part.preprocess.crop_y == 4.f);
    CHECK(part.preprocess.image_w == 40);
    CHECK(part.preprocess.scale_x == doctest::Approx(12.f / 20));
    // The same outputs decoded for a region further right land that much further right.
    std::map<std::string, Mat> outs;
    for (const auto& [role, blob] : task.roles()) REQUIRE(ex.extract(blob, outs[role]).ok());
    kestrel::Preprocess shifted = part.preprocess;
    shifted.crop_x += 7.f;
    kestrel::TaskResult a, b;
    REQUIRE(task.decode(outs, part.preprocess, &a).ok());
    REQUIRE(task.decode(outs, shifted, &b).ok());
    for (size_t k = 0; k < 17; ++k) {
      CHECK(b.poses[0].keypoints[k].x == doctest::Approx(a.poses[0].keypoints[k].x + 7.f));
      CHECK(b.poses[0].keypoints[k].y == a.poses[0].keypoints[k].y);
      CHECK(a.poses[0].keypoints[k].x == doctest::Approx(part.poses[0].keypoints[k].x));
    }
    expect_error(task.run(ex, img, Box{50.f, 0.f, 60.f, 10.f}, &part), kestrel::ErrorCode::kInvalidArgument,
                     "outside the image");
    // Decoding tensors from elsewhere: a missing role is an error naming it.
    kestrel::TaskResult r;
    expect_error(task.decode({}, whole.preprocess, &r), kestrel::ErrorCode::kInvalidArgument, "'center'");
  }
}
