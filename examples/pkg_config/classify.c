/* The smallest consumer of an installed Kestrel, in C99 through pkg-config:
 *   cc -std=c99 classify.c $(pkg-config --cflags --libs kestrel) -o classify
 *   ./classify MODEL.kst IMAGE      (a gray classifier such as models/fashion)
 * Prints the arg max class and its score, from the model's own metadata for the
 * preprocessing ((pixel - mean) * norm). */
#include <stdio.h>
#include <stdlib.h>

#include "kestrel/c_api.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: classify MODEL.kst IMAGE\n");
    return 2;
  }
  kestrel_net* net = kestrel_net_create();
  if (net == NULL || kestrel_net_load_file(net, argv[1]) != KESTREL_OK) {
    fprintf(stderr, "classify: %s\n", kestrel_net_last_error(net));
    return 1;
  }
  int ndims = 0, shape[4];
  unsigned char* pixels = NULL;
  int w, h, c;
  char err[256];
  if (kestrel_net_input_shape(net, "data", &ndims, shape) != KESTREL_OK || ndims != 3 || shape[0] != 1) {
    fprintf(stderr, "classify: want a model with a gray input 'data'\n");
    return 1;
  }
  if (kestrel_image_load(argv[2], &pixels, &w, &h, &c, err, sizeof err) != KESTREL_OK) {
    fprintf(stderr, "classify: %s\n", err);
    return 1;
  }
  if (c != 1 || w != shape[2] || h != shape[1]) {
    fprintf(stderr, "classify: want a %dx%d gray image, got %dx%d with %d channels\n", shape[2], shape[1], w, h, c);
    return 1;
  }
  const float mean = strtof(kestrel_net_metadata(net, "mean"), NULL);
  const float norm = strtof(kestrel_net_metadata(net, "norm"), NULL);
  float* input = malloc(sizeof(float) * (size_t)w * (size_t)h);
  for (int i = 0; i < w * h; ++i) input[i] = ((float)pixels[i] - mean) * norm;
  kestrel_image_free(pixels);

  kestrel_extractor* ex = kestrel_extractor_create(net);
  kestrel_tensor prob;
  if (kestrel_extractor_input(ex, "data", input, ndims, shape) != KESTREL_OK ||
      kestrel_extractor_extract(ex, "prob", &prob) != KESTREL_OK) {
    fprintf(stderr, "classify: %s\n", kestrel_extractor_last_error(ex));
    return 1;
  }
  size_t best = 0;
  for (size_t i = 1; i < prob.count; ++i) best = prob.data[i] > prob.data[best] ? i : best;
  printf("%s: class %zu (%.4f)\n", argv[2], best, prob.data[best]);
  free(input);
  kestrel_extractor_destroy(ex);
  kestrel_net_destroy(net);
  return 0;
}
