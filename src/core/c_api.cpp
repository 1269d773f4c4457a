// The C API (kestrel/c_api.h): handles that wrap Net and Extractor, with the last
// error kept per object so that C callers need no out-parameters for messages.
#include "kestrel/c_api.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "core/guard.h"
#include "kestrel/cpu.h"
#include "kestrel/image.h"
#include "kestrel/net.h"

using kestrel::ErrorCode;
using kestrel::Mat;
using kestrel::Shape;
using kestrel::Status;

static_assert(KESTREL_INVALID_ARGUMENT == static_cast<int>(ErrorCode::kInvalidArgument) &&
                  KESTREL_NOT_FOUND == static_cast<int>(ErrorCode::kNotFound) &&
                  KESTREL_IO_ERROR == static_cast<int>(ErrorCode::kIoError) &&
                  KESTREL_CORRUPT_MODEL == static_cast<int>(ErrorCode::kCorruptModel) &&
                  KESTREL_UNSUPPORTED == static_cast<int>(ErrorCode::kUnsupported) &&
                  KESTREL_OUT_OF_MEMORY == static_cast<int>(ErrorCode::kOutOfMemory) &&
                  KESTREL_INTERNAL == static_cast<int>(ErrorCode::kInternal),
              "kestrel_status mirrors kestrel::ErrorCode");

struct kestrel_net {
  kestrel::Net net;
  std::string error;
  std::map<std::string, std::string> metadata;  // strings handed out by kestrel_net_metadata
};

struct kestrel_extractor {
  explicit kestrel_extractor(kestrel::Extractor e) : ex(std::move(e)) {}
  kestrel::Extractor ex;
  std::string error;
  std::map<std::string, Mat> inputs;                  // Extractor::input references, not copies
  std::map<std::string, std::vector<float>> outputs;  // dense copies handed out
};

namespace {

// Records the outcome on the object; the message is kept only for failures.
template <typename Obj>
kestrel_status finish(Obj* obj, const Status& s) {
  try {
    obj->error = s.message();
  } catch (...) {
    obj->error.clear();  // out of memory for the message: the code still tells
  }
  return static_cast<kestrel_status>(s.code());
}

Status null_argument(const char* what) {
  return Status(ErrorCode::kInvalidArgument, std::string(what) + " is NULL");
}

// Outermost first ([C,H,W]) to Kestrel's Shape; invalid() for anything else.
Shape shape_from_dims(int ndims, const int* dims) {
  switch (ndims) {
    case 1: return Shape::make1(dims[0]);
    case 2: return Shape::make2(dims[1], dims[0]);
    case 3: return Shape::make3(dims[2], dims[1], dims[0]);
    case 4: return Shape::make4(dims[3], dims[2], dims[1], dims[0]);
    default: return Shape{};
  }
}

void dims_from_shape(const Shape& s, int* ndims, int dims[4]) {
  const int c = s.c * s.elempack;
  const int by_rank[4][4] = {{s.w}, {s.h, s.w}, {c, s.h, s.w}, {c, s.d, s.h, s.w}};
  *ndims = s.dims;
  for (int i = 0; i < s.dims; ++i) dims[i] = by_rank[s.dims - 1][i];
}

}  // namespace

