// Kestrel: images in, tensors out. Decoding and encoding (JPEG, PNG, BMP), resizing
// and colour conversion into a network input Mat with ncnn's names, and drawing for
// detection output.
//
// Errors: every function that can fail returns a Status and leaves its output
// untouched on failure; no exception leaves these functions and bad sizes or null
// pointers are reported, never dereferenced. The functions keep no state: any thread
// may call them on distinct images.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kestrel/mat.h"
#include "kestrel/status.h"

namespace kestrel {

// Layout of interleaved 8-bit pixels.
enum class PixelType { kRGB, kBGR, kGray, kRGBA, kBGRA };

// Channels per pixel of a PixelType (3, 3, 1, 4, 4).
int pixel_channels(PixelType t);

// An 8-bit interleaved image that owns its pixels, rows packed without padding:
// pixels.size() == w * h * channels. Channel order is what load_image produces:
// 1 = gray, 3 = RGB, 4 = RGBA.
struct Image {
  int w = 0, h = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

// The PixelType of an Image in load_image's order (kGray, kRGB or kRGBA); kRGB for a
// channel count other than 1 or 4 (use it on images that passed load_image).
PixelType image_pixel_type(const Image& img);

// Decodes a JPEG, PNG or BMP file into `out`. Gray+alpha files become gray (the alpha
// is dropped); others keep their channel count (1, 3 or 4). Errors name the file:
// NotFound (no such file), IoError (cannot be opened or read, a directory),
// InvalidArgument (not a decodable JPEG/PNG/BMP, with the decoder's reason),
// OutOfMemory.
Status load_image(const std::string& path, Image* out);

// Encodes `img` as PNG, or as JPEG (quality 95) when the path ends in .jpg/.jpeg, or
// BMP for .bmp (case-insensitive; gray becomes 24-bit RGB in a BMP). InvalidArgument for another extension or an
// inconsistent Image (non-positive size, channels outside 1..4, wrong pixel count),
// IoError when the file cannot be written.
Status save_image(const std::string& path, const Image& img);

// Converts `pixels` (w x h pixels of layout `src`, rows `stride_bytes` apart; 0 means
// packed rows, w * pixel_channels(src)) into a planar float Mat [c][target_h][target_w]
// with values 0..255, c = pixel_channels(dst) with any alpha dropped (kRGBA and kBGRA
// as `dst` give 3 channels, RGB or BGR). The caller keeps ownership of `pixels`; `out`
// is (re)allocated from the default allocator.
// Resizing is bilinear with OpenCV's cv::resize INTER_LINEAR sampling (pixel centres
// at +0.5, edge pixels replicated), computed in float: it matches OpenCV's 8-bit
// fixed-point result to within 1. Colour: RGB<->BGR swaps, colour to gray uses
// 0.299 R + 0.587 G + 0.114 B (ITU-R 601, as OpenCV), gray to colour replicates.
// InvalidArgument for a null pointer, a non-positive size, a stride below one row or
// sizes whose byte count overflows; OutOfMemory when the Mat cannot be allocated.
Status from_pixels_resize(const uint8_t* pixels, PixelType src, int w, int h, int stride_bytes, PixelType dst,
                          int target_w, int target_h, Mat* out);
// The same without resizing (target size = source size).
Status from_pixels(const uint8_t* pixels, PixelType src, int w, int h, int stride_bytes, PixelType dst, Mat* out);
// from_pixels_resize on a loaded Image (its layout from image_pixel_type). InvalidArgument
// for an inconsistent Image or one of 2 channels.
Status from_image_resize(const Image& img, PixelType dst, int target_w, int target_h, Mat* out);

// In place: x = (x - mean[c]) * norm[c] for every value of channel c (ncnn's name and
// semantics). Either array may be nullptr (no subtraction / no scaling); otherwise it
// holds at least m.channels() values. Packed Mats (elempack > 1) are handled; an empty
// Mat is left alone.
void substract_mean_normalize(Mat& m, const float* mean, const float* norm);

struct Color {
  uint8_t r = 0, g = 0, b = 0;
};

// Draws the rectangle with corners (x0, y0) and (x1, y1) (inclusive, either order) as
// a frame `thickness` pixels wide centred on its edges, or filled when thickness <= 0.
// Everything outside the image is clipped; any coordinates are safe. Gray images get
// the colour's luma, RGBA images an opaque colour. Does nothing on an inconsistent Image.
void draw_rectangle(Image& img, int x0, int y0, int x1, int y1, Color color, int thickness);

// A line from (x0, y0) to (x1, y1), `thickness` pixels wide (< 1 counts as 1), and a
// filled disc; clipped like draw_rectangle (pose skeletons, landmarks).
void draw_line(Image& img, int x0, int y0, int x1, int y1, Color color, int thickness);
void draw_circle(Image& img, int cx, int cy, int radius, Color color);

// Draws `text` (ASCII, '\n' starts a new line) with its top-left corner at (x, y) in
// stb_easy_font's bitmap font, each font pixel a scale x scale block (scale < 1 counts
// as 1). Clipped like draw_rectangle; only the first 4096 characters are drawn.
void draw_text(Image& img, int x, int y, const std::string& text, Color color, int scale);
// The size in pixels draw_text gives `text` at `scale`.
void text_size(const std::string& text, int scale, int* width, int* height);

}  // namespace kestrel
