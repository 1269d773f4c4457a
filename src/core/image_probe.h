// What a file's bytes say about the image in it, before and beside decoding: the
// format by its signature, the size its header declares, and whether the file ends
// before the format's own end marker. stb_image tries every decoder in turn and, when
// all fail, reports only "unknown image type"; and it decodes a JPEG cut inside its
// scan data into a silently grey lower part. The probe lets load_image name the format
// and say that the file is truncated.
#pragma once
#include <cstddef>

namespace kestrel {
namespace image_probe {

enum class Format { kUnknown, kJpeg, kPng, kBmp };

struct Probe {
  Format format = Format::kUnknown;
  // Width and height from the header; 0 when the header is not there to read.
  long long w = 0, h = 0;
  // The file ends before the format's end (JPEG's EOI marker after the last scan,
  // PNG's IEND chunk, BMP's declared file size).
  bool truncated = false;
};

Probe probe(const unsigned char* bytes, size_t size);

// "JPEG", "PNG", "BMP" or "image".
const char* format_name(Format f);

}  // namespace image_probe
}  // namespace kestrel
