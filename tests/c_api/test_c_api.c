/* The C API (kestrel/c_api.h) from C11: the trained Fashion-MNIST classifier on its
 * sample images, preprocessed here in C from the model's metadata, each classified as
 * the label in its file name (the same answers kestrel-run gives), the same results
 * through a model loaded from memory and through pinning, and the error paths: missing
 * file, corrupt bytes, wrong input and output names, wrong shape, NULL arguments.
 *
 * usage: test_c_api MODELS_DIR   (the repository's models/fashion) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/c_api.h"

static int g_failures = 0;

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                    \
    }                                                                  \
  } while (0)

static const char* const kSamples[] = {"00000_ankle_boot", "00001_pullover", "00002_trouser",
                                       "00004_shirt",      "00006_coat",     "00008_sandal"};
/* Class index of each sample (the model's "labels" metadata order). */
static const int kExpected[] = {9, 2, 1, 6, 4, 5};

/* Reads a whole file into malloc'ed memory; NULL on failure. */
static unsigned char* read_all(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* buf = (unsigned char*)malloc(n > 0 ? (size_t)n : 1u);
  if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* Classifies one sample; returns the arg max, or -1 after reporting an error. */
static int classify(kestrel_net* net, kestrel_extractor* ex, const char* dir, const char* sample, float* prob_sum) {
  char path[1024];
  snprintf(path, sizeof path, "%s/samples/%s.png", dir, sample);
  unsigned char* pixels = NULL;
  int w = 0, h = 0, c = 0;
  char err[256];
  if (kestrel_image_load(path, &pixels, &w, &h, &c, err, sizeof err) != KESTREL_OK) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  int ndims = 0, shape[4] = {0, 0, 0, 0};
  CHECK(kestrel_net_input_shape(net, "data", &ndims, shape) == KESTREL_OK);
  CHECK(ndims == 3 && shape[0] == 1 && shape[1] == h && shape[2] == w && c == 1);
  /* The model's own preprocessing: (pixel - mean) * norm. */
  const float mean = strtof(kestrel_net_metadata(net, "mean"), NULL);
  const float norm = strtof(kestrel_net_metadata(net, "norm"), NULL);
  float* input = (float*)malloc(sizeof(float) * (size_t)(w * h));
  for (int i = 0; i < w * h; ++i) input[i] = ((float)pixels[i] - mean) * norm;
  kestrel_image_free(pixels);
  kestrel_status s = kestrel_extractor_input(ex, "data", input, ndims, shape);
  free(input); /* the API copied it */
  if (s != KESTREL_OK) {
    fprintf(stderr, "input: %s\n", kestrel_extractor_last_error(ex));
    return -1;
  }
  kestrel_tensor prob;
  if (kestrel_extractor_extract(ex, "prob", &prob) != KESTREL_OK) {
    fprintf(stderr, "extract: %s\n", kestrel_extractor_last_error(ex));
    return -1;
  }
  CHECK(prob.count == 10);
  int best = 0;
  *prob_sum = 0;
  for (size_t i = 0; i < prob.count; ++i) {
    *prob_sum += prob.data[i];
    if (prob.data[i] > prob.data[best]) best = (int)i;
  }
  printf("  %-18s class %d (%.4f)\n", sample, best, prob.data[best]);
  return best;
}

static void test_classify(const char* dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/fashion_onnx.kst", dir);
  kestrel_net* net = kestrel_net_create();
  CHECK(net != NULL);
  CHECK(kestrel_net_set_num_threads(net, 2) == KESTREL_OK);
  CHECK(kestrel_net_load_file(net, path) == KESTREL_OK);
  CHECK(strcmp(kestrel_net_last_error(net), "") == 0);
  CHECK(strcmp(kestrel_net_metadata(net, "task"), "classify") == 0);
  CHECK(strcmp(kestrel_net_metadata(net, "no such key"), "") == 0);
  kestrel_extractor* ex = kestrel_extractor_create(net);
  CHECK(ex != NULL);
  printf("file model:\n");
  for (size_t i = 0; i < sizeof kSamples / sizeof kSamples[0]; ++i) {
    float sum = 0;
    CHECK(classify(net, ex, dir, kSamples[i], &sum) == kExpected[i]);
    CHECK(fabsf(sum - 1.0f) < 1e-4f);
  }
  /* Pinned to CPU 0, which every machine has: same answers. */
  const int cpu0 = 0;
  CHECK(kestrel_extractor_set_cpus(ex, &cpu0, 1) == KESTREL_OK);
  printf("pinned to CPU 0:\n");
  float sum = 0;
  CHECK(classify(net, ex, dir, kSamples[0], &sum) == kExpected[0]);
  const int offline_cpu = 1000, bad_cpu = 100000;
  CHECK(kestrel_extractor_set_cpus(ex, &offline_cpu, 1) == KESTREL_INVALID_ARGUMENT);
  printf("  offline CPU: %s\n", kestrel_extractor_last_error(ex));
  CHECK(strstr(kestrel_extractor_last_error(ex), "CPU 1000 is not online") != NULL);
  CHECK(kestrel_extractor_set_cpus(ex, &bad_cpu, 1) == KESTREL_INVALID_ARGUMENT);
  printf("  bad CPU id: %s\n", kestrel_extractor_last_error(ex));
  CHECK(strstr(kestrel_extractor_last_error(ex), "100000") != NULL);
  CHECK(kestrel_extractor_set_cpus(ex, NULL, 0) == KESTREL_OK);
  /* The extractor outlives its net. */
  kestrel_net_destroy(net);
  float zeros[28 * 28] = {0};
  const int shape[3] = {1, 28, 28};
  kestrel_tensor prob;
  CHECK(kestrel_extractor_input(ex, "data", zeros, 3, shape) == KESTREL_OK);
  CHECK(kestrel_extractor_extract(ex, "prob", &prob) == KESTREL_OK && prob.count == 10);
  kestrel_extractor_destroy(ex);
}

static void test_memory(const char* dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/fashion_onnx.kst", dir);
  size_t size = 0;
  unsigned char* bytes = read_all(path, &size);
  CHECK(bytes != NULL);
  /* The model at an address 4 bytes past a multiple of 64, so that the load must copy
   * it and the buffer may be freed right away. (A plain malloc'ed buffer is 64-byte
   * aligned by chance often enough, and then used in place: freeing it would be a bug
   * of this test.) */
  unsigned char* skewed = (unsigned char*)malloc(size + 68);
  CHECK(skewed != NULL);
  if (bytes == NULL || skewed == NULL) {
    free(bytes);
    free(skewed);
    return;
  }
  unsigned char* at = skewed + (64 - (uintptr_t)skewed % 64) % 64 + 4;
  memcpy(at, bytes, size);
  free(bytes);
  kestrel_net* net = kestrel_net_create();
  CHECK(kestrel_net_load_memory(net, at, size) == KESTREL_OK);
  memset(skewed, 0, size + 68);
  free(skewed);
  kestrel_extractor* ex = kestrel_extractor_create(net);
  printf("memory model:\n");
  float sum = 0;
  CHECK(classify(net, ex, dir, kSamples[2], &sum) == kExpected[2]);
  kestrel_extractor_destroy(ex);
  kestrel_net_destroy(net);
}

static void test_errors(const char* dir) {
  printf("errors:\n");
  kestrel_net* net = kestrel_net_create();
  CHECK(kestrel_net_load_file(net, "/nonexistent/model.kst") == KESTREL_NOT_FOUND);
  printf("  missing file: %s\n", kestrel_net_last_error(net));
  CHECK(strstr(kestrel_net_last_error(net), "/nonexistent/model.kst") != NULL);

  static const unsigned char garbage[256] = {1, 2, 3, 4};
  CHECK(kestrel_net_load_memory(net, garbage, sizeof garbage) == KESTREL_CORRUPT_MODEL);
  printf("  corrupt bytes: %s\n", kestrel_net_last_error(net));
  CHECK(kestrel_net_load_file(net, NULL) == KESTREL_INVALID_ARGUMENT);

  char path[1024];
  snprintf(path, sizeof path, "%s/fashion_onnx.kst", dir);
  CHECK(kestrel_net_load_file(net, path) == KESTREL_OK);
  CHECK(strcmp(kestrel_net_last_error(net), "") == 0);
  int ndims = 0, shape[4];
  CHECK(kestrel_net_input_shape(net, "nope", &ndims, shape) == KESTREL_INVALID_ARGUMENT);

  kestrel_extractor* ex = kestrel_extractor_create(net);
  float input[28 * 28] = {0};
  const int good[3] = {1, 28, 28}, wrong[3] = {1, 28, 27};
  CHECK(kestrel_extractor_input(ex, "images", input, 3, good) == KESTREL_INVALID_ARGUMENT);
  printf("  wrong input name: %s\n", kestrel_extractor_last_error(ex));
  CHECK(strstr(kestrel_extractor_last_error(ex), "images") != NULL);
  CHECK(kestrel_extractor_input(ex, "data", input, 3, wrong) == KESTREL_INVALID_ARGUMENT);
  printf("  wrong shape: %s\n", kestrel_extractor_last_error(ex));
  CHECK(kestrel_extractor_input(ex, "data", input, 7, good) == KESTREL_INVALID_ARGUMENT);
  CHECK(kestrel_extractor_input(ex, "data", NULL, 3, good) == KESTREL_INVALID_ARGUMENT);
  kestrel_tensor out;
  CHECK(kestrel_extractor_input(ex, "data", input, 3, good) == KESTREL_OK);
  CHECK(kestrel_extractor_extract(ex, "probability", &out) == KESTREL_INVALID_ARGUMENT);
  printf("  wrong output name: %s\n", kestrel_extractor_last_error(ex));
  /* Still usable after the errors. */
  CHECK(kestrel_extractor_extract(ex, "prob", &out) == KESTREL_OK && out.count == 10);
  CHECK(strcmp(kestrel_extractor_last_error(ex), "") == 0);

  CHECK(kestrel_extractor_set_num_threads(ex, -1) == KESTREL_INVALID_ARGUMENT);
  CHECK(kestrel_extractor_input(NULL, "data", input, 3, good) == KESTREL_INVALID_ARGUMENT);
  CHECK(kestrel_extractor_create(NULL) == NULL);
  CHECK(strcmp(kestrel_status_name(KESTREL_NOT_FOUND), "not found") == 0);
  CHECK(strcmp(kestrel_status_name(99), "unknown error") == 0);

  unsigned char* pixels = (unsigned char*)1;
  int w, h, c;
  char err[64];
  CHECK(kestrel_image_load("/nonexistent.png", &pixels, &w, &h, &c, err, sizeof err) == KESTREL_NOT_FOUND);
  CHECK(pixels == NULL && strlen(err) > 0 && strlen(err) < sizeof err);
  kestrel_extractor_destroy(ex);
  kestrel_net_destroy(net);
  kestrel_net_destroy(NULL);
  kestrel_extractor_destroy(NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_c_api MODELS_DIR\n");
    return 2;
  }
  test_classify(argv[1]);
  test_memory(argv[1]);
  test_errors(argv[1]);
  if (g_failures != 0) {
    printf("c_api: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("c_api: all checks passed\n");
  return 0;
}