extern "C" {

const char* kestrel_status_name(int status) {
  if (status < 0 || status > KESTREL_INTERNAL) return "unknown error";
  return kestrel::error_code_name(static_cast<ErrorCode>(status));
}

kestrel_net* kestrel_net_create(void) { return new (std::nothrow) kestrel_net(); }

void kestrel_net_destroy(kestrel_net* net) { delete net; }

kestrel_status kestrel_net_set_num_threads(kestrel_net* net, int num_threads) {
  if (net == nullptr) return KESTREL_INVALID_ARGUMENT;
  if (num_threads < 0) {
    return finish(net, Status(ErrorCode::kInvalidArgument, "num_threads must be >= 0, got " + std::to_string(num_threads)));
  }
  net->net.option().num_threads = num_threads;
  return finish(net, Status::Ok());
}

kestrel_status kestrel_net_load_file(kestrel_net* net, const char* path) {
  if (net == nullptr) return KESTREL_INVALID_ARGUMENT;
  return finish(net, kestrel::guarded("kestrel_net_load_file", [&] {
                  if (path == nullptr) return null_argument("path");
                  net->metadata.clear();
                  return net->net.load(std::string(path));
                }));
}

kestrel_status kestrel_net_load_memory(kestrel_net* net, const void* data, size_t size) {
  if (net == nullptr) return KESTREL_INVALID_ARGUMENT;
  return finish(net, kestrel::guarded("kestrel_net_load_memory", [&] {
                  if (data == nullptr) return null_argument("data");
                  net->metadata.clear();
                  return net->net.load(data, size);
                }));
}

const char* kestrel_net_last_error(const kestrel_net* net) { return net ? net->error.c_str() : ""; }

kestrel_status kestrel_net_input_shape(kestrel_net* net, const char* name, int* ndims, int shape[4]) {
  if (net == nullptr) return KESTREL_INVALID_ARGUMENT;
  return finish(net, kestrel::guarded("kestrel_net_input_shape", [&] {
                  if (name == nullptr || ndims == nullptr || shape == nullptr) return null_argument("an argument");
                  Shape s;
                  Status st = net->net.input_shape(name, &s);
                  if (st.ok()) dims_from_shape(s, ndims, shape);
                  return st;
                }));
}

const char* kestrel_net_metadata(kestrel_net* net, const char* key) {
  if (net == nullptr || key == nullptr) return nullptr;
  try {
    auto it = net->metadata.find(key);
    if (it == net->metadata.end()) it = net->metadata.emplace(key, net->net.metadata(key)).first;
    return it->second.c_str();
  } catch (...) {
    return "";
  }
}

kestrel_extractor* kestrel_extractor_create(const kestrel_net* net) {
  if (net == nullptr) return nullptr;
  try {
    return new kestrel_extractor(net->net.create_extractor());
  } catch (...) {
    return nullptr;
  }
}

void kestrel_extractor_destroy(kestrel_extractor* ex) { delete ex; }

kestrel_status kestrel_extractor_set_num_threads(kestrel_extractor* ex, int num_threads) {
  if (ex == nullptr) return KESTREL_INVALID_ARGUMENT;
  if (num_threads < 0) {
    return finish(ex, Status(ErrorCode::kInvalidArgument, "num_threads must be >= 0, got " + std::to_string(num_threads)));
  }
  ex->ex.set_num_threads(num_threads);
  return finish(ex, Status::Ok());
}

kestrel_status kestrel_extractor_set_cpus(kestrel_extractor* ex, const int* cpus, int count) {
  if (ex == nullptr) return KESTREL_INVALID_ARGUMENT;
  return finish(ex, kestrel::guarded("kestrel_extractor_set_cpus", [&] {
                  if (count < 0 || (count > 0 && cpus == nullptr)) return null_argument("cpus");
                  kestrel::CpuSet set;
                  for (int i = 0; i < count; ++i) {
                    if (cpus[i] < 0 || cpus[i] >= kestrel::CpuSet::kMaxCpus) {
                      return Status(ErrorCode::kInvalidArgument, "CPU id " + std::to_string(cpus[i]) + " out of range");
                    }
                    set.enable(cpus[i]);
                  }
                  return ex->ex.set_cpu_set(set);
                }));
}

kestrel_status kestrel_extractor_input(kestrel_extractor* ex, const char* name, const float* data, int ndims,
                                       const int* shape) {
  if (ex == nullptr) return KESTREL_INVALID_ARGUMENT;
  return finish(ex, kestrel::guarded("kestrel_extractor_input", [&]() -> Status {
                  if (name == nullptr || data == nullptr || shape == nullptr) return null_argument("an argument");
                  const Shape s = shape_from_dims(ndims, shape);
                  if (!s.valid()) {
                    return Status(ErrorCode::kInvalidArgument,
                                  "input '" + std::string(name) + "': bad shape (" + std::to_string(ndims) + " dims)");
                  }
                  // The previous frame's Mat of this input is refilled when the shape is the
                  // same, so that steady-state inference through the C API allocates nothing
                  // (Extractor::input below resets what was computed from the old values).
                  const auto it = ex->inputs.find(name);
                  Mat m = it != ex->inputs.end() && it->second.shape() == s ? it->second : Mat();
                  if (m.empty() && !m.create(s)) {
                    return Status(ErrorCode::kOutOfMemory, "cannot allocate input '" + std::string(name) + "'");
                  }
                  // Rows are dense in the caller's data; channels of a Mat are padded to kAlignment.
                  const size_t per_channel = static_cast<size_t>(s.w) * s.h * s.d;
                  for (int q = 0; q < s.c; ++q) std::memcpy(m.channel(q), data + per_channel * q, per_channel * sizeof(float));
                  Status st = ex->ex.input(name, m);
                  if (st.ok()) ex->inputs[name] = m;
                  return st;
                }));
}

kestrel_status kestrel_extractor_extract(kestrel_extractor* ex, const char* name, kestrel_tensor* out) {
  if (ex == nullptr) return KESTREL_INVALID_ARGUMENT;
  return finish(ex, kestrel::guarded("kestrel_extractor_extract", [&]() -> Status {
                  if (name == nullptr || out == nullptr) return null_argument("an argument");
                  Mat m;
                  Status st = ex->ex.extract(name, m);
                  if (!st.ok()) return st;
                  if (m.elempack != 1) m = kestrel::convert_packing(m, 1);
                  if (m.data == nullptr) return Status(ErrorCode::kOutOfMemory, "cannot unpack blob '" + std::string(name) + "'");
                  const Shape s = m.shape();
                  std::vector<float>& dense = ex->outputs[name];
                  const size_t per_channel = static_cast<size_t>(s.w) * s.h * s.d;
                  dense.resize(per_channel * s.c);
                  // A tensor of no values (0 rows, 0 channels) has no buffer to copy into.
                  if (!dense.empty()) {
                    for (int q = 0; q < s.c; ++q) std::memcpy(dense.data() + per_channel * q, m.channel(q), per_channel * sizeof(float));
                  }
                  dims_from_shape(s, &out->ndims, out->shape);
                  out->count = dense.size();
                  out->data = dense.data();
                  return Status::Ok();
                }));
}

const char* kestrel_extractor_last_error(const kestrel_extractor* ex) { return ex ? ex->error.c_str() : ""; }

kestrel_status kestrel_image_load(const char* path, unsigned char** pixels, int* w, int* h, int* channels,
                                  char* error, size_t error_size) {
  Status st = kestrel::guarded("kestrel_image_load", [&]() -> Status {
    if (pixels == nullptr || w == nullptr || h == nullptr || channels == nullptr) return null_argument("an output");
    *pixels = nullptr;
    if (path == nullptr) return null_argument("path");
    kestrel::Image img;
    Status s = kestrel::load_image(path, &img);
    if (!s.ok()) return s;
    unsigned char* buf = static_cast<unsigned char*>(std::malloc(img.pixels.size()));
    if (buf == nullptr) return Status(ErrorCode::kOutOfMemory, std::string(path) + ": out of memory");
    std::memcpy(buf, img.pixels.data(), img.pixels.size());
    *pixels = buf;
    *w = img.w;
    *h = img.h;
    *channels = img.channels;
    return Status::Ok();
  });
  if (error != nullptr && error_size > 0) {
    const size_t n = std::min(error_size - 1, st.message().size());
    std::memcpy(error, st.message().data(), n);
    error[n] = '\0';
  }
  return static_cast<kestrel_status>(st.code());
}

void kestrel_image_free(unsigned char* pixels) { std::free(pixels); }

}  // extern "C"
