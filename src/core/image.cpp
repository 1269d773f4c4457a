// Image decoding/encoding (Debian's libstb-dev), resizing, colour conversion and drawing.
#include "kestrel/image.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "core/image_probe.h"

// stb is compiled into this file only, with static linkage, so that a program that
// links libkestrel.a and has its own copy of stb gets no duplicate symbols. Only the
// formats Kestrel documents are decoded: less parser code exposed to untrusted files.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <stb/stb_easy_font.h>
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace kestrel {
namespace {

Status invalid(const std::string& why) { return Status(ErrorCode::kInvalidArgument, why); }
Status out_of_memory(const std::string& what) { return Status(ErrorCode::kOutOfMemory, what + ": out of memory"); }

bool consistent(const Image& img) {
  // w * h * 4 < 2^64 for any positive ints: no overflow.
  return img.w > 0 && img.h > 0 && img.channels >= 1 && img.channels <= 4 &&
         img.pixels.size() == static_cast<size_t>(img.w) * static_cast<size_t>(img.h) * img.channels;
}

// One output coordinate reads source indices i0 and i1 with weights 1 - a and a.
// OpenCV's INTER_LINEAR: centre-aligned; the source coordinate is rounded to float
// before its fraction is taken, as OpenCV does, so both sample the same positions;
// indices clamped to the edge (a coordinate left of 0 takes pixel 0 alone).
struct Axis {
  std::vector<int> i0, i1;
  std::vector<float> a;
};

Axis make_axis(int src, int dst) {
  Axis ax;
  ax.i0.resize(dst);
  ax.i1.resize(dst);
  ax.a.resize(dst);
  const double scale = static_cast<double>(src) / dst;
  for (int d = 0; d < dst; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    if (s < 0) {
      s = 0;
      f = 0.f;
    }
    if (s >= src - 1) {
      s = src - 1;
      f = 0.f;
    }
    ax.i0[d] = s;
    ax.i1[d] = std::min(s + 1, src - 1);
    ax.a[d] = f;
  }
  return ax;
}

// Where R, G, B sit in a pixel of type t (all 0 for gray).
void rgb_offsets(PixelType t, int* r, int* g, int* b) {
  const bool bgr = t == PixelType::kBGR || t == PixelType::kBGRA;
  const bool gray = t == PixelType::kGray;
  *r = gray ? 0 : bgr ? 2 : 0;
  *g = gray ? 0 : 1;
  *b = gray ? 0 : bgr ? 0 : 2;
}

// Output channel k = sum over source channels j of coef[k][j] * source[j]: swaps,
// alpha dropping, gray expansion and luma as one small matrix. Identity rows are
// exact in float (x * 1 + 0 = x).
struct ColorMatrix {
  int out_channels = 0;
  float coef[3][4] = {};
};

ColorMatrix color_matrix(PixelType src, PixelType dst) {
  ColorMatrix m;
  int r, g, b;
  rgb_offsets(src, &r, &g, &b);
  if (dst == PixelType::kGray) {
    m.out_channels = 1;
    if (src == PixelType::kGray) {
      m.coef[0][0] = 1.f;
    } else {
      m.coef[0][r] = 0.299f;
      m.coef[0][g] = 0.587f;
      m.coef[0][b] = 0.114f;
    }
    return m;
  }
  m.out_channels = 3;
  const bool bgr = dst == PixelType::kBGR || dst == PixelType::kBGRA;
  const int order[3] = {bgr ? b : r, g, bgr ? r : b};
  for (int k = 0; k < 3; ++k) m.coef[k][order[k]] = 1.f;
  return m;
}

bool valid_type(PixelType t) {
  switch (t) {
    case PixelType::kRGB:
    case PixelType::kBGR:
    case PixelType::kGray:
    case PixelType::kRGBA:
    case PixelType::kBGRA:
      return true;
  }
  return false;
}

Status resize_into(const uint8_t* pixels, PixelType src, int w, int h, size_t stride, PixelType dst, int tw, int th,
                   Mat* out) {
  const int sc = pixel_channels(src);
  const ColorMatrix cm = color_matrix(src, dst);
  const Axis ax = make_axis(w, tw);
  const Axis ay = make_axis(h, th);
  Mat m;
  if (!m.create(Shape::make3(tw, th, cm.out_channels))) return out_of_memory("from_pixels_resize");
  for (int y = 0; y < th; ++y) {
    const uint8_t* r0 = pixels + stride * static_cast<size_t>(ay.i0[y]);
    const uint8_t* r1 = pixels + stride * static_cast<size_t>(ay.i1[y]);
    const float b = ay.a[y];
    float* dst_rows[3];
    for (int k = 0; k < cm.out_channels; ++k) dst_rows[k] = m.channel(k) + static_cast<size_t>(y) * tw;
    for (int x = 0; x < tw; ++x) {
      const size_t x0 = static_cast<size_t>(ax.i0[x]) * sc, x1 = static_cast<size_t>(ax.i1[x]) * sc;
      const float a = ax.a[x];
      float s[4] = {0.f, 0.f, 0.f, 0.f};
      for (int j = 0; j < sc; ++j) {
        const float top = (1.f - a) * r0[x0 + j] + a * r0[x1 + j];
        const float bottom = (1.f - a) * r1[x0 + j] + a * r1[x1 + j];
        s[j] = (1.f - b) * top + b * bottom;
      }
      for (int k = 0; k < cm.out_channels; ++k) {
        const float* c = cm.coef[k];
        dst_rows[k][x] = c[0] * s[0] + c[1] * s[1] + c[2] * s[2] + c[3] * s[3];
      }
    }
  }
  *out = m;
  return Status::Ok();
}

uint8_t luma(Color c) { return static_cast<uint8_t>(std::lround(0.299 * c.r + 0.587 * c.g + 0.114 * c.b)); }

// Fills the inclusive rectangle, clipped; 64-bit coordinates so that callers may add
// thicknesses and scales to any int without overflow.
void fill_rect(Image& img, long long x0, long long y0, long long x1, long long y1, Color color) {
  x0 = std::max(x0, 0LL);
  y0 = std::max(y0, 0LL);
  x1 = std::min(x1, static_cast<long long>(img.w) - 1);
  y1 = std::min(y1, static_cast<long long>(img.h) - 1);
  if (x0 > x1 || y0 > y1) return;
  uint8_t px[4] = {color.r, color.g, color.b, 255};
  if (img.channels <= 2) {
    px[0] = luma(color);
    px[1] = 255;
  }
  const size_t c = static_cast<size_t>(img.channels);
  for (long long y = y0; y <= y1; ++y) {
    uint8_t* row = img.pixels.data() + static_cast<size_t>(y) * img.w * c;
    for (long long x = x0; x <= x1; ++x) std::memcpy(row + static_cast<size_t>(x) * c, px, c);
  }
}

// stb_easy_font indexes its tables by (character - 32): anything outside printable
// ASCII would read out of bounds.
std::string printable(const std::string& text) {
  std::string t = text.substr(0, 4096);
  for (char& ch : t) {
    if (ch != '\n' && (ch < 32 || ch > 126)) ch = '?';
  }
  return t;
}

std::string lower_extension(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot + 1);
  for (char& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return e;
}

}  // namespace

int pixel_channels(PixelType t) {
  switch (t) {
    case PixelType::kGray:
      return 1;
    case PixelType::kRGBA:
    case PixelType::kBGRA:
      return 4;
    default:
      return 3;
  }
}

PixelType image_pixel_type(const Image& img) {
  return img.channels == 1 ? PixelType::kGray : img.channels == 4 ? PixelType::kRGBA : PixelType::kRGB;
}

Status load_image(const std::string& path, Image* out) {
  if (!out) return invalid("load_image: out is null");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Status(ErrorCode::kNotFound, path + ": no such file");
    return Status(ErrorCode::kIoError, path + ": " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) return Status(ErrorCode::kIoError, path + ": is a directory, not an image file");
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status(ErrorCode::kIoError, path + ": cannot open: " + std::strerror(errno));
  std::vector<unsigned char> bytes;
  if (static_cast<unsigned long long>(st.st_size) > 0x7fffffffu) {
    return invalid(path + ": " + std::to_string(st.st_size) + " bytes is too large for an image file");
  }
  try {
    bytes.resize(static_cast<size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    return out_of_memory(path);
  }
  if (!bytes.empty() && std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) {
    return Status(ErrorCode::kIoError, path + ": cannot read: " + std::strerror(errno));
  }
  const image_probe::Probe probe = image_probe::probe(bytes.data(), bytes.size());
  if (probe.format == image_probe::Format::kUnknown) {
    return invalid(path + ": not a JPEG, PNG or BMP image (" +
                   (bytes.empty() ? std::string("the file is empty") : "no JPEG, PNG or BMP signature") + ")");
  }
  const std::string what = path + ": " + image_probe::format_name(probe.format) + " image";
  const std::string declared =
      probe.w > 0 && probe.h > 0 ? " of " + std::to_string(probe.w) + "x" + std::to_string(probe.h) + " pixels" : "";
  // A file cut short may still half-decode (stb fills a JPEG's missing scan data with
  // grey): refused whatever the decoder makes of it.
  const auto truncated = [&](const std::string& decoder) {
    return invalid(what + declared + " is truncated: the file ends after " + std::to_string(bytes.size()) +
                   " bytes, before the image data does" + (decoder.empty() ? "" : " (decoder: " + decoder + ")"));
  };
  const int size = static_cast<int>(bytes.size());
  int w = 0, h = 0, comp = 0;
  const int known = stbi_info_from_memory(bytes.data(), size, &w, &h, &comp);
  // Gray + alpha has no PixelType: decode it as gray.
  const int want = comp == 2 ? 1 : comp;
  std::unique_ptr<stbi_uc, void (*)(void*)> data(
      known ? stbi_load_from_memory(bytes.data(), size, &w, &h, &comp, want) : nullptr, &stbi_image_free);
  if (!data) {
    // Without a header stb reports only that no decoder took the file: decode it to
    // get the reason from the decoder its signature names.
    if (!known) stbi_image_free(stbi_load_from_memory(bytes.data(), size, &w, &h, &comp, 0));
    const std::string why = stbi_failure_reason() ? stbi_failure_reason() : "unknown error";
    if (why == "outofmem") return out_of_memory(path);
    if (why == "too large") return invalid(what + declared + " is too large to decode (decoder: " + why + ")");
    if (probe.truncated) return truncated(why);
    return invalid(what + declared + ": cannot decode it (decoder: " + why + ")");
  }
  if (probe.truncated) return truncated("");
  try {
    Image img;
    img.w = w;
    img.h = h;
    img.channels = want;
    img.pixels.assign(data.get(), data.get() + static_cast<size_t>(w) * h * want);
    *out = std::move(img);
  } catch (const std::bad_alloc&) {
    return out_of_memory(path);
  }
  return Status::Ok();
}

Status save_image(const std::string& path, const Image& img) {
  if (!consistent(img)) {
    return invalid("save_image " + path + ": inconsistent image (" + std::to_string(img.w) + "x" +
                   std::to_string(img.h) + ", " + std::to_string(img.channels) + " channels, " +
                   std::to_string(img.pixels.size()) + " bytes)");
  }
  if (img.w > 0x7fffffff / img.channels) return invalid("save_image " + path + ": image too wide");
  const std::string ext = lower_extension(path);
  int ok = 0;
  if (ext == "png") {
    ok = stbi_write_png(path.c_str(), img.w, img.h, img.channels, img.pixels.data(), img.w * img.channels);
  } else if (ext == "jpg" || ext == "jpeg") {
    ok = stbi_write_jpg(path.c_str(), img.w, img.h, img.channels, img.pixels.data(), 95);
  } else if (ext == "bmp") {
    ok = stbi_write_bmp(path.c_str(), img.w, img.h, img.channels, img.pixels.data());
  } else {
    return invalid("save_image " + path + ": unknown extension '" + ext + "' (png, jpg, jpeg or bmp)");
  }
  if (!ok) return Status(ErrorCode::kIoError, path + ": cannot write the image");
  return Status::Ok();
}

Status from_pixels_resize(const uint8_t* pixels, PixelType src, int w, int h, int stride_bytes, PixelType dst,
                          int target_w, int target_h, Mat* out) {
  if (!out) return invalid("from_pixels_resize: out is null");
  if (!pixels) return invalid("from_pixels_resize: pixels is null");
  if (!valid_type(src) || !valid_type(dst)) return invalid("from_pixels_resize: unknown PixelType");
  if (w <= 0 || h <= 0) {
    return invalid("from_pixels_resize: source size " + std::to_string(w) + "x" + std::to_string(h) +
                   " must be positive");
  }
  if (target_w <= 0 || target_h <= 0) {
    return invalid("from_pixels_resize: target size " + std::to_string(target_w) + "x" + std::to_string(target_h) +
                   " must be positive");
  }
  const long long row = static_cast<long long>(w) * pixel_channels(src);
  const long long stride = stride_bytes == 0 ? row : stride_bytes;
  if (stride < row) {
    return invalid("from_pixels_resize: stride " + std::to_string(stride_bytes) + " bytes is less than a row of " +
                   std::to_string(row) + " bytes");
  }
  // The last byte read must be addressable: (h - 1) * stride + row fits in 63 bits.
  if (static_cast<unsigned long long>(h - 1) * static_cast<unsigned long long>(stride) >
      static_cast<unsigned long long>(0x3fffffffffffffffLL)) {
    return invalid("from_pixels_resize: image byte size overflows");
  }
  if (!Shape::make3(target_w, target_h, pixel_channels(dst) == 1 ? 1 : 3).valid()) {
    return invalid("from_pixels_resize: target size too large");
  }
  try {
    return resize_into(pixels, src, w, h, static_cast<size_t>(stride), dst, target_w, target_h, out);
  } catch (const std::bad_alloc&) {
    return out_of_memory("from_pixels_resize");
  }
}

Status from_pixels(const uint8_t* pixels, PixelType src, int w, int h, int stride_bytes, PixelType dst, Mat* out) {
  return from_pixels_resize(pixels, src, w, h, stride_bytes, dst, w, h, out);
}

Status from_image_resize(const Image& img, PixelType dst, int target_w, int target_h, Mat* out) {
  if (!consistent(img) || img.channels == 2) {
    return invalid("from_image_resize: inconsistent image (" + std::to_string(img.w) + "x" + std::to_string(img.h) +
                   ", " + std::to_string(img.channels) + " channels, " + std::to_string(img.pixels.size()) +
                   " bytes)");
  }
  return from_pixels_resize(img.pixels.data(), image_pixel_type(img), img.w, img.h, 0, dst, target_w, target_h, out);
}

void substract_mean_normalize(Mat& m, const float* mean, const float* norm) {
  if (m.empty() || (!mean && !norm)) return;
  const int p = m.elempack;
  const size_t plane = static_cast<size_t>(m.w) * m.h * m.d;
  for (int q = 0; q < m.c; ++q) {
    float* v = m.channel(q);
    for (int lane = 0; lane < p; ++lane) {
      const int ch = q * p + lane;
      const float sub = mean ? mean[ch] : 0.f;
      const float mul = norm ? norm[ch] : 1.f;
      for (size_t i = 0; i < plane; ++i) v[i * p + lane] = (v[i * p + lane] - sub) * mul;
    }
  }
}

void draw_rectangle(Image& img, int x0, int y0, int x1, int y1, Color color, int thickness) {
  if (!consistent(img)) return;
  long long ax = std::min(x0, x1), bx = std::max(x0, x1), ay = std::min(y0, y1), by = std::max(y0, y1);
  if (thickness <= 0) {
    fill_rect(img, ax, ay, bx, by, color);
    return;
  }
  const long long t = thickness, lo = t / 2;
  fill_rect(img, ax - lo, ay - lo, bx - lo + t - 1, ay - lo + t - 1, color);  // top
  fill_rect(img, ax - lo, by - lo, bx - lo + t - 1, by - lo + t - 1, color);  // bottom
  fill_rect(img, ax - lo, ay - lo, ax - lo + t - 1, by - lo + t - 1, color);  // left
  fill_rect(img, bx - lo, ay - lo, bx - lo + t - 1, by - lo + t - 1, color);  // right
}

void draw_circle(Image& img, int cx, int cy, int radius, Color color) {
  if (!consistent(img) || radius < 0) return;
  const long long r = std::min(radius, 1 << 20), r2 = r * r;
  for (long long dy = -r; dy <= r; ++dy) {
    long long half = 0;
    while ((half + 1) * (half + 1) + dy * dy <= r2) ++half;
    fill_rect(img, cx - half, cy + dy, cx + half, cy + dy, color);
  }
}

void draw_line(Image& img, int x0, int y0, int x1, int y1, Color color, int thickness) {
  if (!consistent(img)) return;
  // Clip the walk to the image grown by the pen (anything further away draws nothing).
  const long long t = std::max(thickness, 1), pad = t;
  const double dx = static_cast<double>(x1) - x0, dy = static_cast<double>(y1) - y0;
  const double len = std::max(std::abs(dx), std::abs(dy));
  const long long steps = static_cast<long long>(std::min(len, 4.0 * (img.w + img.h + 2 * pad)));
  for (long long i = 0; i <= steps; ++i) {
    const double f = steps == 0 ? 0.0 : static_cast<double>(i) / static_cast<double>(steps);
    const long long x = std::llround(x0 + dx * f), y = std::llround(y0 + dy * f);
    if (x < -pad || y < -pad || x > img.w + pad || y > img.h + pad) continue;
    fill_rect(img, x - (t - 1) / 2, y - (t - 1) / 2, x + t / 2, y + t / 2, color);
  }
}

void draw_text(Image& img, int x, int y, const std::string& text, Color color, int scale) {
  if (!consistent(img) || text.empty()) return;
  const long long s = std::max(scale, 1);
  std::string t = printable(text);
  // A character has at most a few dozen segments; each quad is 4 vertices of 16 bytes.
  std::vector<char> vbuf(t.size() * 64 * 32);
  unsigned char rgba[4] = {color.r, color.g, color.b, 255};
  const int quads = stb_easy_font_print(0.f, 0.f, &t[0], rgba, vbuf.data(), static_cast<int>(vbuf.size()));
  for (int q = 0; q < quads; ++q) {
    float v0[2], v2[2];  // opposite corners of the quad
    std::memcpy(v0, vbuf.data() + q * 64, sizeof v0);
    std::memcpy(v2, vbuf.data() + q * 64 + 32, sizeof v2);
    const long long qx0 = std::lround(v0[0]), qy0 = std::lround(v0[1]);
    const long long qx1 = std::lround(v2[0]), qy1 = std::lround(v2[1]);
    fill_rect(img, x + qx0 * s, y + qy0 * s, x + qx1 * s - 1, y + qy1 * s - 1, color);
  }
}

void text_size(const std::string& text, int scale, int* width, int* height) {
  std::string t = printable(text);
  const int s = std::max(scale, 1);
  if (width) *width = t.empty() ? 0 : stb_easy_font_width(&t[0]) * s;
  if (height) *height = t.empty() ? 0 : stb_easy_font_height(&t[0]) * s;
}

}  // namespace kestrel
