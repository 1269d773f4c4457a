// kestrel/image.h: resizing against a plain reference, colour conversion, mean/norm,
// file round trips, error paths and clipped drawing.
#include <cfloat>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "kestrel/image.h"
#include "test_util.h"

using kestrel::Color;
using kestrel::ErrorCode;
using kestrel::Image;
using kestrel::Mat;
using kestrel::PixelType;

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("kestrel_image_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::vector<uint8_t> random_pixels(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng() & 0xff);
  return v;
}

Image random_image(int w, int h, int c, uint32_t seed) {
  Image img;
  img.w = w;
  img.h = h;
  img.channels = c;
  img.pixels = random_pixels(size_t(w) * h * c, seed);
  return img;
}

// Textbook bilinear with half-pixel centres and edge replication, in double: the
// source coordinate of output x is (x + 0.5) * src / dst - 0.5, clamped to the image.
double reference_sample(const std::vector<uint8_t>& px, int w, int h, int cn, int ch, int tw, int th, int x, int y) {
  const auto coord = [](int d, int src, int dst, int* i0, int* i1, double* a) {
    double s = (d + 0.5) * src / dst - 0.5;
    s = std::min(std::max(s, 0.0), double(src - 1));
    *i0 = int(std::floor(s));
    *i1 = std::min(*i0 + 1, src - 1);
    *a = s - *i0;
  };
  int x0, x1, y0, y1;
  double ax, ay;
  coord(x, w, tw, &x0, &x1, &ax);
  coord(y, h, th, &y0, &y1, &ay);
  const auto at = [&](int xx, int yy) { return double(px[(size_t(yy) * w + xx) * cn + ch]); };
  return (1 - ay) * ((1 - ax) * at(x0, y0) + ax * at(x1, y0)) + ay * ((1 - ax) * at(x0, y1) + ax * at(x1, y1));
}

float at(const Mat& m, int c, int x, int y) { return m.channel(c)[size_t(y) * m.w + x]; }

size_t count_differences(const Image& a, const Image& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) n += a.pixels[i] != b.pixels[i];
  return n;
}

}  // namespace

