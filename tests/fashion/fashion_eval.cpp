// fashion_eval: runs the Fashion-MNIST test set (idx files, gzip or plain) through a
// .kst classifier with Kestrel's public API and reports its top-1 accuracy.
//
//   fashion_eval MODEL.kst IMAGES-idx3-ubyte[.gz] LABELS-idx1-ubyte[.gz]
//                [--probs OUT.npy] [--threads N] [--reference] [--limit N] [--precision fp32|fp16|bf16|int8]
//
// Each image is preprocessed as the model's metadata says (input_size "28x28",
// channel_order "gray", (pixel - mean) * norm on 0..255 values) and run with one
// Extractor, reused for every image. --probs writes the output probabilities as a
// float32 [N,10] .npy (for models/fashion/evaluate.py, which compares them with
// PyTorch). Prints one line "MODEL: accuracy P% (K/N) ..."; exit 0 on success, 1 on
// any error, 2 on a bad command line.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kestrel/net.h"
#include "precision_arg.h"

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "fashion_eval: %s\n", msg.c_str());
  return 1;
}

// The whole file, gunzipped if it is gzip (zlib's gz* functions read plain files too).
bool read_file(const std::string& path, std::vector<uint8_t>* out, std::string* err) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    *err = path + ": cannot open";
    return false;
  }
  out->clear();
  std::vector<uint8_t> buf(1 << 16);
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) out->insert(out->end(), buf.begin(), buf.begin() + n);
  int errnum = 0;
  const char* msg = gzerror(f, &errnum);
  const bool ok = n == 0 && errnum == Z_OK;
  if (!ok) *err = path + ": read error: " + (msg ? msg : "?");
  gzclose(f);
  return ok;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// An idx file of unsigned bytes: dims and the data's offset.
bool parse_idx(const std::string& path, const std::vector<uint8_t>& f, std::vector<uint32_t>* dims, size_t* offset,
               std::string* err) {
  if (f.size() < 4 || f[0] != 0 || f[1] != 0 || f[2] != 0x08) {
    *err = path + ": not an idx file of unsigned bytes";
    return false;
  }
  const int ndim = f[3];
  if (f.size() < 4 + 4 * size_t(ndim)) {
    *err = path + ": truncated header";
    return false;
  }
  size_t count = 1;
  dims->clear();
  for (int i = 0; i < ndim; ++i) {
    dims->push_back(be32(&f[4 + 4 * i]));
    count *= dims->back();
  }
  *offset = 4 + 4 * size_t(ndim);
  if (f.size() - *offset != count) {
    *err = path + ": " + std::to_string(f.size() - *offset) + " data bytes, header says " + std::to_string(count);
    return false;
  }
  return true;
}

bool parse_float(const std::string& s, float* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtof(s.c_str(), &end);
  return end && *end == '\0';
}

