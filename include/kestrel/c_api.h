/* Kestrel C API: load a model, run it, read the outputs, from C99 or any language
 * with a C FFI. A thin layer over kestrel/net.h; link libkestrel.a with a C++ linker
 * or add libstdc++ (pkg-config --libs kestrel lists it).
 *
 * Errors: every call that can fail returns a kestrel_status (KESTREL_OK is 0); the
 * message of the last failed call on an object is kestrel_net_last_error() or
 * kestrel_extractor_last_error() (an empty string after a call that succeeded). No
 * C++ exception crosses this API. Functions that create objects return NULL only when
 * memory runs out. NULL object or name pointers give KESTREL_INVALID_ARGUMENT.
 *
 * Ownership: objects returned by *_create are owned by the caller and freed with the
 * matching *_destroy (NULL is accepted and ignored). Strings and tensors returned by
 * the library are owned by the object they came from; their lifetime is documented
 * per function.
 *
 * Threads: kestrel_extractor_create may be called on one net from any number of
 * threads at once; every other kestrel_net_* call records its outcome (or caches a
 * string) in the net and needs the net to itself. One extractor must be used by one
 * thread at a time; extractors of one net run in parallel. An extractor keeps its
 * model alive on its own: it stays valid after its net is destroyed. */
#ifndef KESTREL_C_API_H_
#define KESTREL_C_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as kestrel::ErrorCode. */
typedef enum kestrel_status {
  KESTREL_OK = 0,
  KESTREL_INVALID_ARGUMENT = 1, /* wrong name, wrong shape, bad option, NULL pointer */
  KESTREL_NOT_FOUND = 2,        /* missing file */
  KESTREL_IO_ERROR = 3,         /* file could not be read */
  KESTREL_CORRUPT_MODEL = 4,    /* verifier or semantic check failed */
  KESTREL_UNSUPPORTED = 5,      /* unknown layer type, ... */
  KESTREL_OUT_OF_MEMORY = 6,
  KESTREL_INTERNAL = 7          /* a bug in Kestrel */
} kestrel_status;

typedef struct kestrel_net kestrel_net;
typedef struct kestrel_extractor kestrel_extractor;

/* A dense float tensor, outermost dimension first as in the model format ([C,H,W]
 * for an image, without the batch). */
typedef struct kestrel_tensor {
  int ndims;         /* 1 to 4 */
  int shape[4];      /* shape[0..ndims-1]; may hold a 0 (a detector that found nothing
                        gives {0, 6}) */
  size_t count;      /* product of the shape; 0 for such a tensor */
  const float* data; /* count floats, row-major, no padding; not to be read when
                        count is 0 (it may be NULL) */
} kestrel_tensor;

/* "ok", "invalid argument", ...; a static string, never NULL. */
const char* kestrel_status_name(int status);

/* ---- net ------------------------------------------------------------------------ */

/* An empty net (nothing loaded). NULL when out of memory. */
kestrel_net* kestrel_net_create(void);
/* Frees the net; extractors created from it stay valid. NULL is ignored. */
void kestrel_net_destroy(kestrel_net* net);

/* Worker threads for extractors created after this call (0: all CPUs). */
kestrel_status kestrel_net_set_num_threads(kestrel_net* net, int num_threads);

/* Loads a .kst file (memory-mapped). On failure the previous model, if any, stays. */
kestrel_status kestrel_net_load_file(kestrel_net* net, const char* path);
/* Loads a model from memory. A 64-byte aligned `data` (a kestrel-convert
 * --emit-c-array header gives one) is used in place without a copy and must stay
 * alive and unchanged while the net or any of its extractors lives; any other buffer
 * is copied and may be freed after the call. */
kestrel_status kestrel_net_load_memory(kestrel_net* net, const void* data, size_t size);

/* The message of the last failed call on `net`, "" after a success. Owned by the
 * net; valid until the next call on it. Never NULL ("" for a NULL net). */
const char* kestrel_net_last_error(const kestrel_net* net);

/* The shape input `name` was prepared for, outermost first. */
kestrel_status kestrel_net_input_shape(kestrel_net* net, const char* name, int* ndims, int shape[4]);
/* Metadata written at conversion ("mean", "norm", "labels"); "" when absent. Owned by
 * the net; valid until the net is destroyed or loads again. NULL only for a NULL net
 * or key. */
const char* kestrel_net_metadata(kestrel_net* net, const char* key);

/* ---- extractor ------------------------------------------------------------------ */

/* A new inference session on the model `net` holds now; NULL when out of memory or
 * `net` is NULL. Destroy it with kestrel_extractor_destroy. */
kestrel_extractor* kestrel_extractor_create(const kestrel_net* net);
void kestrel_extractor_destroy(kestrel_extractor* ex);

kestrel_status kestrel_extractor_set_num_threads(kestrel_extractor* ex, int num_threads);
/* Pins this extractor's inferences to the `count` CPU ids in `cpus` (see
 * Extractor::set_cpu_set in kestrel/net.h); count 0 turns pinning off.
 * KESTREL_INVALID_ARGUMENT naming the CPU if one is not online. */
kestrel_status kestrel_extractor_set_cpus(kestrel_extractor* ex, const int* cpus, int count);

/* Sets input `name` from `count` dense floats of shape shape[0..ndims-1] (outermost
 * first). The data is copied: the caller may reuse it right after the call.
 * KESTREL_INVALID_ARGUMENT if `name` is not an input or the shape differs from
 * kestrel_net_input_shape's. Starts a new inference: tensors returned by earlier
 * extracts become invalid. */
kestrel_status kestrel_extractor_input(kestrel_extractor* ex, const char* name, const float* data, int ndims,
                                       const int* shape);
/* Computes blob `name` and describes it in `*out`. out->data is owned by the
 * extractor and valid until the next kestrel_extractor_input or destroy on it
 * (extracting other blobs keeps it valid). */
kestrel_status kestrel_extractor_extract(kestrel_extractor* ex, const char* name, kestrel_tensor* out);
/* Like kestrel_net_last_error, for the extractor. */
const char* kestrel_extractor_last_error(const kestrel_extractor* ex);

/* ---- images (JPEG, PNG, BMP; kestrel/image.h) ----------------------------------- */

/* Decodes an image file into 8-bit interleaved pixels (channels 1 = gray, 3 = RGB,
 * 4 = RGBA) in a buffer the caller frees with kestrel_image_free. On failure *pixels
 * is NULL and `error` (if not NULL) receives the message, cut to `error_size` bytes
 * with a terminating NUL. */
kestrel_status kestrel_image_load(const char* path, unsigned char** pixels, int* w, int* h, int* channels,
                                  char* error, size_t error_size);
void kestrel_image_free(unsigned char* pixels);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KESTREL_C_API_H_ */
