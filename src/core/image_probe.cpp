#include "core/image_probe.h"

#include <cstdint>
#include <cstring>

namespace kestrel {
namespace image_probe {
namespace {

uint32_t be16(const unsigned char* p) { return (uint32_t(p[0]) << 8) | p[1]; }
uint32_t be32(const unsigned char* p) { return (be16(p) << 16) | be16(p + 2); }
uint32_t le32(const unsigned char* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

// JPEG markers (ITU T.81 B.1.1.3).
constexpr unsigned kSOI = 0xd8, kEOI = 0xd9, kSOS = 0xda, kTEM = 0x01;
bool standalone(unsigned m) { return m == kTEM || (m >= 0xd0 && m <= 0xd7); }  // RSTn carry no length
// SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) hold the frame size.
bool frame_header(unsigned m) { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc; }

// Walks the marker segments by their lengths, so that an EXIF thumbnail's own EOI
// inside APP1 is skipped, and each scan's entropy-coded data up to the next marker
// (a 0xff in the data is stuffed as ff 00; RSTn markers stay inside the scan).
void probe_jpeg(const unsigned char* p, size_t n, Probe* out) {
  size_t i = 2;
  for (;;) {
    while (i < n && p[i] != 0xff) ++i;      // tolerate junk between segments, as decoders do
    while (i < n && p[i] == 0xff) ++i;      // fill bytes
    if (i >= n) break;
    const unsigned m = p[i++];
    if (m == kEOI) return;
    if (standalone(m) || m == kSOI) continue;
    if (i + 2 > n) break;
    const size_t len = be16(p + i);
    if (frame_header(m) && i + 7 <= n) {
      out->h = be16(p + i + 3);
      out->w = be16(p + i + 5);
    }
    if (len < 2 || i + len > n) break;
    i += len;
    if (m != kSOS) continue;
    // Entropy-coded data: ends at a marker that is not a stuffed zero or an RSTn.
    for (;;) {
      while (i < n && p[i] != 0xff) ++i;
      if (i + 1 >= n) break;
      const unsigned next = p[i + 1];
      if (next == 0x00 || next == 0xff || (next >= 0xd0 && next <= 0xd7)) {
        i += next == 0xff ? 1 : 2;
        continue;
      }
      break;
    }
  }
  out->truncated = true;
}

// Chunks are length, type, data, CRC; the image ends with IEND.
void probe_png(const unsigned char* p, size_t n, Probe* out) {
  if (n >= 24 && std::memcmp(p + 12, "IHDR", 4) == 0) {
    out->w = be32(p + 16);
    out->h = be32(p + 20);
  }
  size_t i = 8;
  while (i + 8 <= n) {
    const uint64_t len = be32(p + i);
    const bool end = std::memcmp(p + i + 4, "IEND", 4) == 0;
    if (i + 12 + len > n) break;
    if (end) return;
    i += 12 + static_cast<size_t>(len);
  }
  out->truncated = true;
}

// BITMAPFILEHEADER holds the file size (0 in some writers: then unknown); the
// info header's width and height (negative height: top-down rows).
void probe_bmp(const unsigned char* p, size_t n, Probe* out) {
  if (n >= 26) {
    out->w = static_cast<int32_t>(le32(p + 18));
    const long long h = static_cast<int32_t>(le32(p + 22));
    out->h = h < 0 ? -h : h;
  }
  const uint32_t declared = n >= 6 ? le32(p + 2) : 0;
  out->truncated = n < 26 || (declared != 0 && n < declared);
}

}  // namespace

Probe probe(const unsigned char* bytes, size_t size) {
  Probe r;
  if (size >= 3 && bytes[0] == 0xff && bytes[1] == kSOI && bytes[2] == 0xff) {
    r.format = Format::kJpeg;
    probe_jpeg(bytes, size, &r);
  } else if (size >= 8 && std::memcmp(bytes, kPngSignature, 8) == 0) {
    r.format = Format::kPng;
    probe_png(bytes, size, &r);
  } else if (size >= 2 && bytes[0] == 'B' && bytes[1] == 'M') {
    r.format = Format::kBmp;
    probe_bmp(bytes, size, &r);
  }
  return r;
}

const char* format_name(Format f) {
  switch (f) {
    case Format::kJpeg:
      return "JPEG";
    case Format::kPng:
      return "PNG";
    case Format::kBmp:
      return "BMP";
    default:
      return "image";
  }
}

}  // namespace image_probe
}  // namespace kestrel