bool write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const uint16_t len = static_cast<uint16_t>(header.size());
  const uint8_t len_le[2] = {uint8_t(len & 0xFF), uint8_t(len >> 8)};
  bool ok = std::fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 && std::fwrite(len_le, 1, 2, f) == 2 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string probs_path;
  int threads = 1;
  long limit = -1;
  bool reference = false;
  kestrel::Precision precision = kestrel::Precision::kFp32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--probs" || a == "--threads" || a == "--limit") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--probs") probs_path = v;
      else if (a == "--threads") threads = std::atoi(v.c_str());
      else limit = std::atol(v.c_str());
    } else if (a == "--precision" && i + 1 < argc && kestrel_tools::parse_precision(argv[i + 1], &precision)) {
      ++i;
    } else if (a == "--reference") {
      reference = true;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "fashion_eval: unknown option %s\n", a.c_str());
      return 2;
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 3) {
    std::fprintf(stderr,
                 "usage: fashion_eval MODEL.kst IMAGES-idx3-ubyte[.gz] LABELS-idx1-ubyte[.gz] [--probs OUT.npy] "
                 "[--threads N] [--reference] [--limit N] [--precision fp32|fp16|bf16|int8]\n");
    return 2;
  }
  const std::string& model = pos[0];

  std::string err;
  std::vector<uint8_t> img_file, lab_file;
  std::vector<uint32_t> img_dims, lab_dims;
  size_t img_off = 0, lab_off = 0;
  if (!read_file(pos[1], &img_file, &err) || !parse_idx(pos[1], img_file, &img_dims, &img_off, &err) ||
      !read_file(pos[2], &lab_file, &err) || !parse_idx(pos[2], lab_file, &lab_dims, &lab_off, &err)) {
    return fail(err);
  }
  if (img_dims.size() != 3 || lab_dims.size() != 1 || img_dims[0] != lab_dims[0]) {
    return fail("expected images [N,H,W] and labels [N] with the same N");
  }
  size_t n = img_dims[0];
  if (limit >= 0 && size_t(limit) < n) n = size_t(limit);
  const int ih = int(img_dims[1]), iw = int(img_dims[2]);

  kestrel::Net net;
  net.option().num_threads = threads;
  net.option().kernels = reference ? kestrel::KernelSet::kReference : kestrel::KernelSet::kFast;
  net.option().precision = precision;
  kestrel::Status s = net.load(model);
  if (!s.ok()) return fail(s.message());
  if (net.input_names().size() != 1 || net.output_names().size() != 1) {
    return fail(model + ": expected one input and one output");
  }
  const std::string in_name = net.input_names()[0], out_name = net.output_names()[0];

  // Preprocessing from the model's metadata.
  const std::string size = net.metadata("input_size"), order = net.metadata("channel_order");
  if (size != std::to_string(iw) + "x" + std::to_string(ih)) {
    return fail(model + ": metadata input_size '" + size + "', the images are " + std::to_string(iw) + "x" +
                std::to_string(ih));
  }
  if (order != "gray") return fail(model + ": metadata channel_order '" + order + "', expected gray");
  float mean = 0.f, norm = 1.f;
  if (!parse_float(net.metadata("mean"), &mean) || !parse_float(net.metadata("norm"), &norm)) {
    return fail(model + ": metadata mean '" + net.metadata("mean") + "' / norm '" + net.metadata("norm") +
                "' are not single numbers");
  }
  kestrel::Shape in_shape;
  s = net.input_shape(in_name, &in_shape);
  if (!s.ok()) return fail(s.message());
  if (in_shape.w != iw || in_shape.h != ih || in_shape.c * in_shape.elempack != 1 || in_shape.d != 1) {
    return fail(model + ": input '" + in_name + "' is not 1x" + std::to_string(ih) + "x" + std::to_string(iw));
  }

  kestrel::Extractor ex = net.create_extractor();
  kestrel::Mat in;
  in.create(in_shape);
  if (!in.data) return fail("cannot allocate the input");
  std::vector<float> probs;
  size_t classes = 0, correct = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* px = &img_file[img_off + i * size_t(iw) * ih];
    float* dst = in.channel(0);
    for (int k = 0; k < iw * ih; ++k) dst[k] = (float(px[k]) - mean) * norm;
    kestrel::Mat out;
    s = ex.input(in_name, in);
    if (s.ok()) s = ex.extract(out_name, out);
    if (!s.ok()) return fail("image " + std::to_string(i) + ": " + s.message());
    if (out.elempack != 1) out = kestrel::convert_packing(out, 1);
    const size_t plane = size_t(out.w) * out.h * out.d;
    const size_t total = plane * out.c;
    if (classes == 0) {
      classes = total;
      probs.reserve(n * classes);
    }
    if (total != classes || total == 0) return fail("output '" + out_name + "' changed size");
    const size_t base = probs.size();
    for (int q = 0; q < out.c; ++q) {
      const float* p = out.channel(q);
      probs.insert(probs.end(), p, p + plane);
    }
    const size_t best = size_t(std::max_element(probs.begin() + base, probs.end()) - (probs.begin() + base));
    if (best == lab_file[lab_off + i]) ++correct;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: accuracy %.2f%% (%zu/%zu), %zu classes, %s kernels, %d thread(s), %.2f ms/image\n",
              model.c_str(), 100.0 * double(correct) / double(n), correct, n, classes, reference ? "reference" : "fast",
              threads, 1e3 * secs / double(n));
  if (!probs_path.empty() && !write_npy(probs_path, probs, n, classes)) return fail(probs_path + ": cannot write");
  return 0;
}
