// Minimal NumPy .npy reader and writer for little-endian float32 (and, read, int32) C-order arrays (what
// tests/torch/gen_cases.py writes, what kestrel-run --output writes).
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace kt {

struct NpyArray {
  std::vector<int> shape;
  std::vector<float> data;
};

// Returns an empty string on success, else what is wrong with the file.
inline std::string read_npy(const std::string& path, NpyArray* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open " + path;
  char magic[8];
  if (!f.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY") return path + ": not a .npy file";
  uint32_t header_len = 0;
  unsigned char b[4] = {0, 0, 0, 0};
  const int len_bytes = magic[6] == 1 ? 2 : 4;
  if (!f.read(reinterpret_cast<char*>(b), len_bytes)) return path + ": truncated header";
  for (int i = len_bytes - 1; i >= 0; --i) header_len = header_len * 256 + b[i];
  std::string header(header_len, '\0');
  if (!f.read(&header[0], header_len)) return path + ": truncated header";
  // int32 (an integer image, as TF.js models take) is read as float.
  const bool i4 = header.find("'<i4'") != std::string::npos;
  if (header.find("'<f4'") == std::string::npos && !i4) return path + ": dtype is not little-endian float32 or int32";
  if (header.find("'fortran_order': False") == std::string::npos) return path + ": not C order";
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return path + ": no shape";
  out->shape.clear();
  size_t count = 1;
  for (size_t i = open + 1; i < close;) {
    while (i < close && (header[i] == ' ' || header[i] == ',')) ++i;
    if (i >= close) break;
    size_t j = i;
    while (j < close && header[j] >= '0' && header[j] <= '9') ++j;
    const int d = std::stoi(header.substr(i, j - i));
    out->shape.push_back(d);
    count *= static_cast<size_t>(d);
    i = j;
  }
  out->data.resize(count);
  if (count && !f.read(reinterpret_cast<char*>(out->data.data()), static_cast<std::streamsize>(count * 4))) {
    return path + ": truncated data";
  }
  if (i4) {
    for (float& v : out->data) {
      int32_t k;
      std::memcpy(&k, &v, sizeof k);
      v = static_cast<float>(k);
    }
  }
  return std::string();
}

// Writes `data` (the product of `shape` floats, little-endian hosts) as a version 1.0
// .npy file. Returns an empty string on success, else what went wrong.
inline std::string write_npy(const std::string& path, const std::vector<int>& shape, const float* data) {
  size_t count = 1;
  std::string dims;
  for (int d : shape) {
    if (d < 0) return path + ": negative dimension";
    count *= static_cast<size_t>(d);
    dims += std::to_string(d) + ",";
  }
  if (shape.size() > 1) dims.pop_back();  // (5,) keeps its comma, (2, 3) does not
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64 bytes.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  if (header.size() > 0xffff) return path + ": too many dimensions";
  std::ofstream f(path, std::ios::binary);
  if (!f) return "cannot create " + path;
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(len), 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (count) f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(float)));
  f.close();
  if (!f) return "cannot write " + path;
  return std::string();
}

}  // namespace kt