TEST_SUITE("image") {
  TEST_CASE("bilinear resize matches a plain half-pixel-centre reference") {
    const int sizes[][4] = {{7, 5, 7, 5},   {7, 5, 14, 10}, {16, 12, 8, 6}, {13, 11, 5, 9},
                            {3, 2, 17, 19}, {1, 1, 4, 3},   {9, 1, 4, 1},   {640, 480, 224, 224},
                            {5, 5, 1, 1},   {100, 3, 7, 30}};
    for (const auto& s : sizes) {
      const int w = s[0], h = s[1], tw = s[2], th = s[3];
      const std::vector<uint8_t> px = random_pixels(size_t(w) * h * 3, uint32_t(w * 31 + h));
      Mat m;
      REQUIRE(kestrel::from_pixels_resize(px.data(), PixelType::kRGB, w, h, 0, PixelType::kRGB, tw, th, &m).ok());
      REQUIRE(m.w == tw);
      REQUIRE(m.h == th);
      REQUIRE(m.c == 3);
      double worst = 0;
      for (int c = 0; c < 3; ++c) {
        for (int y = 0; y < th; ++y) {
          for (int x = 0; x < tw; ++x) {
            worst = std::max(worst, std::abs(at(m, c, x, y) - reference_sample(px, w, h, 3, c, tw, th, x, y)));
          }
        }
      }
      INFO(w << "x" << h << " -> " << tw << "x" << th);
      // Source coordinates are rounded to float as OpenCV does: the weights carry a
      // relative error of FLT_EPSILON at the coordinate's magnitude.
      CHECK(worst < 1e-3 + 255.0 * std::max(w, h) * FLT_EPSILON);
    }
  }

  TEST_CASE("same size is exact and row padding is never read") {
    const int w = 11, h = 6, stride = 11 * 3 + 5;
    std::vector<uint8_t> padded(size_t(stride) * h, 0xEE);
    const std::vector<uint8_t> px = random_pixels(size_t(w) * h * 3, 3);
    for (int y = 0; y < h; ++y) std::copy_n(&px[size_t(y) * w * 3], w * 3, &padded[size_t(y) * stride]);
    Mat a, b;
    REQUIRE(kestrel::from_pixels(px.data(), PixelType::kBGR, w, h, 0, PixelType::kBGR, &a).ok());
    REQUIRE(kestrel::from_pixels(padded.data(), PixelType::kBGR, w, h, stride, PixelType::kBGR, &b).ok());
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          CHECK(at(a, c, x, y) == float(px[(size_t(y) * w + x) * 3 + c]));
          CHECK(at(b, c, x, y) == at(a, c, x, y));
        }
      }
    }
    // Upscaling from padded rows equals upscaling from packed ones.
    REQUIRE(kestrel::from_pixels_resize(px.data(), PixelType::kBGR, w, h, 0, PixelType::kBGR, 23, 13, &a).ok());
    REQUIRE(kestrel::from_pixels_resize(padded.data(), PixelType::kBGR, w, h, stride, PixelType::kBGR, 23, 13, &b).ok());
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 23 * 13; ++i) CHECK(a.channel(c)[i] == b.channel(c)[i]);
    }
  }

  TEST_CASE("colour conversions") {
    const uint8_t rgba[] = {10, 20, 30, 255, 200, 100, 50, 0};  // two RGBA pixels
    const uint8_t bgra[] = {30, 20, 10, 255, 50, 100, 200, 0};
    const uint8_t gray[] = {7, 250};
    Mat m;
    const auto check = [&](const uint8_t* px, PixelType src, PixelType dst, std::vector<std::vector<float>> want) {
      REQUIRE(kestrel::from_pixels(px, src, 2, 1, 0, dst, &m).ok());
      REQUIRE(size_t(m.c) == want.size());
      for (int c = 0; c < m.c; ++c) {
        CHECK(m.channel(c)[0] == doctest::Approx(want[c][0]).epsilon(1e-6));
        CHECK(m.channel(c)[1] == doctest::Approx(want[c][1]).epsilon(1e-6));
      }
    };
    check(rgba, PixelType::kRGBA, PixelType::kRGB, {{10, 200}, {20, 100}, {30, 50}});
    check(rgba, PixelType::kRGBA, PixelType::kBGR, {{30, 50}, {20, 100}, {10, 200}});
    check(bgra, PixelType::kBGRA, PixelType::kRGB, {{10, 200}, {20, 100}, {30, 50}});
    check(bgra, PixelType::kBGRA, PixelType::kBGRA, {{30, 50}, {20, 100}, {10, 200}});
    const uint8_t rgb[] = {10, 20, 30, 200, 100, 50};
    const uint8_t bgr[] = {30, 20, 10, 50, 100, 200};
    check(rgb, PixelType::kRGB, PixelType::kBGR, {{30, 50}, {20, 100}, {10, 200}});
    check(bgr, PixelType::kBGR, PixelType::kRGB, {{10, 200}, {20, 100}, {30, 50}});
    const float y0 = 0.299f * 10 + 0.587f * 20 + 0.114f * 30, y1 = 0.299f * 200 + 0.587f * 100 + 0.114f * 50;
    check(rgb, PixelType::kRGB, PixelType::kGray, {{y0, y1}});
    check(bgr, PixelType::kBGR, PixelType::kGray, {{y0, y1}});
    check(bgra, PixelType::kBGRA, PixelType::kGray, {{y0, y1}});
    check(gray, PixelType::kGray, PixelType::kRGB, {{7, 250}, {7, 250}, {7, 250}});
    check(gray, PixelType::kGray, PixelType::kGray, {{7, 250}});
  }

  TEST_CASE("substract_mean_normalize") {
    const std::vector<uint8_t> px = random_pixels(5 * 4 * 3, 9);
    Mat m;
    REQUIRE(kestrel::from_pixels(px.data(), PixelType::kRGB, 5, 4, 0, PixelType::kRGB, &m).ok());
    const float mean[3] = {1.f, 2.f, 3.f}, norm[3] = {0.5f, 0.25f, 2.f};
    Mat a = m.clone(), b = m.clone(), c = m.clone(), d = m.clone();
    kestrel::substract_mean_normalize(a, mean, norm);
    kestrel::substract_mean_normalize(b, mean, nullptr);
    kestrel::substract_mean_normalize(c, nullptr, norm);
    kestrel::substract_mean_normalize(d, nullptr, nullptr);
    for (int q = 0; q < 3; ++q) {
      for (int i = 0; i < 20; ++i) {
        const float x = m.channel(q)[i];
        CHECK(a.channel(q)[i] == (x - mean[q]) * norm[q]);
        CHECK(b.channel(q)[i] == x - mean[q]);
        CHECK(c.channel(q)[i] == x * norm[q]);
        CHECK(d.channel(q)[i] == x);
      }
    }
    // Packed layout: channel q*4+lane of each element.
    Mat p8 = kt::random_mat(kestrel::Shape::make3(3, 2, 8), 4);
    float mean8[8], norm8[8];
    for (int i = 0; i < 8; ++i) {
      mean8[i] = float(i);
      norm8[i] = 1.f + i;
    }
    Mat packed = kestrel::convert_packing(p8, 4);
    REQUIRE(packed.elempack == 4);
    kestrel::substract_mean_normalize(packed, mean8, norm8);
    kestrel::substract_mean_normalize(p8, mean8, norm8);
    Mat back = kestrel::convert_packing(packed, 1);
    for (int q = 0; q < 8; ++q) {
      for (int i = 0; i < 6; ++i) CHECK(back.channel(q)[i] == p8.channel(q)[i]);
    }
    Mat empty;
    kestrel::substract_mean_normalize(empty, mean, norm);  // no-op, no crash
  }

  TEST_CASE("PNG, BMP and JPEG round trips") {
    ScratchDir dir;
    for (int c : {1, 3, 4}) {
      const Image img = random_image(37, 21, c, uint32_t(c));
      for (const char* ext : {"png", "BMP"}) {
        const std::string path = dir.file("rt" + std::to_string(c) + "." + ext);
        REQUIRE(kestrel::save_image(path, img).ok());
        Image back;
        const kestrel::Status s = kestrel::load_image(path, &back);
        REQUIRE_MESSAGE(s.ok(), s.message());
        CHECK(back.w == 37);
        CHECK(back.h == 21);
        if (c == 1 && ext[0] == 'B') {
          // stb writes gray BMPs as 24-bit RGB.
          REQUIRE(back.channels == 3);
          for (size_t i = 0; i < img.pixels.size(); ++i) {
            CHECK(back.pixels[3 * i] == img.pixels[i]);
            CHECK(back.pixels[3 * i + 2] == img.pixels[i]);
          }
          continue;
        }
        CHECK(back.channels == c);
        CHECK(back.pixels == img.pixels);
      }
    }
    // JPEG is lossy: same size, close values on a smooth image.
    Image smooth;
    smooth.w = 64;
    smooth.h = 48;
    smooth.channels = 3;
    for (int y = 0; y < 48; ++y) {
      for (int x = 0; x < 64; ++x) {
        smooth.pixels.insert(smooth.pixels.end(), {uint8_t(x * 4), uint8_t(y * 5), uint8_t(128)});
      }
    }
    REQUIRE(kestrel::save_image(dir.file("s.jpeg"), smooth).ok());
    Image back;
    REQUIRE(kestrel::load_image(dir.file("s.jpeg"), &back).ok());
    REQUIRE(back.pixels.size() == smooth.pixels.size());
    double err = 0;
    for (size_t i = 0; i < back.pixels.size(); ++i) err += std::abs(int(back.pixels[i]) - int(smooth.pixels[i]));
    CHECK(err / back.pixels.size() < 3.0);
  }

  TEST_CASE("load_image errors name the file and the reason") {
    ScratchDir dir;
    Image img = random_image(2, 2, 3, 1);
    const Image before = img;
    kestrel::Status s = kestrel::load_image(dir.file("missing.png"), &img);
    CHECK(s.code() == ErrorCode::kNotFound);
    CHECK(s.message().find("missing.png") != std::string::npos);
    CHECK(img.pixels == before.pixels);

    std::ofstream(dir.file("notes.jpg")) << "this is text, not a JPEG\n";
    s = kestrel::load_image(dir.file("notes.jpg"), &img);
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(s.message().find("notes.jpg") != std::string::npos);
    CHECK(s.message().find("not a JPEG, PNG or BMP") != std::string::npos);

    std::ofstream(dir.file("empty.png")).close();
    CHECK(kestrel::load_image(dir.file("empty.png"), &img).code() == ErrorCode::kInvalidArgument);
    CHECK(kestrel::load_image(dir.path(), &img).code() == ErrorCode::kIoError);
    CHECK(kestrel::load_image(dir.file("x.png"), nullptr).code() == ErrorCode::kInvalidArgument);

    // A PNG cut short: an error, never a crash.
    REQUIRE(kestrel::save_image(dir.file("full.png"), random_image(40, 40, 3, 2)).ok());
    std::ifstream full(dir.file("full.png"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(full)), std::istreambuf_iterator<char>());
    for (size_t cut : {size_t(8), size_t(30), bytes.size() / 2}) {
      std::ofstream(dir.file("cut.png"), std::ios::binary) << bytes.substr(0, cut);
      CHECK(!kestrel::load_image(dir.file("cut.png"), &img).ok());
    }
    CHECK(img.pixels == before.pixels);
  }

  TEST_CASE("a truncated or oversized image names its format and what the decoder found") {
    ScratchDir dir;
    const auto read_all = [](const std::string& path) {
      std::ifstream f(path, std::ios::binary);
      return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    };
    const auto write = [](const std::string& path, const std::string& bytes) {
      std::ofstream(path, std::ios::binary) << bytes;
    };
    Image img;
    REQUIRE(kestrel::save_image(dir.file("full.jpg"), random_image(64, 40, 3, 9)).ok());
    const std::string jpeg = read_all(dir.file("full.jpg"));
    REQUIRE(jpeg.size() > 200);
    // An EXIF-style APP1 segment holding a thumbnail's end marker (ff d9) goes first:
    // a cut in the main image's scan data must still count as truncated.
    const std::string app1 = std::string("\xff\xe1\x00\x08Exif\xff\xd9", 10);
    const std::string exif = jpeg.substr(0, 2) + app1 + jpeg.substr(2);
    write(dir.file("exif.jpg"), exif);
    REQUIRE(kestrel::load_image(dir.file("exif.jpg"), &img).ok());
    for (const std::string* full : {&jpeg, &exif}) {
      // In the markers, in the tables, in the scan data, just before the end marker.
      for (size_t cut : {size_t(4), size_t(30), size_t(150), full->size() / 2, full->size() - 2}) {
        CAPTURE(cut);
        write(dir.file("cut.jpg"), full->substr(0, cut));
        const kestrel::Status s = kestrel::load_image(dir.file("cut.jpg"), &img);
        CHECK(s.code() == ErrorCode::kInvalidArgument);
        CHECK_MESSAGE(s.message().find("cut.jpg: JPEG image") != std::string::npos, s.message());
        CHECK_MESSAGE(s.message().find("is truncated: the file ends after " + std::to_string(cut) + " bytes") !=
                          std::string::npos,
                      s.message());
      }
    }
    // Bytes after the end marker are not a truncation.
    write(dir.file("tail.jpg"), jpeg + "trailing bytes");
    CHECK(kestrel::load_image(dir.file("tail.jpg"), &img).ok());

    // A PNG whose header claims 100000 x 100000 pixels (stb does not check CRCs).
    std::string png("\x89PNG\r\n\x1a\n", 8);
    const auto be32 = [](uint32_t v) {
      return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    };
    png += be32(13) + "IHDR" + be32(100000) + be32(100000) + std::string("\x08\x02\x00\x00\x00", 5) + be32(0);
    for (bool complete : {false, true}) {
      const std::string bytes = complete ? png + be32(0) + "IEND" + be32(0) : png;
      write(dir.file("huge.png"), bytes);
      const kestrel::Status s = kestrel::load_image(dir.file("huge.png"), &img);
      CHECK(s.code() == ErrorCode::kInvalidArgument);
      CHECK_MESSAGE(s.message().find("huge.png: PNG image of 100000x100000 pixels is too large to decode") !=
                        std::string::npos,
                    s.message());
    }
    // A PNG cut inside its data, and a BMP shorter than its header declares.
    REQUIRE(kestrel::save_image(dir.file("full.png"), random_image(40, 40, 3, 2)).ok());
    const std::string full_png = read_all(dir.file("full.png"));
    write(dir.file("cut.png"), full_png.substr(0, full_png.size() - 20));
    kestrel::Status s = kestrel::load_image(dir.file("cut.png"), &img);
    CHECK_MESSAGE(s.message().find("cut.png: PNG image of 40x40 pixels is truncated") != std::string::npos,
                  s.message());
    REQUIRE(kestrel::save_image(dir.file("full.bmp"), random_image(9, 7, 3, 4)).ok());
    const std::string bmp = read_all(dir.file("full.bmp"));
    write(dir.file("cut.bmp"), bmp.substr(0, bmp.size() - 30));
    s = kestrel::load_image(dir.file("cut.bmp"), &img);
    CHECK_MESSAGE(s.message().find("cut.bmp: BMP image of 9x7 pixels is truncated") != std::string::npos,
                  s.message());
    // No signature at all, and an empty file.
    write(dir.file("empty.jpg"), "");
    s = kestrel::load_image(dir.file("empty.jpg"), &img);
    CHECK_MESSAGE(s.message().find("not a JPEG, PNG or BMP image (the file is empty)") != std::string::npos,
                  s.message());
  }

  TEST_CASE("save_image and from_pixels_resize reject bad arguments") {
    ScratchDir dir;
    const Image img = random_image(4, 3, 3, 5);
    CHECK(kestrel::save_image(dir.file("x.gif"), img).code() == ErrorCode::kInvalidArgument);
    CHECK(kestrel::save_image(dir.file("no_dir/x.png"), img).code() == ErrorCode::kIoError);
    Image bad = img;
    bad.pixels.pop_back();
    CHECK(kestrel::save_image(dir.file("x.png"), bad).code() == ErrorCode::kInvalidArgument);
    CHECK(kestrel::save_image(dir.file("x.png"), Image()).code() == ErrorCode::kInvalidArgument);

    const uint8_t* px = img.pixels.data();
    Mat m = kt::random_mat(kestrel::Shape::make3(2, 2, 1), 1);
    const float* before = m.data;
    const auto code = [&](const uint8_t* p, int w, int h, int stride, int tw, int th, Mat* out) {
      return kestrel::from_pixels_resize(p, PixelType::kRGB, w, h, stride, PixelType::kBGR, tw, th, out).code();
    };
    CHECK(code(px, 0, 3, 0, 2, 2, &m) == ErrorCode::kInvalidArgument);
    CHECK(code(px, 4, 0, 0, 2, 2, &m) == ErrorCode::kInvalidArgument);
    CHECK(code(px, -4, 3, 0, 2, 2, &m) == ErrorCode::kInvalidArgument);
    CHECK(code(px, 4, 3, 0, 0, 2, &m) == ErrorCode::kInvalidArgument);
    CHECK(code(px, 4, 3, 0, 2, -1, &m) == ErrorCode::kInvalidArgument);
    CHECK(code(nullptr, 4, 3, 0, 2, 2, &m) == ErrorCode::kInvalidArgument);
    CHECK(code(px, 4, 3, 0, 2, 2, nullptr) == ErrorCode::kInvalidArgument);
    CHECK(code(px, 4, 3, 11, 2, 2, &m) == ErrorCode::kInvalidArgument);  // stride < 12 bytes
    CHECK(code(px, 4, 3, -12, 2, 2, &m) == ErrorCode::kInvalidArgument);
    const ErrorCode huge = code(px, 4, 3, 0, INT_MAX, INT_MAX, &m);
    CHECK((huge == ErrorCode::kInvalidArgument || huge == ErrorCode::kOutOfMemory));
    CHECK(m.data == before);  // untouched on failure
    CHECK(kestrel::from_pixels_resize(px, static_cast<PixelType>(42), 4, 3, 0, PixelType::kRGB, 2, 2, &m).code() ==
          ErrorCode::kInvalidArgument);
    CHECK(kestrel::from_image_resize(bad, PixelType::kRGB, 2, 2, &m).code() == ErrorCode::kInvalidArgument);
  }

  TEST_CASE("rectangles are clipped to the image") {
    Image img;
    img.w = 10;
    img.h = 8;
    img.channels = 3;
    img.pixels.assign(10 * 8 * 3, 0);
    const Color red{255, 0, 0};
    kestrel::draw_rectangle(img, -5, -5, 3, 3, red, 1);
    const auto is_red = [&](int x, int y) {
      const uint8_t* p = &img.pixels[(size_t(y) * 10 + x) * 3];
      return p[0] == 255 && p[1] == 0 && p[2] == 0;
    };
    size_t lit = 0;
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 10; ++x) {
        const bool edge = (x == 3 && y <= 3) || (y == 3 && x <= 3);
        CHECK(is_red(x, y) == edge);
        lit += is_red(x, y);
      }
    }
    CHECK(lit == 7);
    // Corners given in reverse order, filled.
    Image filled = img;
    kestrel::draw_rectangle(filled, 9, 7, 8, 6, Color{0, 0, 255}, 0);
    CHECK(count_differences(filled, img) == 4);
    // Anything, anywhere: no write outside, no overflow.
    const Image copy = img;
    kestrel::draw_rectangle(img, 20, 20, 30, 30, red, 3);
    kestrel::draw_rectangle(img, -30, -30, -20, -20, red, 3);
    CHECK(count_differences(img, copy) == 0);
    kestrel::draw_rectangle(img, INT_MIN, INT_MIN, INT_MAX, INT_MAX, red, INT_MAX);
    kestrel::draw_rectangle(img, INT_MAX, INT_MAX, INT_MIN, INT_MIN, red, 1);
    kestrel::draw_rectangle(img, 0, 0, 9, 7, red, -1);
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 10; ++x) CHECK(is_red(x, y));
    }
    CHECK(img.pixels.size() == 10 * 8 * 3);
    // Gray images get the luma; RGBA an opaque colour; inconsistent images are left alone.
    Image g = random_image(4, 4, 1, 2), rgba = random_image(4, 4, 4, 3);
    kestrel::draw_rectangle(g, 0, 0, 3, 3, Color{255, 0, 0}, 0);
    CHECK(g.pixels[5] == 76);
    kestrel::draw_rectangle(rgba, 0, 0, 3, 3, Color{1, 2, 3}, 0);
    CHECK(rgba.pixels[20] == 1);
    CHECK(rgba.pixels[23] == 255);
    Image broken = random_image(4, 4, 3, 4);
    broken.pixels.resize(7);
    kestrel::draw_rectangle(broken, 0, 0, 3, 3, red, 0);
    kestrel::draw_text(broken, 0, 0, "x", red, 1);
    CHECK(broken.pixels.size() == 7);
  }

  TEST_CASE("text is drawn, sized and clipped") {
    Image img;
    img.w = 40;
    img.h = 20;
    img.channels = 3;
    img.pixels.assign(40 * 20 * 3, 0);
    const Image blank = img;
    int tw = 0, th = 0;
    kestrel::text_size("Ab", 1, &tw, &th);
    CHECK(tw > 0);
    CHECK(th > 0);
    int tw2 = 0, th2 = 0;
    kestrel::text_size("Ab", 2, &tw2, &th2);
    CHECK(tw2 == 2 * tw);
    CHECK(th2 == 2 * th);
    kestrel::draw_text(img, 1, 1, "Ab", Color{255, 255, 255}, 1);
    const size_t lit = count_differences(img, blank);
    CHECK(lit > 10);
    // Nothing lands outside the text's box.
    for (int y = 0; y < 20; ++y) {
      for (int x = 0; x < 40; ++x) {
        if (img.pixels[(size_t(y) * 40 + x) * 3] != 0) {
          CHECK(x >= 1);
          CHECK(x < 1 + tw);
          CHECK(y >= 1);
          CHECK(y < 1 + th + 2);  // descenders sit below the nominal height
        }
      }
    }
    // Partly or wholly outside, huge scale, control and non-ASCII bytes: clipped, no crash.
    Image edge = blank;
    kestrel::draw_text(edge, -3, -4, "Hello\nworld \x01\xff\xc3\xa9", Color{9, 9, 9}, 3);
    kestrel::draw_text(edge, 35, 15, "edge", Color{9, 9, 9}, 1);
    kestrel::draw_text(edge, INT_MAX, INT_MIN, "far", Color{9, 9, 9}, INT_MAX);
    kestrel::draw_text(edge, 0, 0, std::string(10000, 'W'), Color{9, 9, 9}, 1);
    kestrel::draw_text(edge, 0, 0, "", Color{9, 9, 9}, 1);
    CHECK(edge.pixels.size() == blank.pixels.size());
    CHECK(count_differences(edge, blank) > 0);
  }
}
