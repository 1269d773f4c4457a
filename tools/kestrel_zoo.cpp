// kestrel-zoo: writes the model zoo's seeded networks as .kst files.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kestrel/model_zoo.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: kestrel-zoo mobilenet_v1|mobilenet_ssd OUT.kst [--seed N] [--size S]\n"
                 "Writes a network with seeded random weights and the layer shapes of the Caffe\n"
                 "deploy definition.\n");
    return 2;
  }
  const std::string which = argv[1];
  kestrel::ZooOptions o;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed") {
      o.seed = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    } else if (flag == "--size") {
      o.input_size = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "kestrel-zoo: unknown option '%s'\n", flag.c_str());
      return 2;
    }
  }
  kestrel::ModelBuilder b;
  if (which == "mobilenet_v1") {
    b = kestrel::mobilenet_v1(o);
  } else if (which == "mobilenet_ssd") {
    b = kestrel::mobilenet_ssd(o);
  } else {
    std::fprintf(stderr, "kestrel-zoo: unknown network '%s' (mobilenet_v1, mobilenet_ssd)\n", which.c_str());
    return 2;
  }
  const kestrel::Status s = b.save(argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "kestrel-zoo: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("wrote %s (%s)\n", argv[2], which.c_str());
  return 0;
}
